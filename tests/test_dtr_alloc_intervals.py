"""Budget-equivalence intervals of address-aware replays (docs/dtr.md, "Allocators").

An address-aware run (``AllocRuntime``: first-fit, best-fit, caching; heuristics dtr,
dtr-eqclass, coop) records every comparison of a value with its budget: the byte tests of
the base runtime, the arena's top-block fit and best-fit tests, the caching allocator's
segment reserve tests, coop's window fits and its oom / pressure tests. Every budget in
``[eq_lo, eq_hi)`` then makes the identical replay. Checked here on random traces against
independent replays (outcome, clock, peak, evictions, every placement, the failure), the
interval's ends against the runs just outside it, and shared dense sweeps against sweeps
that replay every sample.
"""
from __future__ import annotations

import json
import random

import pytest

from memsched.instances.dtr_random import random_trace, random_trace_lines
from memsched.instances.dtr_trace import parse_trace_lines
from memsched.solvers.dtr.allocator import AllocRuntime, Arena, replay_alloc
from memsched.solvers.dtr.replay import trace_baseline
from memsched.solvers.dtr.sweep import sweep

MODES = [("first-fit", "dtr"), ("first-fit", "dtr-eqclass"), ("first-fit", "coop"),
         ("best-fit", "dtr"), ("best-fit", "dtr-eqclass"), ("best-fit", "coop"),
         ("caching", "dtr"), ("caching", "dtr-eqclass")]


def scaled_trace(seed: int, unit: int, **params):
    """Random trace ``seed`` with every MEMORY multiplied by ``unit``: byte-sized tensors
    would all round to 512 B and fit one 2 MiB segment under the caching rules; scaled,
    they span the small pool, 20 MiB large segments and segments of their own."""
    out = []
    for ln in random_trace_lines(seed, **params):
        d = json.loads(ln)
        if d["INSTRUCTION"] == "MEMORY":
            d["MEMORY"] = str(int(d["MEMORY"]) * unit)
        out.append(json.dumps(d))
    return parse_trace_lines(out, f"scaled-{seed}.log")


def traces(alloc: str, h: str = "dtr"):
    """A few random traces per mode (default family, and few distinct sizes and costs: ties);
    for coop also traces where most operators have two results (coop's pressure test for a
    second output after a window was cleared for the first one is rare otherwise)."""
    if alloc == "caching":
        return [scaled_trace(s, 150_001 + 977 * s, n_calls=36, small_sizes=s % 3 == 1) for s in range(5)]
    out = [random_trace(s, n_calls=36, small_sizes=s % 3 == 1) for s in range(5)]
    if h == "coop":
        out += [random_trace(s, n_calls=36, multi_p=0.8) for s in range(50, 62)]
    return out


class Logged(AllocRuntime):
    """An AllocRuntime that logs every placement and every budget test it records."""

    def __init__(self, *a, **kw):
        self.placed: list = []
        self.tested: list = []
        super().__init__(*a, **kw)

    def _place(self, o, op):
        got = super()._place(o, op)
        self.placed.append((self.pos, op, tuple(got)))
        return got

    def _test(self, v):
        self.tested.append(v)
        return super()._test(v)


def run(tr, budget, h, alloc, lim):
    rt = Logged(tr, budget, h, allocator=alloc, remat_limit=lim)
    out = rt.run()
    f = rt.failure or {}
    used = (sorted(rt.alloc.used.items()) if isinstance(rt.alloc, Arena)
            else sorted((sid, tuple(sorted(seg["used"].items()))) for sid, seg in rt.alloc.segments.items()))
    sig = (out, rt.clock, rt.peak, rt.evictions, rt.eager_evictions, rt.remat_count, rt.frag_evictions, rt.windows,
           tuple(rt.placed), sorted(rt.st_block.items()), used,
           f.get("kind"), f.get("op"), f.get("requested"), f.get("pos"),
           tuple(e[:-2] + e[-1:] for e in f.get("layout", ()) if e[-2] == "used"))
    return sig, rt


@pytest.mark.parametrize("alloc,h", MODES)
def test_every_budget_of_the_interval_runs_the_identical_replay(alloc, h):
    """At eq_lo, at eq_hi - 1 and at random budgets inside: the identical replay and the
    same interval. Just outside (eq_lo - 1, eq_hi) the interval changes, so both ends are
    values the run really tested. Some intervals must end at an allocator test."""
    rng = random.Random(MODES.index((alloc, h)))
    wide = by_alloc = frag = 0
    for tr in traces(alloc, h):
        base = trace_baseline(tr)
        lim = base["baseline_compute"] * 1.0
        bm = base["baseline_memory"]
        for _ in range(5):
            b = rng.randint(bm // 5, bm * 5 // 4)
            sig, rt = run(tr, b, h, alloc, lim)
            lo, hi = rt.eq_lo, rt.eq_hi
            assert lo <= b < hi
            frag += sig[0] == "fragmentation"
            by_alloc += hi in rt.tested or lo in rt.tested
            inside = {lo, b}
            if hi != float("inf"):
                inside.add(hi - 1)
                wide += hi - lo > 1
                inside |= {rng.randint(lo, hi - 1) for _ in range(2)}
            for b2 in inside:
                sig2, rt2 = run(tr, b2, h, alloc, lim)
                assert sig2 == sig, (tr.path, alloc, h, b, b2, lo, hi)
                assert (rt2.eq_lo, rt2.eq_hi) == (lo, hi)
            if hi != float("inf"):  # eq_hi is a tested value: at eq_hi that test flips
                _, r3 = run(tr, int(hi), h, alloc, lim)
                assert r3.eq_lo >= hi
            if lo > 0:
                _, r4 = run(tr, lo - 1, h, alloc, lim)
                assert r4.eq_hi <= lo
    assert wide > 0 and by_alloc > 0, (wide, by_alloc)
    if h != "dtr-eqclass" or alloc != "caching":
        assert frag > 0


@pytest.mark.parametrize("alloc,h", [("first-fit", "dtr"), ("best-fit", "coop"), ("caching", "dtr")])
def test_shared_allocator_sweep_equals_independent_replays(alloc, h):
    """A dense sweep with sharing equals the sweep that replays every sample, sample by
    sample; 25 samples also against replay_alloc itself."""
    for tr in traces(alloc)[:2]:
        kw = dict(lo=0.3, hi=1.0, resolution=0.002, repeats=1, run_timeout=None, allocator=alloc)
        res = sweep(tr, h, **kw)
        off = sweep(tr, h, share=False, **kw)
        assert res.derived > 0 and res.replays + res.derived == len(res.points)
        assert off.derived == 0
        pts = [(p.ratio, p.outcome, p.clock, p.peak, p.evictions) for p in res.points]
        assert pts == [(p.ratio, p.outcome, p.clock, p.peak, p.evictions) for p in off.points], tr.path
        for p in random.Random(0).sample(res.points, 25):
            r = replay_alloc(tr, p.ratio, heuristic=h, allocator=alloc)
            assert (p.outcome, p.clock, p.peak, p.evictions) == (r.outcome, r.clock, r.peak, r.evictions)
