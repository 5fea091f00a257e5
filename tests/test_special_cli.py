"""`memsched gadget` and `memsched remat --method sp-knapsack|width-dp` from the
command line: files, sidecar keys, JSON, and one clear error per bad input."""
from __future__ import annotations

import json

import pytest

import memsched.cli.main
from memsched.instances import load_graph


def run(argv, capsys):
    rc = memsched.cli.main.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("objective", ["compute", "peak"])
def test_knapsack_gadget_writes_instance_and_sidecar(tmp_path, capsys, objective):
    items = tmp_path / "items.json"
    items.write_text(json.dumps({"items": [{"size": 5, "cost": 3}, {"size": 4, "cost": 2}, {"size": 7, "cost": 6}],
                                 "capacity": 8}))
    out = tmp_path / "k.json"
    rc, text, _ = run(["gadget", "knapsack", "--items", str(items), "--objective", objective, "-o", str(out)], capsys)
    assert rc == 0 and "known optimum" in text
    side = json.loads((tmp_path / "k.json.answer.json").read_text())
    for key in ("items", "capacity", "objective", "knapsack_optimum", "optimum"):
        assert key in side
    assert side["objective"] == objective and side["items"][0] == {"size": 5, "cost": 3}
    g = load_graph(out)
    if objective == "compute":
        # max cost of kept items with size <= 8: {7} -> 6 beats {5} -> 3, {4} -> 2, {5,4} too big
        assert side["knapsack_optimum"] == 6
        rc, text, _ = run(["remat", str(out), "--method", "sp-knapsack", "--budget", str(side["budget"]), "--json"], capsys)
        assert rc == 0
        res = json.loads(text)
        assert res["status"] == "optimal" and res["compute"] == side["optimum"] and res["peak"] <= side["budget"]
        rc, text, _ = run(["remat", str(out), "--method", "width-dp", "--cap", "1", "--budget", str(side["budget"]),
                           "--json"], capsys)
        assert rc == 0 and json.loads(text)["compute"] == side["optimum"]
    else:
        # max size of recomputed items with cost <= 8: {4,7} (cost 2+6) = 11 beats {5,4} (cost 5) = 9
        assert side["knapsack_optimum"] == 11 and side["optimum"] == side["spine_peak_bytes"] + 16 - 11
        assert g.n_ops == 1 + 2 * 3 + 2 + 3


def test_random_3partition_gadget_json(tmp_path, capsys):
    out = tmp_path / "p.json"
    rc, text, _ = run(["gadget", "3partition", "--random", "6", "--seed", "2", "--cap", "2", "-o", str(out), "--json"], capsys)
    assert rc == 0
    ans = json.loads(text)
    assert ans["answer"] in ("YES", "NO") and len(ans["numbers"]) == 6 and ans["cap"] == 2
    assert json.loads((tmp_path / "p.json.answer.json").read_text()) == ans
    if ans["answer"] == "YES":
        sched = tmp_path / "w.json"
        sched.write_text(json.dumps({"events": ans["witness"]}))
        rc, text, _ = run(["eval", str(out), str(sched), "--json"], capsys)
        assert rc == 0 and json.loads(text)["peak"] <= ans["budget"]


def test_gadget_is_deterministic(capsys):
    a = run(["gadget", "knapsack", "--random", "7", "--seed", "5", "--json"], capsys)[1]
    b = run(["gadget", "knapsack", "--random", "7", "--seed", "5", "--json"], capsys)[1]
    assert a == b


@pytest.mark.parametrize("payload,msg", [
    ({"items": [{"size": -3, "cost": 1}], "capacity": 4}, "item #0 size must be non-negative, got -3"),
    ({"items": [{"size": 3, "cost": 1}], "capacity": -1}, "capacity W must be non-negative, got -1"),
    ({"items": [{"size": 3}], "capacity": 1}, "needs 'size' and 'cost'"),
])
def test_bad_items_one_line_exit_2(tmp_path, capsys, payload, msg):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(payload))
    rc, out, err = run(["gadget", "knapsack", "--items", str(f)], capsys)
    assert rc == 2 and msg in err and str(f) in err and len(err.strip().splitlines()) == 1


def test_items_and_random_are_exclusive(capsys):
    rc, _, err = run(["gadget", "knapsack"], capsys)
    assert rc == 2 and "exactly one of --items FILE or --random N" in err


def test_non_sp_graph_to_sp_solver_exit_2(tmp_path, capsys):
    from memsched.formulations import Graph
    from memsched.instances.formats import save_graph

    g = Graph.from_single_output([("s", 1, 1), ("a", 1, 1), ("b", 1, 1), ("t", 1, 1)],
                                 [("s", "a"), ("s", "b"), ("a", "b"), ("a", "t"), ("b", "t")], name="bridge")
    f = tmp_path / "bridge.json"
    save_graph(g, f)
    rc, _, err = run(["remat", str(f), "--method", "sp-knapsack", "--budget", "10"], capsys)
    assert rc == 2 and "not series-parallel" in err and len(err.strip().splitlines()) == 1
