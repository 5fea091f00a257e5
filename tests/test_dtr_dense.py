"""Dense DTR sweeps (the default) and budget-interval sharing.

* the default sweep samples every resolution step, so it finds a hole that lies between
  two coarse grid points of the same outcome, which a coarse-only sweep (``step``) misses;
* a hole of one sample is reported (after its repeats);
* every budget inside a replay's equivalence interval (``Runtime.eq_lo`` .. ``eq_hi``)
  runs the identical replay, so samples taken from such an interval (``share``) equal
  independent replays: outcome, clock, peak, evictions.
"""
from __future__ import annotations

import random

import pytest

from memsched.instances.dtr_random import random_trace
from memsched.solvers.dtr.replay import replay, trace_baseline
from memsched.solvers.dtr.runtime import Runtime
from memsched.solvers.dtr.sweep import _dense_levels, sweep


def key(r):
    return (r.outcome, r.clock, r.peak, r.evictions)


# seed 20 (60 calls), heuristic dtr: infeasible at 0.580..0.584 while 0.55 and 0.60 are
# both feasible (found by replaying every budget of the trace; checked below, not assumed)
HOLE_TRACE = dict(seed=20, n_calls=60)
KW = dict(lo=0.4, hi=1.0, resolution=0.002, repeats=2, run_timeout=None)


def test_dense_default_finds_a_hole_between_equal_coarse_points():
    tr = random_trace(**HOLE_TRACE)
    # the ground truth, from independent replays
    assert replay(tr, 0.55).outcome == "ok" and replay(tr, 0.60).outcome == "ok"
    assert replay(tr, 0.582).outcome in ("oom", "remat_exceeded")
    dense = sweep(tr, "dtr", **KW)
    coarse = sweep(tr, "dtr", step=0.05, **KW)
    n = round((1.0 - 0.4) / 0.002) + 1
    assert len(dense.points) == n  # every resolution step
    assert dense.params["dense"] and dense.params["sampling"].startswith(f"dense: {n} of {n}")
    assert any(h.first <= 0.582 <= h.last and h.feasible_below >= 0.55 and h.feasible_above <= 0.60
               for h in dense.holes)
    # the coarse look sees ok at 0.55 and 0.60 and never samples in between
    assert not any(h.first <= 0.582 <= h.last for h in coarse.holes)
    assert coarse.params["sampling"].startswith("coarse step 0.05")
    assert len(coarse.points) < n
    # every dense sample is its own replay; hole samples ran `repeats` times
    for p in dense.points:
        assert (p.outcome, p.clock, p.peak, p.evictions) == key(replay(tr, p.ratio)), p
    for h in dense.holes:
        for p in dense.points:
            if h.first <= p.ratio <= h.last:
                assert p.runs == 2


def test_one_sample_hole_is_reported():
    # seed 10 (60 calls), dtr: 0.598 alone is infeasible between feasible 0.596 and 0.600
    tr = random_trace(10, n_calls=60)
    assert replay(tr, 0.598).outcome in ("oom", "remat_exceeded")
    assert replay(tr, 0.596).outcome == "ok" and replay(tr, 0.600).outcome == "ok"
    res = sweep(tr, "dtr", lo=0.59, hi=0.61, resolution=0.002, repeats=3, run_timeout=None)
    one = [h for h in res.holes if h.first == h.last == 0.598]
    assert one and (one[0].feasible_below, one[0].feasible_above) == (0.596, 0.6)
    assert next(p for p in res.points if p.ratio == 0.598).runs == 3


def test_dense_levels_cover_the_range_once():
    for klo, khi, kstep in [(1000, 10000, 100), (3, 17, 4), (5, 5, 1), (0, 99, 7)]:
        grid = set(range(klo, khi + 1, kstep)) | {khi}
        seen = list(grid)
        for _s, lvl in _dense_levels(klo, khi, kstep):
            seen += lvl
        assert sorted(seen) == list(range(klo, khi + 1))


