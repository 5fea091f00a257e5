"""The evaluator against an independent brute-force re-implementation of the semantics
(docs/semantics.md), on random graphs and random valid and invalid schedules."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from memsched.formulations import COMPUTE, FREE, Graph, Operator, Schedule, ScheduleError, Tensor, evaluate
from strategies import random_graphs, random_schedules, topological_orders, valid_schedules


def brute_evaluate(g: Graph, events):
    """Name-based re-implementation: memory is re-summed from the resident set at every
    step. Returns None when invalid, else (peak, peak_event, compute, recomputations,
    timeline)."""
    size = {t.name: t.size for t in g.tensors}
    producer = {}
    for op in g.ops:
        for t in op.outputs:
            producer[t] = op
    resident = {t.name for t in g.tensors if t.name not in producer}
    pinned = set(g.pinned)

    def mem():
        return sum(size[t] for t in resident)

    peak, peak_event = mem(), -1
    runs = {op.name: 0 for op in g.ops}
    total = 0.0
    timeline = []
    for k, (kind, x) in enumerate(events):
        if kind == COMPUTE:
            if not 0 <= x < len(g.ops):
                return None
            op = g.ops[x]
            if any(t not in resident for t in op.inputs) or any(t in resident for t in op.outputs):
                return None
            during = mem() + sum(size[t] for t in op.outputs) + op.workspace
            timeline.append(during)
            if during > peak:
                peak, peak_event = during, k
            resident |= set(op.outputs)
            runs[op.name] += 1
            total += op.cost
        elif kind == FREE:
            if not 0 <= x < len(g.tensors):
                return None
            t = g.tensors[x].name
            if t not in resident or t in pinned:
                return None
            resident.discard(t)
            timeline.append(mem())
        else:
            return None
    if any(c == 0 for c in runs.values()) or any(t not in resident for t in g.outputs):
        return None
    return peak, peak_event, total, sum(runs.values()) - len(runs), timeline


def _check(g, sched):
    ref = brute_evaluate(g, sched.events)
    if ref is None:
        with pytest.raises(ScheduleError):
            evaluate(g, sched)
        return False
    ev = evaluate(g, sched)
    peak, peak_event, total, recomp, timeline = ref
    assert ev.peak == peak
    assert ev.peak_event == peak_event
    assert math.isclose(ev.compute, total, rel_tol=1e-12, abs_tol=1e-12)
    assert ev.recomputations == recomp
    assert ev.timeline == timeline
    assert ev.initial == sum(g.size[j] for j in g.input_idx)
    return True


@settings(max_examples=1000)
@given(st.data())
def test_evaluator_matches_brute_force_on_random_schedules(data):
    g = data.draw(random_graphs(max_ops=8))
    sched = data.draw(random_schedules(g))
    _check(g, sched)


@settings(max_examples=700)
@given(st.data())
def test_evaluator_matches_brute_force_on_valid_schedules_with_recomputation(data):
    g = data.draw(random_graphs(max_ops=8))
    sched = data.draw(valid_schedules(g))
    assert _check(g, sched), "valid_schedules produced an invalid schedule"


@settings(max_examples=500)
@given(st.data())
def test_plain_orders_are_valid_and_free_after_last_use(data):
    g = data.draw(random_graphs(max_ops=9))
    order = data.draw(topological_orders(g))
    sched = Schedule.from_order(g, order)
    assert _check(g, sched)
    # independent plain-order accounting: a tensor is live from its producer's step (or the
    # start, for inputs) through its last consumer's step; unconsumed free-able inputs
    # leave before the first step; pinned and required tensors stay to the end
    pos = {v: k for k, v in enumerate(order)}
    keep = g.pinned_idx | g.output_idx
    n = len(order)
    peak = sum(g.size[j] for j in g.input_idx)
    for k, v in enumerate(order):
        live = g.workspace[v]
        for j in range(g.n_tensors):
            p = g.producer[j]
            start = -1 if p == -1 else pos[p]
            uses = [pos[c] for c in g.consumers[j]]
            end = n if j in keep else max(uses + [start])
            if p == -1 and not uses and j not in keep:
                continue
            if start <= k <= end:
                live += g.size[j]
        peak = max(peak, live)
    assert evaluate(g, sched).peak == peak


@settings(max_examples=300)
@given(st.data())
def test_non_topological_order_is_rejected(data):
    g = data.draw(random_graphs(min_ops=2, max_ops=7))
    order = data.draw(st.permutations(list(range(g.n_ops))))
    pos = {v: k for k, v in enumerate(order)}
    topo = all(pos[p] < pos[v] for v in range(g.n_ops) for p in g.op_pred()[v])
    sched = Schedule.from_order(g, order)
    if topo:
        evaluate(g, sched)
    else:
        with pytest.raises(ScheduleError, match="not resident"):
            evaluate(g, sched)


def test_error_messages_name_event_and_tensor():
    g = Graph([Operator("a", ("x",), ("ta",)), Operator("b", ("ta",), ("tb",))],
              [Tensor("x", 4), Tensor("ta", 2), Tensor("tb", 1)], pinned=frozenset({"x"}), outputs=("tb",))
    a, b = g.op_index["a"], g.op_index["b"]
    ta, x, tb = g.tensor_index["ta"], g.tensor_index["x"], g.tensor_index["tb"]
    with pytest.raises(ScheduleError, match=r"event 2: compute\(b\) needs input tensor 'ta'.*freed at event 1") as e:
        evaluate(g, Schedule(((COMPUTE, a), (FREE, ta), (COMPUTE, b))))
    assert e.value.event == 2
    with pytest.raises(ScheduleError, match="pinned"):
        evaluate(g, Schedule(((FREE, x),)))
    with pytest.raises(ScheduleError, match="still resident"):
        evaluate(g, Schedule(((COMPUTE, a), (COMPUTE, a))))
    with pytest.raises(ScheduleError, match="'b' is never computed"):
        evaluate(g, Schedule(((COMPUTE, a),)))
    with pytest.raises(ScheduleError, match="required output 'tb'"):
        evaluate(g, Schedule(((COMPUTE, a), (COMPUTE, b), (FREE, tb))))
    # recomputation after a free is legal and counted
    ev = evaluate(g, Schedule(((COMPUTE, a), (FREE, ta), (COMPUTE, a), (COMPUTE, b))))
    assert ev.recomputations == 1 and ev.compute == 3.0 and ev.peak == 4 + 2 + 1


def test_worked_example_from_docs():
    """The worked example of docs/semantics.md, number by number."""
    g = Graph(
        [Operator("load", (), ("x",), 1.0), Operator("conv", ("x", "w"), ("y",), 4.0, workspace=3),
         Operator("split", ("y",), ("a", "b"), 1.0), Operator("add", ("a", "b"), ("z",), 1.0)],
        [Tensor("w", 2), Tensor("x", 4), Tensor("y", 6), Tensor("a", 3), Tensor("b", 3), Tensor("z", 1)],
        pinned=frozenset({"w"}), outputs=("z",))
    ev = evaluate(g, Schedule.from_order(g, g.given_order()))
    # load: 2 + 4 = 6; conv: 2 + 4 + 6 + 3 = 15; free x -> 8; split: 8 + 6 = 14; free y -> 8;
    # add: 8 + 1 = 9; free a, b -> 3
    assert ev.timeline == [6, 15, 8, 14, 8, 9, 6, 3]
    assert ev.peak == 15 and ev.peak_op == "conv" and ev.compute == 7.0
    sched = Schedule.from_names(g, [["compute", "load"], ["compute", "conv"], ["free", "x"], ["free", "y"],
                                    ["compute", "split"]])
    with pytest.raises(ScheduleError, match=r"compute\(split\) needs input tensor 'y'.*freed at event 3"):
        evaluate(g, sched)
    re = Schedule.from_names(g, [["compute", "load"], ["free", "x"], ["compute", "load"], ["compute", "conv"],
                                 ["free", "x"], ["compute", "split"], ["free", "y"], ["compute", "add"],
                                 ["free", "a"], ["free", "b"]])
    ev = evaluate(g, re)
    assert (ev.peak, ev.compute, ev.recomputations) == (15, 8.0, 1)
    assert ev.timeline == [6, 2, 6, 15, 8, 14, 8, 9, 6, 3]
