"""The persistent, invalidated closure cache of the region heuristics (h_DTR's e*, MSPS,
lookahead) must give exactly the decisions of closures rebuilt at every operator."""
import glob
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsched.formulations import order_peak
from memsched.instances.dtr_trace import parse_trace
from memsched.instances.generators import random_dag, random_multi_output
from memsched.solvers.dtr import Runtime, baseline, graph_to_trace
from strategies import random_graphs

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dtr-traces"


def _state(rt):
    return (rt.clock, rt.peak, rt.evictions, rt.eager_evictions, rt.remat_count, rt.memory,
            tuple(rt.rg_c), tuple(rt.rr_c), tuple(rt.rg_int), tuple(rt.rr_front))


def _both(tr, budget, h, limit=float("inf"), **kw):
    out = []
    for cache in (True, False):
        rt = Runtime(tr, budget, h, remat_limit=limit, closure_cache=cache, **kw)
        out.append((rt.run(), _state(rt)))
    return out


def _graph_both(g, frac, h):
    tr, _, _ = graph_to_trace(g)
    budget = int(order_peak(g, g.given_order()) * frac)
    a, b = _both(tr, budget, h, workspace=tr.meta["workspace"])
    assert a == b


@settings(max_examples=250, deadline=None)
@given(g=random_graphs(max_ops=10), frac=st.floats(0.2, 1.1),
       h=st.sampled_from(["dtr", "msps", "ab-e", "lookahead-2", "belady"]))
def test_cache_equals_rebuild_random_graphs(g, frac, h):
    _graph_both(g, frac, h)


@pytest.mark.parametrize("seed", range(8))
def test_cache_equals_rebuild_random_dags(seed):
    for g in (random_dag(30, seed, edge_prob=0.15), random_multi_output(24, seed)):
        for frac in (0.3, 0.5, 0.7, 0.9):
            _graph_both(g, frac, "dtr")


@pytest.mark.parametrize("ratio", [0.15, 0.4, 0.8])
def test_cache_equals_rebuild_resnet32(ratio):
    files = glob.glob(str(DATA / "resnet32-*.log"))
    if not files:
        pytest.skip("no DTR traces")
    tr = parse_trace(files[0])
    b = baseline(tr)
    a, r = _both(tr, int(b["baseline_memory"] * ratio), "dtr", limit=b["baseline_compute"])
    assert a == r
