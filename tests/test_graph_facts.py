"""Graph facts computed once on Graph (kept set, always-resident bytes, memory unit) hold
for every valid schedule."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.formulations import evaluate
from strategies import random_graphs, valid_schedules


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_always_resident_and_memory_unit_hold_for_every_schedule(data):
    g = data.draw(random_graphs(max_ops=7))
    s = data.draw(valid_schedules(g))
    ev = evaluate(g, s)
    floor = g.always_resident()
    unit = g.memory_unit()
    assert all(m >= floor for m in ev.timeline)
    assert all(m % unit == 0 for m in ev.timeline)
    freed = {t for kind, t in s.events if kind == 1}
    assert not (freed & g.always_resident_idx()), "an always-resident tensor was freed by a valid schedule"
    assert g.always_resident_idx() <= g.kept_idx() and g.always_resident_idx() <= set(g.input_idx)


def test_memory_unit_is_the_gcd():
    from memsched.formulations import Graph, Operator, Tensor

    ops = [Operator("a", inputs=[], outputs=["x"], cost=1, workspace=12), Operator("b", inputs=["x"], outputs=["y"], cost=1)]
    tensors = [Tensor("x", 18), Tensor("y", 30)]
    gr = Graph(name="u", ops=ops, tensors=tensors, outputs=["y"])
    assert gr.memory_unit() == 6
