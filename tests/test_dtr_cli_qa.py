"""`memsched dtr ...` as a user drives it (QA pass, 2026-12-04): broken traces, bad options
and results files are one line `memsched dtr: error: ...` and exit 2 (never a traceback,
never a silently wrong answer); the sweep's ratios mean what `dtr replay --ratio` means."""
import json

import pytest

from test_cli_pressure import one_error_line, run
from test_dtr_sweep_harness import synth_file

CONST = ['{"INSTRUCTION":"CONSTANT","NAME":"a"}', '{"INSTRUCTION":"MEMORY","MEMORY":"100","NAME":"a"}']


def call(name, args, result, time="5", size="100"):
    """A CALL record and, per result, its MEMORY and ALIAS records."""
    lines = [json.dumps({"INSTRUCTION": "CALL", "NAME": name, "ARGS": args, "RESULT": result, "TIME": time})]
    for r in result:
        lines += [json.dumps({"INSTRUCTION": "MEMORY", "MEMORY": size, "NAME": r}),
                  json.dumps({"INSTRUCTION": "ALIAS", "ALIAS": "-1", "NAME": r})]
    return lines


def write(tmp_path, lines, name="t.log"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


# ------------------------------------------------------------------ broken traces
@pytest.mark.parametrize("record", [
    '{"INSTRUCTION":"CALL","NAME":"f","ARGS":["a"],"RESULT":[],"TIME":"5"}',
    '{"INSTRUCTION":"MUTATE","NAME":"f_","ARGS":["a"],"MUTATE":[],"TIME":"5"}',
])
@pytest.mark.parametrize("cmd", [["replay"], ["sweep", "--step", "0.1", "-q", "--jobs", "1"], ["to-graph", "-o", "g.json"]])
def test_an_operator_without_results_is_a_trace_error(tmp_path, capsys, monkeypatch, record, cmd):
    """A CALL with an empty RESULT list (or a MUTATE of no argument) has no output to
    materialize: the replay crashed with IndexError (sweep: outcome 'error' rows)."""
    monkeypatch.chdir(tmp_path)
    p = write(tmp_path, CONST + [record])
    rc, out, err = run(capsys, "dtr", cmd[0], p, *cmd[1:])
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, f"{p}:3:", "no result")


@pytest.mark.parametrize("field", ["TIME", "MEMORY"])
@pytest.mark.parametrize("cmd", [["replay"], ["replay", "--allocator", "best-fit"],
                                 ["sweep", "--step", "0.1", "-q", "--jobs", "1"]])
def test_sizes_and_times_past_int64_are_a_trace_error(tmp_path, capsys, field, cmd):
    """Huge TIME or MEMORY values overflowed the runtime's int64 tables: a traceback
    (OverflowError) in replay, a sweep of 'error' rows with exit 0."""
    big = str(10 ** 26)
    lines = CONST + call("f", ["a"], ["c"], time=big if field == "TIME" else "5",
                         size=big if field == "MEMORY" else "100")
    p = write(tmp_path, lines)
    rc, out, err = run(capsys, "dtr", cmd[0], p, *cmd[1:])
    assert rc == 2 and out == "", (out, err)
    line = one_error_line(err, f"{p}:")
    assert "2**63" in line, line


def test_totals_past_int64_are_a_trace_error(tmp_path, capsys):
    """Each value fits int64, their sum does not: refused at the record that crosses."""
    lines = CONST + call("f", ["a"], ["b"], time=str(6 * 10 ** 18)) + call("g", ["b"], ["c"], time=str(6 * 10 ** 18))
    p = write(tmp_path, lines)
    rc, out, err = run(capsys, "dtr", "replay", p)
    assert rc == 2 and out == ""
    one_error_line(err, f"{p}:6:", "TIME")


# ------------------------------------------------------------------ sweep options
@pytest.mark.parametrize("argv,needle", [
    (["--hi", "inf"], "finite"),
    (["--lo", "inf", "--hi", "inf"], "finite"),
    (["--lo", "0.00001", "--hi", "0.00002"], "no multiple of --resolution"),
    (["--lo", "0.31", "--hi", "0.39", "--resolution", "0.1"], "no multiple of --resolution"),
])
def test_sweep_range_without_samples_is_refused(tmp_path, capsys, argv, needle):
    """--hi inf crashed (OverflowError); a range holding no multiple of the resolution
    sampled ratio 0 ('budget ratio must be positive') or ratios outside the range."""
    trace = synth_file(tmp_path, 8, 2)
    rc, out, err = run(capsys, "dtr", "sweep", trace, "-q", "--jobs", "1", *argv)
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, needle)


@pytest.mark.parametrize("lo,hi,res", [("0.14", "0.46", "0.1"), ("0.1", "1.0", "0.3"), ("0.105", "0.2", "0.01")])
def test_sweep_samples_only_inside_lo_hi(tmp_path, capsys, lo, hi, res):
    """Ratios are multiples of the resolution inside [lo, hi] (round() took 0.1 and 0.5 for
    [0.14, 0.46] and ratio 0 for --lo 0.1 --resolution 0.3)."""
    trace = synth_file(tmp_path, 8, 2)
    rc, out, err = run(capsys, "dtr", "sweep", trace, "-q", "--jobs", "1", "--lo", lo, "--hi", hi,
                       "--resolution", res, "--json")
    assert rc == 0, err
    d = json.loads(out)
    ratios = [p["ratio"] for p in d["points"]]
    assert ratios and all(float(lo) <= r <= float(hi) for r in ratios), ratios


