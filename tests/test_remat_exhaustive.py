"""The exhaustive search for small graphs (solvers/remat/exhaustive.py; docs/remat.md,
"Exhaustive search for small graphs"), against the brute-force referee (tests/referee.py).

* Its optimum (or "infeasible") is the referee's on 2,000 seeded and 100 hypothesis
  instances, free and given order, caps 0 / 1 / 2 / unbounded / per operator; its witness is
  valid, within B, in the class and within the caps.
* Stopped early (a state limit, a stop callable) its lower bound never exceeds the optimum.
* ``upto``: below the optimum it finds nothing ("none upto"), at the optimum it finds it.
* The cp driver runs it on small graphs: every claim holds for the asked problem, and the
  shipped multi_output_12 at 0.6 without a cap (CP-SAT alone: 73 / 72) ends optimal at 73.
* The peak objective: bisection on the budget (``least_peak_exact``) finds the referee's least
  peak within a compute limit, and the driver claims only that.
"""
from __future__ import annotations

import random

from hypothesis import HealthCheck, Phase, given, settings

from memsched.formulations import evaluate
from memsched.formulations.problems import first_computations_follow
from memsched.solvers.remat.exhaustive import exact_remat, least_peak_exact

from referee import RefereeLimit, Truth, check_remat_claims, least_budget, remat
from referee_strategies import random_tiny_graph, tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _caps(cap, n):
    if cap is None or isinstance(cap, list):
        return cap
    return [cap] * n


def _draw_cap(rng: random.Random, n: int):
    cap = rng.choice([0, 1, 2, None, "per-op"])
    return [rng.choice([0, 1, 2]) for _ in range(n)] if cap == "per-op" else cap


def _check_witness(g, B, cap, order, ex):
    ev = evaluate(g, ex.schedule)
    assert ev.peak <= B and abs(ev.compute - ex.compute) <= 1e-9 * max(1.0, ex.compute)
    if cap is not None:
        assert all(c <= 1 + k for c, k in zip(ev.compute_counts, _caps(cap, g.n_ops)))
    assert order == "free" or first_computations_follow(g, ex.schedule)


def _agree(g, B, cap, order):
    try:
        truth = remat(g, B, cap, order, max_states=300_000)
    except RefereeLimit:
        return None
    ex = exact_remat(g, B, _caps(cap, g.n_ops), order)
    if truth.compute is None:
        assert ex.status == "infeasible" and ex.schedule is None, (ex.status, ex.compute)
    else:
        assert ex.status == "optimal" and abs(ex.compute - truth.compute) <= 1e-9 * max(1.0, truth.compute), \
            (ex.status, ex.compute, truth.compute)
        _check_witness(g, B, cap, order, ex)
    return truth


def test_the_search_finds_the_referee_optimum_on_seeded_instances():
    """(Seen red, each at its first instance: the heuristic counting a producer once per absent
    wanted output instead of once, optimum 24 against 20.5; the closure of the operators that
    must run again following present inputs too, 10 against 9.5; a closed state dominating those
    with lower counts instead of higher, 16 against 15; the frees of a step's inputs left out,
    "infeasible" against 14.)"""
    decided = recomputing = 0
    for seed in range(2000):
        g, B = random_tiny_graph(seed, max_ops=7)
        rng = random.Random(seed)
        for order in ("free", "given"):
            cap = _draw_cap(rng, g.n_ops)
            truth = _agree(g, B, cap, order)
            decided += truth is not None
            recomputing += truth is not None and truth.compute is not None and truth.compute > g.total_cost() + 1e-9
    assert decided >= 3900 and recomputing >= 250, (decided, recomputing)


@settings(max_examples=100, **SET)
@given(inst=tiny_instances(max_ops=8))
def test_the_search_finds_the_referee_optimum(inst):
    g, B = inst
    for cap in (1, None):
        for order in ("free", "given"):
            _agree(g, B, cap, order)


def test_a_search_stopped_early_bounds_the_optimum_from_below():
    """A state limit or a stop request ends the search with a lower bound at or below the
    referee's optimum; it claims nothing else. (Seen red with the bound raised by 1: 15
    against the optimum 14 at the first instance.)"""
    stopped = raised = 0
    for seed in range(800):
        g, B = random_tiny_graph(seed, max_ops=7)
        for order in ("free", "given"):
            truth = remat(g, B, 1, order)
            if truth.compute is None:
                continue
            for limit in (1, 3, 10, 30, 100):
                ex = exact_remat(g, B, [1] * g.n_ops, order, max_states=limit)
                if ex.status == "optimal":
                    assert abs(ex.compute - truth.compute) <= 1e-9 * max(1.0, truth.compute)
                    continue
                assert ex.status == "stopped" and ex.schedule is None, ex.status
                stopped += 1
                assert ex.lower_bound <= truth.compute + 1e-9, (seed, order, limit, ex.lower_bound, truth.compute)
                raised += ex.lower_bound > g.total_cost() + 1e-9
    assert stopped >= 1000 and raised >= 100, (stopped, raised)
    g, B = random_tiny_graph(3, max_ops=7)
    ex = exact_remat(g, B, None, "free", stop=lambda: True)
    assert ex.status in ("stopped", "optimal", "infeasible") and ex.states <= 256


