"""CLI: info / eval / order happy paths and broken inputs (one line on stderr, exit 2)."""
import json

import pytest

import memsched.cli.main
from memsched.instances import SHIPPED, graph_to_json
from memsched.instances.generators import chain, tree


def run(capsys, *argv):
    rc = memsched.cli.main.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def _native_chain():
    return graph_to_json(chain(3, size=10))


@pytest.mark.parametrize("make, pattern", [
    (lambda d: d["operators"].__setitem__(0, {**d["operators"][0], "inputs": ["v2"]}), "cycle"),
    (lambda d: d["operators"][1].pop("outputs"), "missing field 'outputs'"),
    (lambda d: d["tensors"][1].__setitem__("size", -7), "tensor 'v1': size must be non-negative"),
    (lambda d: d["tensors"][1].__setitem__("size", 2.5), "tensor 'v1'"),
    (lambda d: d["operators"][2].__setitem__("cost", float("nan")), "operator 'v2': cost"),
    (lambda d: d["operators"][2].__setitem__("inputs", ["ghost"]), "'ghost' does not exist"),
    (lambda d: d["operators"][2].__setitem__("name", "v0"), "operator 'v0': duplicate name"),
    (lambda d: d.pop("tensors"), "missing field 'tensors'"),
])
@pytest.mark.parametrize("command", ["info", "order", "eval"])
def test_broken_graphs_exit_2_with_one_line(tmp_path, capsys, make, pattern, command):
    d = _native_chain()
    make(d)
    p = _write(tmp_path, "g.json", json.dumps(d))
    s = _write(tmp_path, "s.json", {"order": ["v0", "v1", "v2"]})
    argv = [command, p] + ([s] if command == "eval" else [])
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"memsched {command}: error:" in err and "g.json" in err
    assert pattern in err


def test_bad_json_names_line_and_column(tmp_path, capsys):
    p = _write(tmp_path, "g.json", '{\n  "format": "memsched-graph",\n  "version": 1,,\n}')
    rc, out, err = run(capsys, "info", p)
    assert rc == 2 and err.count("\n") == 1
    assert "g.json:3:" in err and "invalid JSON" in err


def test_unknown_method_and_missing_file(tmp_path, capsys):
    rc, out, err = run(capsys, "order", SHIPPED / "chain_12.json", "--method", "magic")
    assert rc == 2 and err.count("\n") == 1 and "unknown ordering method 'magic'" in err and "lpmf" in err
    rc, out, err = run(capsys, "order", SHIPPED / "random_layered_n30.json", "--method", "liu")
    assert rc == 2 and err.count("\n") == 1 and "in-tree" in err
    rc, out, err = run(capsys, "info", tmp_path / "none.json")
    assert rc == 2 and err.count("\n") == 1 and "no such file" in err


def test_invalid_schedule_exits_2(tmp_path, capsys):
    g = _write(tmp_path, "g.json", _native_chain())
    s = _write(tmp_path, "s.json", {"events": [["compute", "v0"], ["free", "v0"], ["compute", "v1"], ["compute", "v2"]]})
    rc, out, err = run(capsys, "eval", g, s)
    assert rc == 2 and err.count("\n") == 1 and "v1" in err and "not resident" in err
    s = _write(tmp_path, "s2.json", {"order": ["v0", "nope"]})
    rc, out, err = run(capsys, "eval", g, s)
    assert rc == 2 and "unknown operator 'nope'" in err


def test_order_json_then_eval_roundtrip(tmp_path, capsys):
    g = SHIPPED / "tree_15.json"
    rc, out, err = run(capsys, "order", g, "--method", "liu", "--json")
    assert rc == 0
    d = json.loads(out)
    assert {"status", "peak", "compute", "method", "wall_s", "order"} <= d.keys()
    assert d["status"] == "optimal" and d["method"] == "liu" and isinstance(d["peak"], int)
    s = _write(tmp_path, "o.json", out)
    rc, out2, err = run(capsys, "eval", g, s, "--json")
    assert rc == 0
    e = json.loads(out2)
    assert e["peak"] == d["peak"] and e["status"] == "valid" and e["order"] == d["order"]
    rc, out3, err = run(capsys, "eval", g, s)
    assert rc == 0 and str(d["peak"]) in out3


@pytest.mark.parametrize("path", sorted(SHIPPED.glob("*.json")), ids=lambda p: p.stem)
def test_info_and_order_on_every_shipped_instance(capsys, path):
    rc, out, err = run(capsys, "info", path, "--json")
    assert rc == 0
    info = json.loads(out)
    assert {"status", "peak", "compute", "method", "wall_s", "operators"} <= info.keys()
    rc, out, err = run(capsys, "order", path)
    assert rc == 0 and "peak" in out and "order:" in out
    rc, out, err = run(capsys, "order", path, "--json", "--method", "best")
    d = json.loads(out)
    assert d["peak"] <= info["peak"]


def test_node_link_input_is_accepted(tmp_path, capsys):
    from memsched.instances.formats import graph_to_node_link

    p = _write(tmp_path, "nl.json", graph_to_node_link(tree(10, seed=1)))
    rc, out, err = run(capsys, "order", p, "--json", "--method", "liu")
    assert rc == 0 and json.loads(out)["status"] == "optimal"
