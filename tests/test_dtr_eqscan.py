"""The compiled h_DTR-EqClass scan (solvers/dtr/eqscan.py) makes the Python scan's choices.

* Before every eviction choice of random traces (aliases, cyclic aliasing, many ties from
  few distinct sizes and costs) under the five eq heuristics, the kernel's choice equals a
  plain reference written here from the definition (cost of every pool entry from the
  union-find, last storage of least cost, a cost of 0 ends the scan), and the kernel was
  actually used.
* Whole replays with and without the kernel are identical (outcome, clock, peak,
  evictions, eager evictions, recomputations, budget interval, every event), also with
  early stop and for forks resumed midway.
* Operands that a float64 division cannot take exactly make the kernel step aside.
"""
import math

import numpy as np
import pytest

from memsched.instances.dtr_random import random_trace
from memsched.solvers.dtr import eqscan
from memsched.solvers.dtr.runtime import Runtime, baseline

pytestmark = pytest.mark.skipif(not eqscan.AVAILABLE, reason="numba not importable")

EQ = ["dtr-eqclass", "ab-eq-size-stale", "ab-eq-size", "ab-eq-stale", "ab-eq"]
FAMILIES = [{}, {"small_sizes": True}, {"alias_any": True, "small_sizes": True}, {"n_calls": 40}]


def reference_choice(rt, pool, clock):
    """h_DTR-EqClass and its ablations from the definition: e = comp(s) + the values of
    the distinct classes of s's evicted neighbours; cost e / denominator (INF when the
    denominator is <= 0); the last storage of least cost in pool order; 0 stops."""
    den = rt._eqk.mode
    best, bs = math.inf, None
    for s in pool:
        roots = set()
        for n in (rt.adj_p[s] | rt.adj_c[s]) & rt.evicted:
            if n != s:
                roots.add(rt._find(rt.st_ecn[n]))
        e = rt.st_comp[s] + sum(rt.uf_val[r] for r in roots)
        if den == 3:
            c = e
        else:
            d = {0: lambda: rt.st_size[s] * (clock - rt.st_last[s]), 1: lambda: rt.st_size[s],
                 2: lambda: clock - rt.st_last[s]}[den]()
            c = e / d if d > 0 else math.inf
        if c <= best:
            best, bs = c, s
        if c == 0:
            break
    return bs


def _cases():
    for seed in range(24):
        yield seed, FAMILIES[seed % len(FAMILIES)]


def _budgets(tr):
    b = baseline(tr)
    bm = b["baseline_memory"]
    return b, [max(1, int(bm * r)) for r in (0.35, 0.5, 0.65, 0.8)]


@pytest.mark.parametrize("h", EQ)
def test_every_kernel_choice_equals_the_reference(h):
    used = 0
    for seed, fam in _cases():
        tr = random_trace(seed, **fam)
        b, budgets = _budgets(tr)
        for bud in budgets:
            rt = Runtime(tr, bud, h, remat_limit=b["baseline_compute"])
            assert rt._eqk is not None
            inner = rt._eqk.choose

            def checked(pool, clock, rt=rt, inner=inner):
                nonlocal used
                got = inner(pool, clock)
                if got is not None:
                    used += 1
                    assert got == reference_choice(rt, pool, clock), (seed, fam, bud, h)
                return got

            def pick(pool, clock, rt=rt):
                # pools of any size go to the kernel here (the runtime uses it from 8 entries)
                got = checked(pool, clock)
                return got if got is not None else rt._py_pick(pool, clock)

            rt._pick = pick
            rt.run()
    assert used > 200


def _state(rt, out):
    return (out, rt.clock, rt.peak, rt.evictions, rt.eager_evictions, rt.remat_count, rt.remat_compute,
            rt.eq_lo, rt.eq_hi, tuple(rt.events))


