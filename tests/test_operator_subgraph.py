"""Restriction to any set of operators (formulations/subgraph.py; docs/remat-low-budgets.md,
section 16) against the brute-force referee (tests/referee.py): on random tiny graphs with
every graph feature and a random set K, G_K's least peak is never above G's, and at G's least
peak G_K's least extra compute is never above G's, for caps 0, 1 and unbounded and both
order classes. Seen red: boundary tensors kept at their size (as pinned inputs)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from memsched.formulations import GraphError
from memsched.formulations.subgraph import operator_subgraph

from referee import least_budget, remat
from referee_strategies import tiny_graphs

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


@settings(max_examples=300, **SET)
@given(data=st.data())
def test_the_restriction_is_a_relaxation(data):
    g = data.draw(tiny_graphs(max_ops=6))
    keep = data.draw(st.sets(st.integers(0, g.n_ops - 1), min_size=1))
    sub = operator_subgraph(g, keep)
    assert sorted(o.name for o in sub.ops) == sorted(g.ops[v].name for v in keep)
    for cap in (0, 1, None):
        for order in ("free", "given"):
            B = least_budget(g, float("inf"), cap, order)
            assert least_budget(sub, float("inf"), cap, order) <= B, (cap, order, sorted(keep))
            whole, part = remat(g, B, cap, order), remat(sub, B, cap, order)
            assert whole.compute is not None and part.compute is not None, (cap, order)
            assert part.compute - sub.total_cost() <= whole.compute - g.total_cost() + 1e-9, (cap, order, sorted(keep))


def test_bad_sets_are_refused_with_the_reason():
    from referee_strategies import _draw_graph, _rng_pick
    import random

    g = _draw_graph(_rng_pick(random.Random(1)), max_ops=4, min_ops=2)
    with pytest.raises(GraphError, match="empty"):
        operator_subgraph(g, [])
    with pytest.raises(GraphError, match="no operator with index"):
        operator_subgraph(g, [g.n_ops])
