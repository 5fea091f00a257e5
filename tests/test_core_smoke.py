"""Smoke tests of the core model; the thorough property tests live beside it."""
import pytest

from memsched.formulations import Graph, GraphError, Operator, Schedule, ScheduleError, Tensor, evaluate
from memsched.instances.generators import chain


def test_chain_peak_is_two_tensors():
    g = chain(5, size=100)
    ev = evaluate(g, Schedule.from_order(g, g.given_order()))
    assert ev.peak == 200 and ev.compute == 5.0


def test_use_after_free_is_rejected():
    g = chain(3, size=10)
    v0, v1, v2 = (g.op_index[f"v{i}"] for i in range(3))
    bad = Schedule(((0, v0), (1, g.tensor_index["v0"]), (0, v1), (0, v2)))
    with pytest.raises(ScheduleError, match="v0"):
        evaluate(g, bad)


def test_cycle_is_named():
    ops = [Operator("a", ("tb",), ("ta",)), Operator("b", ("ta",), ("tb",))]
    with pytest.raises(GraphError, match="cycle"):
        Graph(ops, [Tensor("ta", 1), Tensor("tb", 1)])
