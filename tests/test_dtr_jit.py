"""The compiled replay engine (solvers/dtr/jit_runtime.py) makes the Python Runtime's replay.

The reference is :class:`memsched.solvers.dtr.runtime.Runtime`, run here directly. Compared:
outcome, clock, peak, evictions, eager evictions, remat compute, recomputations, model
compute, the budget interval (eq_lo, eq_hi) and the failure (kind, position, and every other
key), on

* random traces of instances/dtr_random.py (the default, few-sizes and long families; the
  cyclic-aliasing family falls back to Python) x the supported heuristics x random budgets x
  overhead limits small enough that oom, remat_exceeded and thrash_or_oom all occur (checked:
  the comparison is not vacuous), with and without early stop, and with the proof tried at
  every recomputation;
* the same with log buffers so small that the closure cache is flushed, and with the run cut
  into one-compute chunks (resumed mid-materialization);
* each shared DTR trace at ratios that fit and that thrash (skipped when ../shared/data is
  absent);
* the exact division against Python's, and replay() / the sweep's replay task with the engine
  against the Python path.

The first test in a process pays numba's compilation (about 8 s on the 2-core development
machine; loaded from numba's cache afterwards).
"""
from __future__ import annotations

import importlib
import math
import random
from pathlib import Path

import pytest

from memsched.formulations import MemschedError
from memsched.instances.dtr_random import random_trace
from memsched.solvers.dtr import jit_runtime as J
from memsched.solvers.dtr import runtime as rtmod
from memsched.solvers.dtr.replay import budget_for, load_trace, replay, trace_baseline
from memsched.solvers.dtr.runtime import Runtime, baseline

replay_mod = importlib.import_module("memsched.solvers.dtr.replay")  # (the package exports the function)
pytestmark = pytest.mark.skipif(not J.AVAILABLE, reason="numba not importable (or MEMSCHED_DTR_JIT=python)")

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dtr-traces"
HEUR = sorted(J.SUPPORTED_HEURISTICS)
FAMILIES = [{}, {"small_sizes": True}, {"n_calls": 40}, {"n_calls": 60, "small_sizes": True}]


def key(out, r):
    return (out, r.clock, r.peak, r.evictions, r.eager_evictions, r.remat_compute, r.remat_count, r.model_compute,
            r.eq_lo, r.eq_hi, r.failure)


def python_run(tr, budget, h, limit, early):
    rt = Runtime(tr, budget, h, remat_limit=limit, early_stop=early)
    return key(rt.run(), rt)


def jit_run(tr, budget, h, limit, early, **kw):
    res = J.run(tr, budget, h, remat_limit=limit, early_stop=early, **kw)
    assert res is not None, (tr.path, budget, h, limit, early)
    return key(*res), res[1]


def cases(seeds, per_trace, rng_seed):
    """(trace, budget, limit, early) over random traces, budgets and limits."""
    rng = random.Random(rng_seed)
    for seed in seeds:
        tr = random_trace(seed, **FAMILIES[seed % len(FAMILIES)])
        b = baseline(tr)
        for _ in range(per_trace):
            budget = int(b["baseline_memory"] * rng.uniform(0.2, 1.05))
            limit = rng.choice([b["baseline_compute"] * rng.choice([0.1, 0.3, 1.0]), b["baseline_compute"], math.inf])
            yield tr, budget, limit, rng.random() < 0.5


def test_div_rn_is_pythons_division():
    rng = random.Random(0)
    pairs = [(0, 1), (1, 3), (2 ** 53, 2 ** 53 + 1), (2 ** 53, 2 ** 62 + 1), (1, 2 ** 63 - 1), (3, 2 ** 54 + 2)]
    for _ in range(20000):
        e = rng.choice([rng.randrange(2 ** 53 + 1), rng.randrange(1, 1 << rng.randrange(1, 54))])
        d = rng.choice([rng.randrange(1, 2 ** 63), rng.randrange(2 ** 53 - 1000, 2 ** 53 + 1000),
                        rng.randrange(1, 1 << rng.randrange(1, 64))])
        pairs.append((e, d))
    # exact halves between two doubles: e / d = (2m + 1) / 2**k with d a power of two above 2**53
    for _ in range(2000):
        k = rng.randrange(54, 63)
        e = rng.randrange(2 ** 52, 2 ** 53) | 1
        pairs.append((e, 2 ** k))
        pairs.append((e * 3, 3 * 2 ** k) if e * 3 <= 2 ** 53 else (e, 2 ** k - 1))
    bad = [(e, d) for e, d in pairs if J.div_rn(e, d) != e / d]
    assert not bad, bad[:5]


@pytest.mark.parametrize("h", HEUR)
def test_random_traces_equal_python(h, monkeypatch):
    outcomes = {}
    n = 0
    for i, (tr, budget, limit, early) in enumerate(cases(range(32) if h == "dtr" else range(0, 32, 3), 10, hash(h))):
        if i % 3 == 0:  # the proof tried at every recomputation (as tests/test_dtr_early.py does)
            monkeypatch.setattr(rtmod, "EARLY_CHECKS", 10 ** 12)
        else:
            monkeypatch.setattr(rtmod, "EARLY_CHECKS", 64)
        got, _ = jit_run(tr, budget, h, limit, early)
        assert got == python_run(tr, budget, h, limit, early), (tr.path, budget, h, limit, early)
        outcomes[got[0]] = outcomes.get(got[0], 0) + 1
        n += 1
    if h == "dtr":  # not vacuous: every outcome occurred
        assert {"ok", "oom", "remat_exceeded", "thrash_or_oom"} <= set(outcomes), outcomes
    assert outcomes.get("ok", 0) < n


