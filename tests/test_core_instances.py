"""Shipped instances and generators: the shipped files are exactly what
instances/make_shipped.py generates; random_layered follows its construction."""
import json
import math

from hypothesis import given, settings, strategies as st

from memsched.formulations import Schedule, evaluate
from memsched.instances import SHIPPED, graph_to_json, load_graph
from memsched.instances.generators import chain, random_dag, random_layered, random_multi_output, tree, unet
from memsched.instances.make_shipped import main as make_shipped_main, shipped_graphs


def test_shipped_files_are_regenerated_identically(tmp_path):
    assert make_shipped_main([str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.glob("*.json"))
    assert names == sorted(p.name for p in SHIPPED.glob("*.json"))
    for name in names:
        assert json.loads((tmp_path / name).read_text()) == json.loads((SHIPPED / name).read_text()), name


def test_shipped_instances_load_and_have_the_promised_shape():
    gs = shipped_graphs()
    assert 15 <= gs["unet_small.json"].n_ops <= 25
    assert gs["tree_15.json"].is_tree()
    assert any(len(o) > 1 for o in gs["multi_output_12.json"].op_out)
    assert gs["random_layered_n30.json"].n_ops == 30 and gs["random_layered_n100.json"].n_ops == 100
    for p in SHIPPED.glob("*.json"):
        g = load_graph(p)
        assert graph_to_json(g) == graph_to_json(gs[p.name])
        evaluate(g, Schedule.from_order(g, g.given_order()))


@settings(max_examples=60)
@given(st.integers(2, 300), st.integers(0, 10**9), st.one_of(st.none(), st.floats(0.2, 0.6)))
def test_random_layered_structure(n, seed, width):
    g = random_layered(n, seed, width=width)
    assert g.n_ops == n and g.n_tensors == n
    pred, succ = g.op_pred(), g.op_succ()
    sources = [i for i in range(n) if not pred[i]]
    sinks = [i for i in range(n) if not succ[i]]
    assert sources == [g.op_index["n0"]] and sinks == [g.op_index[f"n{n - 1}"]]
    assert g.outputs == (f"n{n - 1}",)
    assert all(s >= 1 for s in g.size)
    assert g.cost[g.op_index["n0"]] == 0 and all(1 <= c <= 1000 for c in g.cost[1:-1])
    assert g.meta["layers"] >= 2
    # deterministic in (n, seed, width)
    assert graph_to_json(random_layered(n, seed, width=width)) == graph_to_json(g)


def test_random_layered_density_resembles_moccasin_files():
    # Moccasin's n=100 file has 236 edges, n=250 has 944; same parameters here
    e100 = [sum(len(s) for s in random_layered(100, s, width=0.27).op_succ()) for s in range(10)]
    e250 = [sum(len(s) for s in random_layered(250, s, width=0.43).op_succ()) for s in range(10)]
    assert 190 <= sum(e100) / 10 <= 280
    assert 800 <= sum(e250) / 10 <= 1100
    # L = ceil(sqrt(n (1/W - 1))) inner layers on average, plus source and sink layers
    for n, w in ((100, 0.27), (250, 0.43)):
        expected = math.ceil(math.sqrt(n * (1 / w - 1))) + 2
        mean = sum(random_layered(n, s, width=w).meta["layers"] for s in range(10)) / 10
        assert abs(mean - expected) <= 3


def test_existing_generators_unchanged_in_behaviour():
    assert chain(4).n_ops == 4 and tree(9, seed=2).is_tree()
    assert unet(3, 1).n_ops == 18 and unet(3, 1).outputs == ("output",)
    assert random_dag(10, 1).n_ops == 10 and random_multi_output(6, 1).pinned == frozenset({"w"})
