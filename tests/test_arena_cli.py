"""``memsched arena``: CSV and graph inputs, --json keys, the picture, bad input = one line + exit 2."""
from __future__ import annotations

import json

import pytest

import memsched.cli.main
from memsched.formulations import Schedule, evaluate
from memsched.instances import SHIPPED, load_graph
from memsched.instances.arena_csv import ArenaInputError, Buffer, parse_arena_csv, read_arena_csv, write_arena_csv
from memsched.solvers.arena import check_placement


def run(argv, capsys):
    rc = memsched.cli.main.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


GOOD = "id,lower,upper,size\n0,0,2,4\n1,1,3,4\n2,2,4,4\n3,0,4,2\n"


def test_csv_json_keys_and_checked_offsets(tmp_path, capsys):
    p = tmp_path / "b.csv"
    p.write_text(GOOD)
    rc, out, err = run(["arena", str(p), "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert {"status", "arena_size", "lower_bound", "offsets", "wall_s"} <= set(d)
    bufs = read_arena_csv(p)
    offs = [d["offsets"][b.id] for b in bufs]
    assert check_placement(bufs, offs) == d["arena_size"] == 10 == d["lower_bound"]
    assert d["status"] == "optimal"


def test_capacity_statuses(tmp_path, capsys):
    p = tmp_path / "b.csv"
    p.write_text(GOOD)
    rc, out, _ = run(["arena", str(p), "--capacity", "9", "--json"], capsys)
    assert rc == 0 and json.loads(out)["status"] == "infeasible" and json.loads(out)["offsets"] == {}
    rc, out, _ = run(["arena", str(p), "--capacity", "12", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["status"] in ("feasible", "optimal") and d["arena_size"] <= 12
    rc, out, _ = run(["arena", str(p), "--capacity", "12", "--minimize", "--json"], capsys)
    assert json.loads(out)["arena_size"] == 10 and json.loads(out)["status"] == "optimal"


def test_text_output_and_plot(tmp_path, capsys):
    p = tmp_path / "b.csv"
    p.write_text(GOOD)
    png = tmp_path / "arena.png"
    rc, out, _ = run(["arena", str(p), "--plot", str(png), "--offsets"], capsys)
    assert rc == 0 and "optimal" in out and "offset" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graph_input_names_tensors_and_bound_is_peak(capsys):
    path = SHIPPED / "unet_small.json"
    rc, out, err = run(["arena", str(path), "--method", "best", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    g = load_graph(path)
    names = {t.name for t in g.tensors}
    assert d["offsets"] and all(k.split("#")[0] in names or ":workspace@" in k for k in d["offsets"])
    assert d["lower_bound"] >= d["peak"] and d["arena_size"] >= d["lower_bound"]
    assert d["max_live"] == d["peak"]


@pytest.mark.parametrize("text, needle", [
    ("", "empty file"),
    ("id,lower,size\n0,0,1\n", "header lacks column 'upper'"),
    ("id,lower,upper,size\n0,0,2\n", ":2: expected 4 fields"),
    ("id,lower,upper,size\n0,0,x,3\n", ":2: column 'upper' must be an integer"),
    ("id,lower,upper,size\n0,3,3,3\n", ":2: lower 3 must be < upper 3"),
    ("id,lower,upper,size\n0,0,3,-1\n", ":2: size must be >= 0"),
    ("id,lower,upper,size\n0,0,3,1\n\n0,1,2,1\n", ":4: buffer id '0' already defined on line 2"),
])
def test_bad_csv_one_line_exit_2(tmp_path, capsys, text, needle):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    rc, out, err = run(["arena", str(p)], capsys)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(p) in lines[0] and needle in lines[0], err


def test_bad_options_exit_2(tmp_path, capsys):
    p = tmp_path / "b.csv"
    p.write_text(GOOD)
    for argv in (["arena", str(tmp_path / "missing.csv")], ["arena", str(p), "--capacity", "-3"],
                 ["arena", str(p), "--time-limit", "0"], ["arena", str(p), "--method", "exact"],
                 ["arena", str(p), "--plot", str(tmp_path / "x.nope")]):
        rc, out, err = run(argv, capsys)
        assert rc == 2 and len(err.strip().splitlines()) == 1, (argv, err)


def test_csv_round_trip(tmp_path):
    bufs = [Buffer("a", 0, 3, 7), Buffer("b", 2, 5, 1)]
    write_arena_csv(bufs, tmp_path / "r.csv", offsets=[0, 7])
    assert read_arena_csv(tmp_path / "r.csv") == bufs
    with pytest.raises(ArenaInputError, match="<csv>:1"):
        parse_arena_csv("lower,upper\n")


def test_executor_plan_uses_the_planner():
    from memsched.solvers.executors.arena import plan_arena

    g = load_graph(SHIPPED / "unet_small.json")
    s = Schedule.from_order(g, g.given_order())
    plan = plan_arena(g, s)
    assert plan.size >= evaluate(g, s).peak == plan.lower_bound
    assert plan.status in ("optimal", "feasible")
    assert plan.method == "arena-search" and plan.extra["proven_bound"] >= plan.lower_bound
    assert (plan.status == "optimal") == (plan.size == plan.extra["proven_bound"])


def _shipped_graphs():
    files = sorted(SHIPPED.glob("*.json")) + sorted((SHIPPED / "models").glob("*.json"))
    # the four largest (over 1,000 buffers in the given order) only with -m slow
    big = {"deeplabv3_train", "inception_v3_infer", "inception_v3_train", "resnet50_train"}
    return [pytest.param(f, id=f.stem, marks=(pytest.mark.slow,) if f.stem in big else ()) for f in files]


@pytest.mark.parametrize("path", _shipped_graphs())
def test_executors_and_arena_command_plan_identically(path):
    """Issue 16: the executors have no planner of their own. On every shipped graph (given order)
    the executors' best-fit plan and `memsched arena`'s greedy plan (the CLI's buffers, named by
    tensor) are the same offsets, and both are accepted by the independent checker."""
    from memsched.cli.arena import graph_buffers
    from memsched.solvers.arena.greedy import best_greedy
    from memsched.solvers.executors.arena import best_fit, buffers_of, plan_arena

    g = load_graph(path)
    s = Schedule.from_order(g, g.given_order())
    peak = evaluate(g, s).peak
    plan = plan_arena(g, s, method="best-fit")
    named = graph_buffers(g, s)
    _, off, top = best_greedy(named, stop_at=peak)
    assert plan.offsets == list(off) and plan.size == top
    assert best_fit(buffers_of(g, s)) == (list(off), top)
    assert check_placement(named, plan.offsets) == plan.size >= peak == plan.lower_bound
