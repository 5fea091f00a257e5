"""The solver registry and the in-worker run: every failure becomes a row, never a crash."""
import pytest

from memsched.formulations import Schedule, evaluate
from memsched.instances.generators import random_dag, tree
from memsched.solvers.harness.registry import budget_bytes, check_name, resolve
from memsched.solvers.harness.worker import execute


def _run(solver, params=None, budget=None, g=None):
    g = g or random_dag(10, seed=3)
    gp = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    task = {"solver": solver, "params": params or {}, "budget": budget, "time_limit": 5.0, "seed": 0,
            "keep_schedule": True}
    return g, execute(task, g, gp, g.total_cost())


@pytest.mark.parametrize("solver, params, needle", [
    ("order", {"bogus": 1}, "bogus"),
    ("order", {"method": "no-such-method"}, "no-such-method"),
    ("copy:copy", {}, "not a SolveResult"),
    ("no_such_pkg.mod:f", {}, "no_such_pkg.mod"),
    ("debug.raise", {"message": "kaboom"}, "kaboom"),
    ("remat", {"method": "cp"}, "needs a budget"),
])
def test_failures_become_error_rows(solver, params, needle):
    _, out = _run(solver, params)
    assert out["status"] == "error" and needle in out["message"]
    assert out["wall_s"] >= 0 and "memsched_version" in out


@pytest.mark.parametrize("method", ["given", "dfs", "bfs", "lpmf", "greedy", "best"])
def test_order_rows_are_the_evaluators(method):
    g, out = _run("order", {"method": method})
    assert out["status"] in ("feasible", "optimal")
    ev = evaluate(g, Schedule.from_names(g, out["schedule"]))
    assert out["objective"] == out["peak"] == ev.peak and out["objective_kind"] == "peak"
    assert out["given_peak"] == evaluate(g, Schedule.from_order(g, g.given_order())).peak


def test_budget_bytes_rule():
    g = tree(12, seed=2)
    p = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    assert budget_bytes(g, 1.0) == p
    assert budget_bytes(g, 0.5) == p // 2  # floor: the rule of remat and the command line
    assert budget_bytes(g, 1234.9) == 1234
    from memsched.solvers.remat.budgets import resolve_budget

    for r in (0.777, 0.5, 0.31, 1.0):  # DTR and remat rows of one sweep share the budget in bytes
        assert budget_bytes(g, r) == resolve_budget(g, r)


def test_names():
    for ok in ("given", "order", "exact", "remat", "dtr", "debug.sleep", "pkg.mod:func"):
        assert check_name(ok) is None
    for bad in ("nope", "debug.nope", "pkg:", ":f"):
        assert check_name(bad)
    assert callable(resolve("given"))