def test_flushed_logs_and_chunked_runs_equal_python():
    """Log buffers of a few entries (the closure cache is dropped whenever one is full), and
    runs cut into one-compute chunks (resumed inside materialize's recursion): the same."""
    tiny = {"records": 3, "snapshot_words": 40, "checks": 2, "check_storages": 3}
    flushes = 0
    for tr, budget, limit, early in cases(range(40, 64), 4, 7):
        ref = python_run(tr, budget, "dtr", limit, early)
        got, r = jit_run(tr, budget, "dtr", limit, early, caps=tiny)
        assert got == ref, (tr.path, budget, limit, early)
        flushes += r.flushes
        got, _ = jit_run(tr, budget, "dtr", limit, early, deadline=1e300, chunk=1)
        assert got == ref, (tr.path, budget, limit, early)
    assert flushes > 20


def test_replay_and_sweep_task_use_the_engine(monkeypatch):
    from memsched.solvers.dtr.sweep import execute_replay_task

    tr = random_trace(9, n_calls=60)
    assert isinstance(replay(tr, 0.5, keep_runtime=True).runtime, Runtime)  # a small trace: Python
    monkeypatch.setattr(replay_mod, "JIT_MIN_COMMANDS", 0)
    for ratio, limit in [(0.3, 1.1), (0.5, 2.0), (0.9, 2.0), (0.2, float("inf"))]:
        for early in (False, True):
            a = replay(tr, ratio, overhead_limit=limit, early_stop=early, keep_runtime=True)
            b = replay(tr, ratio, overhead_limit=limit, early_stop=early, keep_runtime=True, engine="python")
            assert isinstance(a.runtime, J.JitRun) and isinstance(b.runtime, Runtime)
            ja, jb = a.to_json(), b.to_json()
            ja.pop("wall_s")
            jb.pop("wall_s")
            assert ja == jb
            assert (a.runtime.eq_lo, a.runtime.eq_hi, a.runtime.pos) == (b.runtime.eq_lo, b.runtime.eq_hi,
                                                                         b.runtime.pos)
            task = {"instance_hash": "t", "ratio": ratio, "heuristic": "dtr", "overhead_limit": limit, "seed": 0,
                    "timeout": None, "early_stop": early}
            out = execute_replay_task(task, tr, cache=False)
            assert out["equiv"] == [b.runtime.eq_lo, None if b.runtime.eq_hi == math.inf else b.runtime.eq_hi - 1]
            assert (out["outcome"], out["clock"], out["peak"], out["evictions"]) == (b.outcome, b.clock, b.peak,
                                                                                    b.evictions)


def test_unsupported_configurations_fall_back(monkeypatch):
    monkeypatch.setattr(replay_mod, "JIT_MIN_COMMANDS", 0)
    cyclic = random_trace(2, n_calls=26, alias_any=True, alias_p=0.5, small_sizes=True)
    assert J.trace_tables(cyclic) is None  # a storage cycle: the Python runtime replays it
    with pytest.raises(MemschedError):
        replay(cyclic, 0.5, engine="jit")
    tr = random_trace(3)
    assert J.run(tr, 100, "dtr-eqclass") is None
    for kw in ({"heuristic": "dtr-eqclass"}, {"record": True}, {"pin": [0]}, {"eager": False}):
        r = replay(tr, 0.5, keep_runtime=True, **kw)
        assert isinstance(r.runtime, Runtime), kw
    assert isinstance(replay(tr, 0.5, keep_runtime=True).runtime, J.JitRun)
    with pytest.raises(MemschedError):
        replay(tr, 0.5, engine="fast")


def test_timeout_is_unresolved():
    tr = random_trace(9, n_calls=60)
    b = replay(tr, 0.3, timeout=-1.0, overhead_limit=float("inf"), engine="jit")
    assert b.outcome == "unresolved"


@pytest.mark.skipif(not DATA.is_dir(), reason="shared traces absent")
@pytest.mark.parametrize("name,cases_", [
    ("resnet32", [(0.12, False), (0.1689, False), (0.5, True)]),
    ("transformer", [(0.12, True), (0.5, True)]),
    ("treelstm", [(0.12, True), (0.8, True)]),
    ("lstm", [(0.12, True), (0.8, True)]),
])
def test_shared_traces_equal_python(name, cases_):
    tr = load_trace(sorted(DATA.glob(f"{name}*.log"))[0])
    b = trace_baseline(tr)
    limit = b["baseline_compute"] * 1.0
    seen = set()
    for ratio, early in cases_:
        budget = budget_for(tr, ratio)
        got, _ = jit_run(tr, budget, "dtr", limit, early)
        assert got == python_run(tr, budget, "dtr", limit, early), (name, ratio, early)
        seen.add(got[0])
    assert seen & {"remat_exceeded", "thrash_or_oom", "oom"}, (name, seen)  # a thrashing ratio among them
