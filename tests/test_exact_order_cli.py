"""CLI: ``memsched order --exact`` certificates on shipped and shared graphs."""
import json

import pytest

import memsched.cli.main
from memsched.instances import SHIPPED, load_graph
from memsched.formulations import order_peak


def _shipped():
    files = sorted(SHIPPED.glob("*.json"))
    if not files:
        pytest.skip("no shipped instances")
    return files


def test_order_exact_json_fields(capsys):
    path = str(next((f for f in _shipped() if f.name.startswith("multi_output")), _shipped()[0]))
    assert memsched.cli.main.main(["order", path, "--exact", "--json", "--workers", "1", "--time-limit", "20"]) == 0
    d = json.loads(capsys.readouterr().out)
    for k in ("status", "peak", "lower_bound", "gap", "certified", "order", "wall_s"):
        assert k in d
    assert d["status"] in ("optimal", "feasible", "timeout")
    assert d["certified"] == (d["peak"] == d["lower_bound"])
    assert (d["status"] == "optimal") == d["certified"]
    g = load_graph(path)
    assert order_peak(g, [g.op_index[n] for n in d["order"]]) == d["peak"]


def test_order_exact_human(capsys):
    path = str(next((f for f in _shipped() if f.name.startswith("multi_output")), _shipped()[0]))
    assert memsched.cli.main.main(["order", path, "--exact", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "lower bound" in out


def test_order_exact_bad_file(capsys, tmp_path):
    assert memsched.cli.main.main(["order", str(tmp_path / "missing.json"), "--exact"]) == 2


def test_checkmate_graphs_certified(shared_data, capsys):
    files = sorted((shared_data / "graphs" / "checkmate").glob("*.json"))
    assert files
    for f in files:
        assert memsched.cli.main.main(["order", str(f), "--exact", "--json", "--workers", "1"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["certified"] and d["status"] == "optimal" and d["gap"] == 0.0, f.name


def test_random_layered_n100_certified(shared_data, capsys):
    """Moccasin's random_layered_n100: the issue quotes 36790 as its optimal peak."""
    f = next((shared_data / "graphs" / "random_layered").glob("random_layered_n100*.json"))
    assert memsched.cli.main.main(["order", str(f), "--exact", "--json", "--workers", "1", "--time-limit", "60"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["certified"] and d["peak"] == d["lower_bound"] == 36790
