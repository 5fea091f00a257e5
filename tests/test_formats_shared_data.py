"""Every graph in ../shared/data/graphs imports, and the peak of its given order equals
the Moccasin accounting of ../shared/data/README.md, re-implemented here from the raw
JSON: while node v runs, live = v's output + every earlier output that still has a
consumer at v's position or later. The given order is the file's ``graph.order`` when
present, else networkx's topological sort. Skips when the data is absent."""
import json
from pathlib import Path

import networkx as nx
import pytest

from memsched.formulations import Schedule, evaluate
from memsched.instances import load_graph
from memsched.solvers.ordering.heuristics import HEURISTICS, is_topological

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "graphs"
FILES = sorted(DATA.glob("*/*.json")) if DATA.is_dir() else []


def moccasin_peak(path: Path) -> int:
    d = json.loads(path.read_text())
    nodes = d["nodes"]
    if "cost_ram" in nodes[0]:
        key = lambda n: n["id"]
        size = {n["id"]: n["cost_ram"] for n in nodes}
        edges = [(e["source"], e["target"]) for e in d["links"]]
    else:
        key = lambda n: n["name"]
        size = {n["name"]: n["out_cost"] for n in nodes}
        edges = [(e["0"], e["1"]) for e in d["links"]]
    order = d.get("graph", {}).get("order")
    if not order:
        g = nx.DiGraph()
        g.add_nodes_from(key(n) for n in nodes)
        g.add_edges_from(edges)
        order = list(nx.topological_sort(g))
    pos = {v: k for k, v in enumerate(order)}
    last_use = {v: pos[v] for v in order}
    for s, t in edges:
        last_use[s] = max(last_use[s], pos[t])
    peak = 0
    for k, v in enumerate(order):
        live = size[v] + sum(size[u] for u in order[:k] if last_use[u] >= k)
        peak = max(peak, live)
    return peak


@pytest.mark.skipif(not FILES, reason="../shared/data/graphs is absent")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_given_order_peak_matches_moccasin_accounting(path):
    g = load_graph(path)
    ev = evaluate(g, Schedule.from_order(g, g.given_order()))
    assert ev.peak == moccasin_peak(path)


@pytest.mark.skipif(not FILES, reason="../shared/data/graphs is absent")
def test_random_layered_n100_reference_peak():
    p = DATA / "random_layered" / "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json"
    if not p.exists():
        pytest.skip("random_layered_n100 is absent")
    g = load_graph(p)
    assert evaluate(g, Schedule.from_order(g, g.given_order())).peak == 46319
    assert moccasin_peak(p) == 46319


@pytest.mark.skipif(not FILES, reason="../shared/data/graphs is absent")
@pytest.mark.parametrize("path", FILES,
                         ids=lambda p: p.stem)
def test_heuristics_give_valid_orders_on_real_graphs(path):
    g = load_graph(path)
    for name, f in HEURISTICS.items():
        if name in ("liu", "best"):
            continue
        assert is_topological(g, f(g)), name
