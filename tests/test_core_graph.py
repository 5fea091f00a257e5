"""Graph validation: every malformed graph gives a GraphError naming the offending node."""
import math
import re

import pytest
from hypothesis import given, settings, strategies as st

from memsched.formulations import Graph, GraphError, MemschedError, Operator, Tensor
from strategies import random_graphs


def _rebuild(g: Graph, ops=None, tensors=None, **kw):
    args = dict(pinned=g.pinned, outputs=g.outputs, name=g.name)
    args.update(kw)
    return Graph(list(ops if ops is not None else g.ops), list(tensors if tensors is not None else g.tensors), **args)


@settings(max_examples=200)
@given(random_graphs(min_ops=2, max_ops=8, max_inputs=0), st.data())
def test_cycle_is_named(g, data):
    # make an earlier operator consume a later operator's output: closes a cycle whenever
    # a path leads from the earlier one to the later one; add that path explicitly
    i = data.draw(st.integers(0, g.n_ops - 2))
    j = data.draw(st.integers(i + 1, g.n_ops - 1))
    ops = list(g.ops)
    oi, oj = ops[i], ops[j]
    ops[i] = Operator(oi.name, tuple(dict.fromkeys(oi.inputs + (oj.outputs[0],))), oi.outputs, oi.cost, oi.workspace)
    ops[j] = Operator(oj.name, tuple(dict.fromkeys(oj.inputs + (oi.outputs[0],))), oj.outputs, oj.cost, oj.workspace)
    with pytest.raises(GraphError, match="cycle") as e:
        _rebuild(g, ops=ops)
    msg = str(e.value)
    # "operator 'a': lies on a cycle (a -> b -> ... -> a)": the named cycle must be a real
    # cycle of the modified graph, and the operator named first must lie on it
    m = re.fullmatch(r"operator '([^']+)': lies on a cycle \((.+)\)", msg)
    assert m, msg
    cyc = m.group(2).split(" -> ")
    assert len(cyc) >= 3 and cyc[0] == cyc[-1] == m.group(1), msg
    assert len(set(cyc[:-1])) == len(cyc) - 1, msg
    by_name = {o.name: o for o in ops}
    for u, v in zip(cyc, cyc[1:]):
        assert set(by_name[u].outputs) & set(by_name[v].inputs), f"{u} -> {v} is not an edge: {msg}"


@settings(max_examples=200)
@given(random_graphs(max_ops=8), st.data())
def test_dangling_input_is_named(g, data):
    k = data.draw(st.integers(0, g.n_ops - 1))
    ops = list(g.ops)
    o = ops[k]
    ops[k] = Operator(o.name, o.inputs + ("nowhere",), o.outputs, o.cost, o.workspace)
    with pytest.raises(GraphError, match=f"operator {o.name!r}: input tensor 'nowhere' does not exist"):
        _rebuild(g, ops=ops)


@settings(max_examples=200)
@given(random_graphs(max_ops=8), st.data(),
       st.one_of(st.integers(-10**6, -1), st.floats(0.1, 1e6).filter(lambda x: not x.is_integer()),
                 st.just("12"), st.just(None), st.just(True), st.floats(-1e6, -0.5)))
def test_bad_tensor_size_is_named(g, data, bad):
    k = data.draw(st.integers(0, g.n_tensors - 1))
    tensors = list(g.tensors)
    tensors[k] = Tensor(tensors[k].name, bad)
    with pytest.raises(GraphError, match=f"tensor {tensors[k].name!r}"):
        _rebuild(g, tensors=tensors)


@settings(max_examples=150)
@given(random_graphs(max_ops=8), st.data(), st.sampled_from([math.nan, math.inf, -1.0, -math.inf, "3", None]))
def test_bad_cost_is_named(g, data, bad):
    k = data.draw(st.integers(0, g.n_ops - 1))
    ops = list(g.ops)
    o = ops[k]
    ops[k] = Operator(o.name, o.inputs, o.outputs, bad, o.workspace)
    with pytest.raises(GraphError, match=f"operator {o.name!r}: cost"):
        _rebuild(g, ops=ops)


@settings(max_examples=150)
@given(random_graphs(min_ops=2, max_ops=8), st.data())
def test_duplicate_names_are_named(g, data):
    i = data.draw(st.integers(0, g.n_ops - 1))
    j = data.draw(st.integers(0, g.n_ops - 1).filter(lambda x: x != i))
    ops = list(g.ops)
    o = ops[j]
    ops[j] = Operator(ops[i].name, o.inputs, o.outputs, o.cost, o.workspace)
    with pytest.raises(GraphError, match=f"operator {ops[i].name!r}: duplicate name"):
        _rebuild(g, ops=ops)
    tensors = list(g.tensors) + [Tensor(g.tensors[0].name, 1)]
    with pytest.raises(GraphError, match=f"tensor {g.tensors[0].name!r}: duplicate name"):
        _rebuild(g, tensors=tensors)


def test_other_structural_errors():
    t = [Tensor("x", 1), Tensor("y", 1)]
    with pytest.raises(GraphError, match="'b'.*produced by both|produced by both 'a' and 'b'"):
        Graph([Operator("a", (), ("y",)), Operator("b", (), ("y",))], t)
    with pytest.raises(GraphError, match="operator 'a': has no output"):
        Graph([Operator("a", ("x",), ())], t)
    with pytest.raises(GraphError, match="pinned tensor 'y' has a producer"):
        Graph([Operator("a", ("x",), ("y",))], t, pinned=frozenset({"y"}))
    with pytest.raises(GraphError, match="required output 'q' does not exist"):
        Graph([Operator("a", ("x",), ("y",))], t, outputs=("q",))
    with pytest.raises(GraphError, match="given order runs operator 'b' before its input producer 'a'"):
        Graph([Operator("a", ("x",), ("y",)), Operator("b", ("y",), ("z",))], t + [Tensor("z", 1)], order=("b", "a"))
    with pytest.raises(GraphError, match="workspace"):
        Graph([Operator("a", ("x",), ("y",), 1.0, -5)], t)
    assert issubclass(GraphError, MemschedError)


@settings(max_examples=200)
@given(random_graphs(max_ops=9))
def test_adjacency_is_consistent(g):
    for i, op in enumerate(g.ops):
        assert [g.tensors[j].name for j in g.op_in[i]] == list(op.inputs)
        assert [g.tensors[j].name for j in g.op_out[i]] == list(op.outputs)
        for j in g.op_out[i]:
            assert g.producer[j] == i
        for j in g.op_in[i]:
            assert i in g.consumers[j]
        assert set(g.op_pred()[i]) == {g.producer[j] for j in g.op_in[i] if g.producer[j] != -1}
        for s in g.op_succ()[i]:
            assert i in g.op_pred()[s]
    assert sorted(g.given_order()) == list(range(g.n_ops))
    assert g.is_tree() == all(len(s) <= 1 for s in g.op_succ())
