"""Hot-path savings of the DTR runtime that must not change a value (docs/dtr.md, section 2).

* A storage's compute (the distinct operators over its tensors) is updated incrementally
  as tensors join it (``Runtime._storage_compute_added``); after every command it equals
  the sum over the storage's tensors from scratch, on random traces where results alias
  any argument (so one operator can put two tensors on one storage) and with float costs.
"""
import dataclasses

import pytest

from memsched.instances.dtr_random import random_trace
from memsched.solvers.dtr.runtime import RegionInvariantError, Runtime, baseline


def _check_every_command(tr, h, budget, limit):
    rt = Runtime(tr, budget, h, remat_limit=limit)
    hits = [0]
    orig = rt.compute

    def compute(op):
        orig(op)
        for s, ts in enumerate(rt.st_tensors):
            if ts:
                assert rt.st_comp[s] == rt._storage_compute(ts), (s, ts)
                hits[0] += len(ts) > 1
        for s, seen in rt._st_ops.items():
            assert seen == {rt.t_op[u] for u in rt.st_tensors[s]}

    rt.compute = compute
    try:
        rt.run()
    except RegionInvariantError:
        pass  # cyclic aliasing under regions (simrd stops too); every command before it was checked
    return hits[0], any(len({rt.t_op[u] for u in ts}) < len(ts) for ts in rt.st_tensors if ts)


@pytest.mark.parametrize("h", ["dtr", "dtr-eqclass", "lru"])
def test_storage_compute_is_kept_exactly(h):
    multi = repeated_op = 0
    for seed in range(40):
        tr = random_trace(seed, n_calls=30, alias_any=True, alias_p=0.5, small_sizes=bool(seed % 2))
        b = baseline(tr)
        for r in (0.5, 0.9):
            m, rep = _check_every_command(tr, h, max(1, int(r * b["baseline_memory"])), b["baseline_compute"])
            multi += m
            repeated_op += rep
    assert multi > 50 and repeated_op > 5  # storages of several tensors, some from one operator


def test_storage_compute_with_float_costs():
    """Float costs: the incremental sum makes the same additions in the same order."""
    for seed in range(20):
        tr = random_trace(seed, n_calls=30, alias_any=True, alias_p=0.5)
        for i, op in enumerate(tr.ops):
            tr.ops[i] = dataclasses.replace(op, cost=op.cost / 7 + 0.1)
        b = baseline(tr)
        _check_every_command(tr, "dtr", max(1, int(0.6 * b["baseline_memory"])), float("inf"))
