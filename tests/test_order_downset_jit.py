"""The compiled down-set decision (solvers/ordering/downset_jit.py) against the interpreted
one and against brute force over all topological orders: the same order, the same
exactness, the same state count; an exhausted search only below the optimum."""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from memsched.formulations import order_peak
from memsched.instances.generators import random_layered
from memsched.solvers.ordering import downset_dp as D
from memsched.solvers.ordering import downset_jit
from referee import least_peak
from strategies import random_graphs, single_output_graphs

pytestmark = pytest.mark.skipif(not downset_jit.AVAILABLE, reason="numba not available")


def _same(g, theta, **kw):
    a = D.downset_decide(g, theta, engine="python", **kw)
    b = D.downset_decide(g, theta, engine="jit", **kw)
    assert (a.order, a.value, a.exact, a.states) == (b.order, b.value, b.exact, b.states), (theta, kw, a, b)
    return b


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=8), single_output_graphs(max_ops=8)), st.integers(-2, 3), st.booleans())
def test_compiled_decision_is_the_interpreted_one_and_exact(g, dth, look):
    opt = least_peak(g)
    r = _same(g, opt + dth, lookahead=look)
    if dth >= 0:
        assert r.exact and r.order is not None and order_peak(g, r.order) <= opt + dth
    else:
        assert r.exact and r.order is None


def test_compiled_decision_on_multiword_down_sets():
    """Graphs of 65-200 operators (2-4 words per down-set), thresholds below and at the
    given order's peak, with a state cap that some searches reach."""
    for seed in range(10):
        n = random.Random(seed).randint(65, 200)
        g = random_layered(n, seed)
        ub = order_peak(g, g.given_order())
        for th in (int(ub * 0.8), int(ub * 0.9), ub - 1, ub):
            r = _same(g, th, max_states=20_000)
            if th >= ub:
                assert r.order is not None


def test_compiled_decision_stops_at_its_memory_cap_and_claims_nothing(monkeypatch):
    g = random_layered(183, 9)  # this search runs past 30 000 states
    monkeypatch.setattr(D, "DP_TABLE_BYTES", 64 * 1024)
    r = D.downset_decide(g, 84982, engine="jit")
    assert not r.exact and r.order is None and "memory cap" in r.reason


def test_compiled_decision_stops_at_its_time_limit_and_claims_nothing():
    g = random_layered(183, 9)  # this search runs past 30 000 states (more than one chunk)
    r = D.downset_decide(g, 84982, engine="jit", time_limit=0.0)
    assert not r.exact and r.order is None and r.reason == "time limit" and r.states > 1


def test_engine_is_checked():
    g = random_layered(10, 0)
    with pytest.raises(ValueError):
        D.downset_decide(g, 10**9, engine="fast")