def test_sweep_says_lo_is_feasible_when_the_first_sample_is(tmp_path, capsys):
    """--lo off the resolution grid: the first sample is the next multiple, and when it is
    feasible the report says so (it printed a plain smallest feasible ratio)."""
    trace = synth_file(tmp_path, 8, 2)
    rc, out, err = run(capsys, "dtr", "sweep", trace, "-q", "--jobs", "1", "--lo", "0.905", "--hi", "1.0",
                       "--resolution", "0.01")
    assert rc == 0, err
    assert "smallest feasible ratio: <= 0.91 (the sweep's --lo is already feasible" in out, out


# ------------------------------------------------------------------ consistency
def edge_trace(tmp_path):
    """Baseline memory 1000 B; DTR fits iff the budget is >= 140 B (the 100 B constant and
    one 40 B output at a time: the outputs are never read again, so evicting them is free)."""
    lines = list(CONST)
    for i in range(22):
        lines += call("g", ["a"], [f"d{i}"], size="40")
    lines += call("g", ["a"], ["e"], size="20")
    lines += [json.dumps({"INSTRUCTION": "RELEASE", "NAME": n}) for n in [f"d{i}" for i in range(22)] + ["e"]]
    return write(tmp_path, lines, "edge.log")


@pytest.mark.parametrize("res", ["0.0007", "0.0014", "0.007"])
def test_sweep_ratio_is_the_replay_ratio(tmp_path, capsys, res):
    """The sweep's sample printed as ratio 0.14 is `dtr replay --ratio 0.14`: the same
    budget and outcome. It was replayed at k x resolution = 0.13999999999999999 (budget
    139 B, oom) while `dtr replay --ratio 0.14` gives budget 140 B (ok)."""
    trace = edge_trace(tmp_path)
    rc, out, err = run(capsys, "dtr", "replay", trace, "--ratio", "0.14", "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert (rep["budget"], rep["outcome"]) == (140, "ok")
    rc, out, err = run(capsys, "dtr", "sweep", trace, "-q", "--jobs", "1", "--lo", "0.12", "--hi", "0.16",
                       "--resolution", res, "--json", "--results", tmp_path / "r.jsonl")
    assert rc == 0, err
    d = json.loads(out)
    p = next(p for p in d["points"] if p["ratio"] == 0.14)
    assert (p["budget"], p["outcome"]) == (rep["budget"], rep["outcome"])
    assert d["min_feasible_ratio"] == 0.14
    rows = [json.loads(ln) for ln in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert all(r["budget"] == 140 for r in rows if r["ratio"] == 0.14)


# ------------------------------------------------------------------ replay options
def test_replay_refuses_ratio_and_budget_bytes_together(tmp_path, capsys):
    """--ratio 0.5 --budget-bytes 100 replayed at 100 B and printed 'ratio -': the
    ratio was dropped without a word."""
    trace = synth_file(tmp_path, 8, 2)
    rc, out, err = run(capsys, "dtr", "replay", trace, "--ratio", "0.5", "--budget-bytes", "100")
    assert rc == 2 and out == ""
    one_error_line(err, "--ratio", "--budget-bytes")


def test_replay_of_a_graph_refuses_an_allocator(tmp_path, capsys):
    """`dtr replay GRAPH --allocator best-fit` ran byte counting and said nothing."""
    from memsched.instances.formats import save_graph
    from memsched.instances.dtr_trace import parse_trace
    from memsched.solvers.dtr.graph import trace_to_graph

    g = tmp_path / "g.json"
    save_graph(trace_to_graph(parse_trace(synth_file(tmp_path, 8, 2))), g)
    rc, out, err = run(capsys, "dtr", "replay", g, "--ratio", "0.5")
    assert rc == 0, err
    rc, out, err = run(capsys, "dtr", "replay", g, "--ratio", "0.5", "--allocator", "best-fit")
    assert rc == 2 and out == ""
    one_error_line(err, "--allocator", "graph")


# ------------------------------------------------------------------ report
@pytest.mark.parametrize("edit", [
    lambda r: r.update(ratio="abc"), lambda r: r.pop("ratio"), lambda r: r.update(ratio=None),
    lambda r: r.update(outcome=None), lambda r: r.pop("outcome"), lambda r: r.update(ratio=float("nan")),
])
def test_report_names_a_malformed_row(tmp_path, capsys, edit):
    """A dtr_replay row without a numeric ratio crashed `dtr report` (ValueError, KeyError);
    one without an outcome was counted as a sample of outcome null."""
    trace = synth_file(tmp_path, 8, 2)
    res = tmp_path / "r.jsonl"
    rc, out, err = run(capsys, "dtr", "sweep", trace, "-q", "--jobs", "1", "--step", "0.3", "--resolution", "0.01", "--results", res)
    assert rc == 0, err
    rows = [json.loads(ln) for ln in res.read_text().splitlines()]
    edit(rows[1])
    res.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, out, err = run(capsys, "dtr", "report", res)
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, str(res), rows[1]["key"])


@pytest.mark.parametrize("cmd", [["replay"], ["sweep", "--step", "0.1", "-q", "--jobs", "1"], ["to-graph", "-o", "g.json"],
                                 ["explain", "--budget", "0.5", "--vs", "0.6"]])
def test_a_non_utf8_byte_names_its_line(tmp_path, capsys, monkeypatch, cmd):
    """A stray byte deep in a log said only 'position 123' of the whole file."""
    monkeypatch.chdir(tmp_path)
    lines = CONST + call("f", ["a"], ["c"])
    p = tmp_path / "bad.log"
    data = ("\n".join(lines) + "\n").encode()
    i = data.index(b'"f"')
    p.write_bytes(data[:i + 1] + b"\xff" + data[i + 2:])  # the op name of line 3
    rc, out, err = run(capsys, "dtr", cmd[0], p, *cmd[1:])
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, f"{p}:3:", "UTF-8")


