"""Formats: native JSON round-trips losslessly, node-link export/import, content-based
detection, schedule files, and one-line errors naming the file."""
import json

import pytest
from hypothesis import given, settings

from memsched.formulations import Schedule, evaluate
from memsched.instances import InputError, graph_from_json, graph_to_json, load_graph, load_schedule, save_graph
from memsched.instances.formats import graph_to_node_link
from strategies import random_graphs, single_output_graphs, valid_schedules


def _same(a, b):
    assert a.name == b.name
    assert a.ops == b.ops
    assert a.tensors == b.tensors
    assert a.pinned == b.pinned
    assert a.outputs == b.outputs
    assert a.order == b.order
    assert a.meta == b.meta


@settings(max_examples=300)
@given(random_graphs(max_ops=9))
def test_native_roundtrip_is_lossless(g):
    d = graph_to_json(g)
    text = json.dumps(d)
    g2 = graph_from_json(json.loads(text), "mem.json")
    _same(g, g2)
    assert graph_to_json(g2) == d


@settings(max_examples=40)
@given(random_graphs(max_ops=6))
def test_native_roundtrip_through_a_file(tmp_path_factory, g):
    p = tmp_path_factory.mktemp("rt") / "g.json"
    save_graph(g, p)
    _same(g, load_graph(p))


@settings(max_examples=300)
@given(single_output_graphs(max_ops=9))
def test_node_link_export_import_keeps_structure_and_peak(g):
    d = json.loads(json.dumps(graph_to_node_link(g)))
    assert d["directed"] is True and {"nodes", "links"} <= d.keys()
    g2 = graph_from_json(d, "nl.json")
    assert [o.name for o in g2.ops] == [o.name for o in g.ops]
    assert g2.size == g.size and g2.cost == g.cost
    assert [sorted(p) for p in g2.op_pred()] == [sorted(p) for p in g.op_pred()]
    # the exported graph.order is the given order on import
    assert g2.order == g.order
    assert evaluate(g2, Schedule.from_order(g2, g2.given_order())).peak == \
        evaluate(g, Schedule.from_order(g, g.given_order())).peak
    # without graph.order the importer takes networkx's topological sort (Moccasin protocol)
    del d["graph"]["order"]
    g3 = graph_from_json(d, "nl.json")
    order = [g.op_index[n] for n in g3.order]
    assert evaluate(g3, Schedule.from_order(g3, g3.given_order())).peak == \
        evaluate(g, Schedule.from_order(g, order)).peak


@settings(max_examples=100)
@given(random_graphs(max_ops=7))
def test_node_link_export_of_any_graph_imports(g):
    g2 = graph_from_json(json.loads(json.dumps(graph_to_node_link(g))), "nl.json")
    assert g2.n_ops == g.n_ops
    assert [sum(g.size[j] for j in g.op_out[i]) for i in range(g.n_ops)] == g2.size


@settings(max_examples=60)
@given(random_graphs(max_ops=6), __import__("hypothesis").strategies.data())
def test_schedule_files_roundtrip(tmp_path_factory, g, data):
    sched = data.draw(valid_schedules(g))
    p = tmp_path_factory.mktemp("s") / "s.json"
    p.write_text(json.dumps(sched.to_json(g)))
    assert load_schedule(g, p) == sched
    q = p.with_name("o.json")
    order = g.given_order()
    q.write_text(json.dumps({"order": [g.ops[i].name for i in order]}))
    assert load_schedule(g, q) == Schedule.from_order(g, order)
    q.write_text(json.dumps([g.ops[i].name for i in order]))
    assert load_schedule(g, q) == Schedule.from_order(g, order)


def test_random_layered_flavour_is_detected(tmp_path):
    d = {"directed": True, "multigraph": False, "graph": {"name": "rl", "order": [0, 2, 1]},
         "nodes": [{"name": 0, "out_cost": 5, "duration": 0, "param_cost": 0},
                   {"name": 1, "out_cost": 7, "duration": 0, "param_cost": 0},
                   {"name": 2, "out_cost": 3, "duration": 9, "param_cost": 0}],
         "links": [{"0": 0, "1": 2}, {"0": 2, "1": 1}]}
    p = tmp_path / "rl.json"
    p.write_text(json.dumps(d))
    g = load_graph(p)
    assert g.order == ("0", "2", "1") and g.size == [5, 7, 3] and g.cost == [0, 0, 9]
    assert evaluate(g, Schedule.from_order(g, g.given_order())).peak == max(5 + 3, 3 + 7)


@pytest.mark.parametrize("text, pattern", [
    ("{\"nodes\": [1, 2,", r"bad\.json:1:\d+: invalid JSON"),
    ("{}", r"bad\.json: not a graph"),
    ("[1, 2]", r"bad\.json: not a graph"),
    ('{"format": "memsched-graph", "version": 9}', r"unsupported memsched-graph version 9"),
    ('{"format": "memsched-graph", "version": 1, "operators": []}', r"missing field 'tensors'"),
    ('{"format": "memsched-graph", "version": 1, "tensors": [{"name": "a"}], "operators": []}',
     r"tensors\[0\]: missing field 'size'"),
    ('{"format": "memsched-graph", "version": 1, "tensors": [{"name": "a", "size": -3}], "operators": []}',
     r"tensor 'a': size must be non-negative"),
    ('{"nodes": [{"id": 0, "cost_cpu": 1}], "links": []}', r"nodes\[0\]: missing field 'cost_ram'|neither"),
    ('{"nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 2}], "links": [{"source": 0, "target": 5}]}',
     r"links\[0\]: refers to unknown node id 5"),
    ('{"nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 2}, {"id": 1, "cost_cpu": 1, "cost_ram": 2}],'
     ' "links": [{"source": 0, "target": 1}, {"source": 1, "target": 0}]}', r"cycle"),
    ('{"format": "memsched-schedule", "version": 1, "events": []}', r"schedule file, not a graph"),
])
def test_malformed_graph_files_give_one_line(tmp_path, text, pattern):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(InputError, match=pattern) as e:
        load_graph(p)
    assert "\n" not in str(e.value) and "bad.json" in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_graph(tmp_path / "nope.json")


def test_bad_schedule_files(tmp_path):
    from memsched.instances.generators import chain

    g = chain(3)
    p = tmp_path / "s.json"
    p.write_text('{"events": [["compute", "v9"]]}')
    with pytest.raises(InputError, match="s.json: event #0: unknown operator 'v9'"):
        load_schedule(g, p)
    p.write_text('{"events": [["launch", "v0"]]}')
    with pytest.raises(InputError, match="kind must be 'compute' or 'free'"):
        load_schedule(g, p)
    p.write_text('{"foo": 1}')
    with pytest.raises(InputError, match="not a schedule"):
        load_schedule(g, p)
