"""The cross-check: zero disagreements on small shipped instances, and every kind of
injected disagreement is caught with the right message."""
from __future__ import annotations

import copy
import json

import pytest

import memsched.cli.main
from memsched.formulations import Schedule
from memsched.instances import SHIPPED, load_graph
from memsched.instances.generators import unet
from memsched.solvers import crosscheck as xc


@pytest.fixture(scope="module")
def small():
    g = unet(2, 1, 64, halving=False)
    rep = xc.crosscheck(g, budget=0.9, time_limit=5.0)
    return g, rep


def test_small_unet_agrees(small):
    g, rep = small
    assert rep.disagreements == []
    methods = {r.method for r in rep.rows}
    assert {"given", "best", "exact", "remat-cp", "dtr"} <= methods
    for r in rep.rows:
        if r.schedule is not None:
            assert r.realized, f"{r.method} was not run"
            for where, m in r.realized.items():
                assert m["realized_peak"] == r.peak, (r.method, where)


def _fresh(rep):
    return [copy.copy(r) for r in rep.rows]


def test_wrong_bound_is_caught(small):
    g, rep = small
    best = min(r.peak for r in rep.rows if r.problem == "order")
    dis = xc.find_disagreements(g, _fresh(rep), budget=rep.budget, order_lower_bound=best + 1)
    assert any("lower bound" in d and "above a feasible peak" in d for d in dis), dis


def test_tampered_schedule_is_caught(small):
    g, rep = small
    rows = _fresh(rep)
    r = next(r for r in rows if r.method == "dfs")
    # replace the schedule by the reverse-ordered-free version of another order: claims stay
    other = next(x for x in rows if x.problem == "remat" and x.schedule is not None and x.compute > r.compute)
    r.schedule = other.schedule
    dis = xc.find_disagreements(g, rows, budget=rep.budget, order_lower_bound=rep.order_lower_bound)
    assert any(d.startswith("dfs: claims") for d in dis), dis
    assert any("recomputes" in d for d in dis), dis


def test_invalid_schedule_is_caught(small):
    g, rep = small
    rows = _fresh(rep)
    r = next(r for r in rows if r.method == "given")
    r.schedule = Schedule(tuple(reversed(r.schedule.events)))
    dis = xc.find_disagreements(g, rows, budget=rep.budget, order_lower_bound=rep.order_lower_bound)
    assert any(d.startswith("given: its schedule is invalid") for d in dis), dis


def test_tampered_output_is_caught(small):
    g, rep = small
    rows = _fresh(rep)
    r = next(r for r in rows if r.method == "remat-cp")
    r.realized = {k: dict(v, output_hash="0" * 64) for k, v in r.realized.items()}
    dis = xc.find_disagreements(g, rows, budget=rep.budget, order_lower_bound=rep.order_lower_bound)
    assert any(d.startswith("remat-cp: output hash on numpy:cpu differs") for d in dis), dis


def test_realized_not_modeled_is_caught(small):
    g, rep = small
    rows = _fresh(rep)
    r = next(r for r in rows if r.method == "exact")
    r.realized = {k: dict(v, realized_peak=v["realized_peak"] + 8) for k, v in r.realized.items()}
    dis = xc.find_disagreements(g, rows, budget=rep.budget, order_lower_bound=rep.order_lower_bound)
    assert any(d.startswith("exact: realized peak") and "!= modeled" in d for d in dis), dis


def test_optimal_beaten_is_caught():
    from memsched.solvers.ordering.heuristics import HEURISTICS

    g = load_graph(SHIPPED / "tree_15.json")
    given = Schedule.from_order(g, g.given_order())
    liu = Schedule.from_order(g, HEURISTICS["liu"](g))
    rows = [xc.Row("exact", "order", "optimal", schedule=given),
            xc.Row("liu", "order", "feasible", schedule=liu)]
    dis = xc.find_disagreements(g, rows, budget=None, order_lower_bound=None)
    assert rows[1].peak < rows[0].peak
    assert any(d.startswith("exact: claims optimal peak") and "liu reaches" in d for d in dis), dis
    rows = [xc.Row("remat-cp", "remat", "infeasible"), xc.Row("liu", "remat", "feasible", schedule=liu)]
    dis = xc.find_disagreements(g, rows, budget=10**9, order_lower_bound=None)
    assert any(d.startswith("remat-cp: claims infeasible") for d in dis), dis


def test_cli_exits_1_on_tampered_output(monkeypatch, capsys, tmp_path):
    import memsched.solvers.executors as ex

    real = ex.run_schedules

    def tampered(graph, schedules, **kw):
        out = real(graph, schedules, **kw)
        out[2] = dict(out[2], output_hash="f" * 64)  # the third schedule's program "computes" other outputs
        return out

    monkeypatch.setattr(ex, "run_schedules", tampered)
    path = tmp_path / "g.json"
    from memsched.instances.formats import save_graph

    save_graph(unet(2, 1, 64, halving=False), path)
    rc = memsched.cli.main.main(["crosscheck", str(path), "--budget", "0.9", "--time-limit", "5", "--json"])
    cap = capsys.readouterr()
    assert rc == 1
    out = json.loads(cap.out)
    assert out["verdict"] == "DISAGREE"
    assert "output hash" in cap.err and len(cap.err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["chain_12.json", "tree_15.json"])
def test_shipped_instances_agree(name):
    g = load_graph(SHIPPED / name)
    rep = xc.crosscheck(g, time_limit=5.0, backends=[("numpy", "cpu")])
    assert rep.disagreements == [], rep.disagreements


def test_bad_graph_exits_2(tmp_path, capsys):
    p = tmp_path / "bad.json"
    p.write_text('{"nodes": [}')
    assert memsched.cli.main.main(["crosscheck", str(p)]) == 2
    assert "bad.json:1:" in capsys.readouterr().err