# ------------------------------------------------------------------ explain
def test_explain_with_an_allocator_refuses_vs(tmp_path, capsys):
    """`explain --allocator first-fit --vs R` explained --budget alone and dropped --vs
    without a word (the address-aware explanation has no second budget)."""
    trace = synth_file(tmp_path, 12, 3)
    rc, out, err = run(capsys, "dtr", "explain", trace, "--budget", "0.4", "--vs", "0.5", "--allocator", "first-fit",
                       "--max-pins", "1")
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, "--vs", "--allocator")


# ------------------------------------------------------------------ Ctrl-C
@pytest.mark.parametrize("extra", [
    [], ["--plot", "map.png"], ["--fsync"], ["--json"], ["-q"], ["--step", "0.05", "--early-stop"],
    ["--allocator", "best-fit", "--no-share", "--refine", "bisect", "--overhead-limit", "inf"],
])
def test_resume_hint_is_the_same_sweep(extra):
    """The command printed after Ctrl-C parses to the interrupted sweep's options plus
    --resume (it dropped --plot and --fsync: the resumed run wrote no map)."""
    import shlex

    from memsched.cli.dtr import _sweep_command
    from memsched.cli.main import build_parser

    argv = ["dtr", "sweep", "a.log", "b.log", "--heuristic", "dtr,lru", "--lo", "0.2", "--hi", "0.4",
            "--jobs", "1", "--results", "r.jsonl", *extra]
    args = build_parser().parse_args(argv)
    hint = shlex.split(_sweep_command(args, "r.jsonl"))
    assert hint[0] == "memsched"
    again = build_parser().parse_args(hint[1:])
    want = dict(vars(args), resume=True)
    got = vars(again)
    keys = [k for k in want if not callable(want[k]) and k != "dtr_parser"]
    assert {k: got.get(k) for k in keys} == {k: want[k] for k in keys}


@pytest.mark.parametrize("cmd", [["sweep", "--step", "0.1", "-q", "--jobs", "1"], ["to-graph", "-o", "out.json"],
                                 ["explain", "--budget", "0.5", "--vs", "0.6"]])
def test_a_graph_given_for_a_trace_is_named(tmp_path, capsys, monkeypatch, cmd):
    """A memsched graph passed where a DTR log is needed said 'g.json:1: invalid JSON:
    Expecting property name enclosed in double quotes'."""
    from memsched.instances.dtr_trace import parse_trace
    from memsched.instances.formats import save_graph
    from memsched.solvers.dtr.graph import trace_to_graph

    monkeypatch.chdir(tmp_path)
    g = tmp_path / "g.json"
    save_graph(trace_to_graph(parse_trace(synth_file(tmp_path, 8, 2))), g)
    rc, out, err = run(capsys, "dtr", cmd[0], g, *cmd[1:])
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, str(g), "memsched graph", "DTR log")


def test_a_bad_first_record_is_still_a_trace_error(tmp_path, capsys):
    """A log whose first record lacks INSTRUCTION is no graph: the parser's line."""
    p = write(tmp_path, ['{"X": 1}'] + CONST)
    rc, out, err = run(capsys, "dtr", "sweep", p, "--step", "0.1", "-q", "--jobs", "1")
    assert rc == 2 and out == ""
    one_error_line(err, f"{p}:1:", "INSTRUCTION")


def test_a_trace_named_twice_is_swept_once(tmp_path, capsys):
    """The same (trace file, heuristic) named twice (also by another path) was swept twice
    and printed twice."""
    trace = synth_file(tmp_path, 8, 2)
    other = tmp_path / "." / trace.name
    rc, out, err = run(capsys, "dtr", "sweep", trace, other, "--heuristic", "dtr,dtr", "--step", "0.1",
                       "--json", "-q")
    assert rc == 0, err
    assert len([ln for ln in out.splitlines() if ln.strip()]) == 1
