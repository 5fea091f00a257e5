"""CLI: ``memsched bound`` (human and JSON output, user errors)."""
import json

import pytest

import memsched.cli.main
from memsched.instances import SHIPPED, load_graph
from memsched.formulations import order_peak


def _a_graph():
    files = sorted(SHIPPED.glob("*.json"))
    if not files:
        pytest.skip("no shipped instances")
    return str(files[0])


def test_bound_json(capsys):
    path = _a_graph()
    assert memsched.cli.main.main(["bound", path, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["bounds"]) >= {"initial", "per_op", "trap", "reverse", "pair"}
    assert d["lower_bound"] == max(b["value"] for b in d["bounds"].values())
    for b in d["bounds"].values():
        assert b["wall_s"] >= 0
    g = load_graph(path)
    assert d["lower_bound"] <= order_peak(g, g.given_order())


def test_bound_human(capsys):
    assert memsched.cli.main.main(["bound", _a_graph()]) == 0
    out = capsys.readouterr().out
    assert "lower bound:" in out and "forward trap" in out


def test_bound_missing_file_exits_2(capsys, tmp_path):
    assert memsched.cli.main.main(["bound", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and len(err.strip().splitlines()) == 1


def test_bound_bad_graph_exits_2(capsys, tmp_path):
    p = tmp_path / "cyc.json"
    p.write_text(json.dumps({"nodes": [{"id": 0, "cost_ram": 1, "cost_cpu": 1}, {"id": 1, "cost_ram": 1, "cost_cpu": 1}],
                             "links": [{"source": 0, "target": 1}, {"source": 1, "target": 0}]}))
    assert memsched.cli.main.main(["bound", str(p)]) == 2
    assert "cycle" in capsys.readouterr().err


def test_bounds_on_shared_graphs_below_given_order(shared_data):
    from memsched.solvers.ordering.bounds import bound_report

    for f in sorted((shared_data / "graphs").glob("*/*.json")):
        g = load_graph(f)
        rep = bound_report(g)
        assert rep["lower_bound"] <= order_peak(g, g.given_order()), f.name