@pytest.mark.parametrize("h", EQ)
@pytest.mark.parametrize("early", [False, True])
def test_replays_with_and_without_the_kernel_are_identical(h, early):
    runs = 0
    for seed, fam in _cases():
        tr = random_trace(seed, n_calls=60, **{k: v for k, v in fam.items() if k != "n_calls"})
        b, budgets = _budgets(tr)
        for bud in budgets:
            res = []
            for kern in (False, True):
                rt = Runtime(tr, bud, h, remat_limit=b["baseline_compute"] * 0.5, record=True, early_stop=early,
                             eq_kernel=kern)
                assert (rt._eqk is not None) == kern
                res.append(_state(rt, rt.run()))
            assert res[0] == res[1], (seed, fam, bud, h)
            runs += 1
    assert runs == 96


@pytest.mark.parametrize("h", ["dtr-eqclass", "ab-eq"])
def test_forks_keep_their_own_kernel_state(h):
    """A fork taken midway and resumed equals a fresh replay (the mirrors are copied)."""
    for seed in range(12):
        tr = random_trace(seed, n_calls=50, small_sizes=bool(seed % 2))
        b, budgets = _budgets(tr)
        n = len(tr.schedule)
        for bud in budgets:
            fresh = Runtime(tr, bud, h, remat_limit=b["baseline_compute"])
            want = _state(fresh, fresh.run())
            base = Runtime(tr, bud, h, remat_limit=b["baseline_compute"])
            if base.resume(0, stop=n // 2) is not None:
                continue
            fk = base.fork()
            base.resume(n // 2)  # the origin runs on; the fork must not see its changes
            assert _state(fk, fk.resume(n // 2)) == want, (seed, bud, h)


def test_the_kernel_steps_aside_when_floats_could_round():
    """size x staleness above 2**53: the Python division rounds correctly, a float64
    division of rounded operands might not, so the kernel returns -2 (UNSAFE)."""
    n = 3
    keys = np.array([0, 1], dtype=np.int64)
    last = np.array([1.0, 1.0, -np.inf])
    size = np.array([2 ** 40, 1, 0], dtype=np.int64)
    comp = np.array([5, 7, 0], dtype=np.int64)
    head = np.full(n, -1, dtype=np.int64)
    e = np.zeros(4, dtype=np.int64)
    ecn = np.full(n, -1, dtype=np.int64)
    par = np.full(4, -1, dtype=np.int64)
    stamp = np.zeros(1, dtype=np.int64)
    args = (head, e, e, ecn, par, e.copy(), e.copy(), stamp, 0)
    # 2**40 x 4095 < 2**53: exact, storage 0 (5 / 2**51.99) is cheaper than 7 / 4095
    assert eqscan.scan(keys, last, 2 ** 12, size, comp, *args) == 0
    # 2**40 x 16385 > 2**53
    assert eqscan.scan(keys, last, 2 ** 14 + 2, size, comp, *args) == eqscan.UNSAFE
    # never accessed and of size 0: nan in Python, so INF; never accessed otherwise: cost 0
    assert eqscan.scan(np.array([2, 1]), last, 10, size, comp, *args) == 1  # index 1 of the keys: storage 1
    size2 = np.array([2 ** 40, 1, 3], dtype=np.int64)
    assert eqscan.scan(np.array([2, 1]), last, 10, size2, comp, *args) == 0


def test_the_garbage_collector_is_paused_only_while_a_replay_runs():
    """Runtime pauses Python's cyclic collector during set-up and the commands (a speed
    measure, docs/dtr.md) and restores the caller's setting on every outcome."""
    import gc

    tr = random_trace(3, n_calls=40)
    b = baseline(tr)
    seen = []
    outcomes = set()
    for ratio in (0.05, 0.4, 1.0):
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            try:
                rt = Runtime(tr, max(1, int(ratio * b["baseline_memory"])), "dtr-eqclass",
                             remat_limit=b["baseline_compute"])
                assert gc.isenabled() == enabled
                orig = rt.compute

                def compute(op, orig=orig):
                    seen.append(gc.isenabled())
                    orig(op)

                rt.compute = compute
                outcomes.add(rt.run())
                assert gc.isenabled() == enabled
            finally:
                gc.enable()
    assert "oom" in outcomes and "ok" in outcomes
    assert seen and not any(seen)