@pytest.mark.parametrize("h", ["dtr", "dtr-eqclass", "lru", "msps", "size"])
def test_budget_interval_runs_are_identical(h):
    """Random traces, random budgets: every budget of a replay's equivalence interval
    gives the identical replay (and the interval is the same from inside it)."""
    rng = random.Random(7)
    for seed in range(6):
        tr = random_trace(seed, n_calls=40)
        base = trace_baseline(tr)
        lim = base["baseline_compute"] * 1.0
        for _ in range(6):
            b = rng.randint(base["baseline_memory"] // 4, base["baseline_memory"])
            rt = Runtime(tr, b, h, remat_limit=lim)
            out = rt.run()
            lo, hi = rt.eq_lo, rt.eq_hi
            assert lo <= b < hi
            top = min(hi - 1, b + 3 * (b - lo) + 5)
            for b2 in {lo, (lo + b) // 2, b, top, rng.randint(lo, top)}:
                r2 = Runtime(tr, b2, h, remat_limit=lim)
                o2 = r2.run()
                assert (o2, r2.clock, r2.peak, r2.evictions) == (out, rt.clock, rt.peak, rt.evictions), (seed, b, b2)
                assert (r2.eq_lo, r2.eq_hi) == (lo, hi)


@pytest.mark.parametrize("h", ["dtr", "dtr-eqclass", "lru"])
def test_shared_sweep_equals_independent_replays(h):
    rng = random.Random(11)
    for seed in rng.sample(range(1000), 3):
        tr = random_trace(seed, n_calls=50)
        res = sweep(tr, h, lo=0.3, hi=1.0, resolution=0.001, repeats=1, run_timeout=None)
        assert res.derived > 0 and res.replays + res.derived == len(res.points)
        # every point against the sweep that replays every budget ...
        off = sweep(tr, h, lo=0.3, hi=1.0, resolution=0.001, repeats=1, run_timeout=None, share=False)
        assert off.derived == 0 and off.replays == len(off.points)
        assert [(p.ratio, p.outcome, p.clock, p.peak, p.evictions) for p in off.points] == \
            [(p.ratio, p.outcome, p.clock, p.peak, p.evictions) for p in res.points], seed
        # ... and 60 of them (the same ones each run) against replay() itself
        for p in random.Random(seed).sample(res.points, min(60, len(res.points))):
            assert (p.outcome, p.clock, p.peak, p.evictions) == key(replay(tr, p.ratio, heuristic=h)), (seed, p)


def test_explain_shortfall_and_single_pin_search():
    """The hole of HOLE_TRACE (0.582 thrashes, 0.578 is feasible): the shortfall at the
    first divergence is recomputed from the recorded runs, and every rescue of the
    single-pin search (and a non-rescue) is checked by an independent pinned replay."""
    from memsched.solvers.dtr.explain import explain, format_explanation

    tr = random_trace(**HOLE_TRACE)
    d = explain(tr, 0.582, 0.578)
    dv = d["first_divergence"]
    bf, bg = d["failing"]["budget"], d["feasible"]["budget"]
    shorts = [x for x in (dv["failing_shortfall"], dv["feasible_shortfall"]) if x]
    assert shorts
    for sh in shorts:
        assert sh["short_bytes"] == sh["memory_before"] + sh["need_bytes"] - sh["budget"] > 0
        other = bg if sh["budget"] == bf else bf
        assert sh["other_budget_room"] == other - sh["memory_before"] - sh["need_bytes"]
    # the smaller budget is short by at most the budget difference where the larger one fits
    sg = dv["feasible_shortfall"]
    assert sg is not None and 0 < sg["short_bytes"] <= bf - bg and sg["other_budget_room"] >= 0
    ps = d["pin_search"]
    assert ps["tried"] == ps["candidates"] > 0 and ps["stopped"] is None
    rf = replay(tr, 0.582, record=True).runtime
    ev = [e[1] for e in rf.events if e[0] == "evict"][dv["eviction_index"]:]
    assert [r["tensor_id"] for r in ps["tries"]] == [rf.st_tensors[s][0] for s in dict.fromkeys(ev)]
    assert ps["rescues"] and ps["smallest"] == min(ps["rescues"], key=lambda r: (r["bytes"], r["tensor_id"]))
    for r in ps["rescues"][:5]:
        assert replay(tr, 0.582, pin=[r["tensor_id"]]).outcome == "ok"
    fails = [r for r in ps["tries"] if r["outcome"] != "ok"]
    for r in fails[:3]:
        assert replay(tr, 0.582, pin=[r["tensor_id"]]).outcome == r["outcome"] != "ok"
    text = format_explanation(d)
    assert "smallest rescue: pin" in text and "B short placing" in text


def test_dense_results_file_resume_and_report(tmp_path):
    """Derived samples are rows of the results file (status 'derived', with the interval);
    a resumed sweep replays nothing and reports the same map; the report counts only real
    replays."""
    from memsched.solvers.dtr.sweep import report_rows, summarize_rows
    from memsched.solvers.pool.store import read_rows

    tr = random_trace(**HOLE_TRACE)
    out = tmp_path / "r.jsonl"
    kw = dict(lo=0.5, hi=0.7, resolution=0.002, repeats=2, run_timeout=None)
    a = sweep(tr, "dtr", results=out, **kw)
    rows = read_rows(out)
    der = [r for r in rows if r.get("status") == "derived"]
    assert len(rows) == a.replays + a.derived + a.repeat_derived and len(der) == a.derived + a.repeat_derived > 0
    for r in der:
        lo, hi = r["derived_from"]
        assert lo <= r["budget"] and (hi is None or r["budget"] <= hi)
    b = sweep(tr, "dtr", results=out, resume=True, **kw)
    assert b.replays == 0 and [(p.ratio, p.outcome, p.clock, p.runs) for p in b.points] == \
           [(p.ratio, p.outcome, p.clock, p.runs) for p in a.points]
    s = summarize_rows(rows)
    assert len(s) == 1 and s[0]["replays"] == a.replays and s[0]["samples"] == len(a.points)
    assert "hole" in report_rows(rows)


@pytest.mark.parametrize("seed,h", [(8, "dtr"), (32, "dtr-eqclass"), (37, "dtr")])
def test_repeats_of_a_hole_interior_come_from_replays_of_their_own_round(tmp_path, seed, h):
    """Determinism repeats: every sample next to an outcome change is replayed in every round;
    a hole's interior sample may take a round's repeat only from a replay of that same round
    (never from the first sampling or an earlier round), and every sample still equals its
    independent replay."""
    from memsched.solvers.pool.store import read_rows

    tr = random_trace(seed, n_calls=60)
    out = tmp_path / "r.jsonl"
    res = sweep(tr, h, lo=0.3, hi=1.0, resolution=0.002, repeats=3, run_timeout=None, results=out)
    assert res.repeat_derived > 0
    rows = read_rows(out)
    n_of = lambda r: int(r["key"].split(":")[-2])  # noqa: E731  (the run's index at its budget)
    replayed = {}
    for r in rows:
        if r.get("status") != "derived" and r.get("equiv"):
            replayed.setdefault(n_of(r), set()).add(tuple(r["equiv"]))
    ks = [p.ratio for p in res.points]
    edge = {x for a, b, pa, pb in zip(ks, ks[1:], res.points, res.points[1:]) if pa.outcome != pb.outcome
            for x in (a, b)}
    for r in rows:
        n = n_of(r)
        if n == 0:
            continue
        assert r["ratio"] not in edge or r.get("status") != "derived", r  # next to a change: replayed
        if r.get("status") == "derived":
            assert tuple(r["derived_from"]) in replayed.get(n, set()), r  # from this round's replays
    for p in res.points:
        assert p.outcome != "nondeterministic"
        assert (p.outcome, p.clock, p.peak, p.evictions) == key(replay(tr, p.ratio, heuristic=h)), p
    for hh in res.holes:
        assert all(p.runs == 3 for p in res.points if hh.first <= p.ratio <= hh.last)