def test_upto_finds_the_optimum_at_it_and_nothing_below_it():
    """(Seen red with ``upto`` not pruning: "optimal" found below the optimum's compute.)"""
    checked = 0
    for seed in range(600):
        g, B = random_tiny_graph(seed, max_ops=7)
        for order in ("free", "given"):
            truth = remat(g, B, None, order)
            if truth.compute is None or truth.compute <= g.total_cost() + 1e-9:
                continue
            at = exact_remat(g, B, None, order, upto=truth.compute)
            assert at.status == "optimal" and abs(at.compute - truth.compute) <= 1e-9 * max(1.0, truth.compute)
            below = exact_remat(g, B, None, order, upto=truth.compute - 1e-3 * max(1.0, truth.compute))
            assert below.status == "none upto" and below.schedule is None
            checked += 1
    assert checked >= 100, checked


def test_the_cp_driver_decides_small_graphs_by_the_search_and_claims_only_what_holds():
    """Every instance of the sweep ends decided (optimal or infeasible) and every claim of the
    driver holds for the asked problem (the referee's judge). (Seen red with the search's
    stopped bound raised by 5 in the driver and 20 states allowed: a lower bound of 16.5 above
    the schedule's 11.5.)"""
    from memsched.solvers.remat.dispatch import solve_remat

    used = 0
    for seed in range(300):
        g, B = random_tiny_graph(seed, max_ops=7)
        truth = Truth(g, B)
        for cap in (None, 1):
            for order in ("free", "given"):
                res = solve_remat(g, B, method="cp", cap=cap, order=order, time_limit=20, workers=1)
                bad = check_remat_claims(g, B, cap, order, res, truth)
                assert not bad, (seed, cap, order, bad)
                assert res.status in ("optimal", "infeasible"), (seed, cap, order, res.status)
                used += "exhaustive" in res.params
    assert used >= 25, used


def test_the_shipped_multi_output_graph_without_a_cap_is_decided():
    """multi_output_12 at 0.6 without a cap: CP-SAT's phases end at 73 / 72 even with 60 s
    (BENCHMARKS.md, "Remat without a cap"); the search settles 73, the referee's optimum."""
    from pathlib import Path

    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.budgets import resolve_budget
    from memsched.solvers.remat.dispatch import solve_remat

    g = load_graph(Path(__file__).resolve().parents[1] / "instances" / "shipped" / "multi_output_12.json")
    res = solve_remat(g, 0.6, method="cp", cap=None, time_limit=20, workers=1)
    assert res.status == "optimal" and res.compute == 73 and res.lower_bound == 73
    assert "exhaustive" in res.params["stop"] and "capped" not in res.scope
    assert remat(g, resolve_budget(g, 0.6), None, "free").compute == 73


def test_the_bisection_finds_the_referee_least_peak_within_a_compute_limit():
    """(Seen red: a failed probe raising the low end by 2 instead of 1, least peak 18 against 17
    at seed 12; "none upto" taken as a schedule within the budget, 0 against 18 at seed 0.)"""
    from memsched.formulations import Schedule

    checked = lowered = 0
    for seed in range(250):
        g, _B = random_tiny_graph(seed, max_ops=6)
        for cap in (None, 1):
            for order in ("free", "given"):
                for eps in (0.0, 0.5):
                    limit = (1 + eps) * g.total_cost()
                    true = least_budget(g, limit, cap, order)
                    start = Schedule.from_order(g, g.given_order())
                    pk = evaluate(g, start).peak
                    ex = least_peak_exact(g, limit, _caps(cap, g.n_ops), order, hi=pk, hi_schedule=start)
                    assert ex.status == "optimal" and ex.lower_bound == true, (seed, cap, order, eps, ex.lower_bound, true)
                    ev = evaluate(g, ex.schedule)
                    assert ev.peak == true and ev.compute <= limit + 1e-9
                    _check_witness(g, pk, cap, order, ex)
                    checked += 1
                    lowered += true < pk
    assert checked == 2000 and lowered >= 300, (checked, lowered)


def test_the_cp_driver_peak_objective_claims_the_referee_least_peak():
    from memsched.solvers.remat.dispatch import solve_remat

    used = 0
    for seed in range(120):
        g, _B = random_tiny_graph(seed, max_ops=6)
        for cap in (None, 1):
            for order in ("free", "given"):
                true = least_budget(g, 1.5 * g.total_cost(), cap, order)
                res = solve_remat(g, None, method="cp", cap=cap, objective="peak", eps=0.5, order=order,
                                  time_limit=20, workers=1)
                assert res.status == "optimal" and res.peak == true and res.lower_bound == true, \
                    (seed, cap, order, res.status, res.peak, res.lower_bound, true)
                used += "least peak" in str(res.params.get("stop"))
    assert used >= 300, used


def test_the_peak_objective_on_the_shipped_multi_output_graph():
    """multi_output_12, least peak with 30 % extra compute: the CP-SAT phases needed 17.6 s
    (20 s limit); the bisection settles it at once, at the referee's least peak."""
    from pathlib import Path

    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.dispatch import solve_remat

    g = load_graph(Path(__file__).resolve().parents[1] / "instances" / "shipped" / "multi_output_12.json")
    res = solve_remat(g, None, method="cp", cap=None, objective="peak", eps=0.3, time_limit=20, workers=1)
    assert res.status == "optimal" and res.peak == 477 and "least peak" in res.params["stop"]
    assert least_budget(g, 1.3 * g.total_cost(), None, "free") == 477
