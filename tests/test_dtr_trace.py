"""DTR log parser: record semantics, START handling, malformed lines."""
import json

import pytest

import memsched.cli.main
from memsched.instances.dtr_trace import COMPUTE, GET, PIN, RELEASE, TraceError, manifest_has_start, parse_trace, \
    parse_trace_lines
from dtr_lines import J, call, const


START = J(INSTRUCTION="ANNOTATE", ANNOTATION="START")


def test_records_and_schedule():
    lines = [START] + const("w", 8) + call("f", ["w"], ["a", "v"], 5, [100, 999], [-1, 0]) + [
        J(INSTRUCTION="COPY", DST="a2", SRC="a"),
        J(INSTRUCTION="MUTATE", NAME="relu_", ARGS=["a2", "w"], MUTATE=[0], TIME="3"),
        J(INSTRUCTION="RELEASE", NAME="a"),
        J(INSTRUCTION="RELEASE", NAME="nonexistent"),
        J(INSTRUCTION="ANNOTATE", ANNOTATION="BACKWARD"),
    ] + call("g", ["a2"], ["b"], 2, [50]) + [J(INSTRUCTION="COPY_FROM", DST="b", SRC="v")]
    tr = parse_trace_lines(lines, "t.log")
    names = [op.name for op in tr.ops]
    assert names == ["constant/0", "f/1", "relu_/2", "g/3"]
    f = tr.ops[1]
    assert f.sizes == (100, 0) and f.aliases == (-1, 0) and f.cost == 5  # alias size forced to 0
    mut = tr.ops[2]
    assert mut.sizes == (100,) and tr.tensor_names[mut.results[0]] == "a$"  # storage size of the arg
    assert not f.bwd and tr.ops[3].bwd
    a, v, amut, b = 1, 2, 3, 4
    assert tr.schedule == [
        (COMPUTE, 0), (PIN, 0), (COMPUTE, 1), (GET, a), (COMPUTE, 2), (RELEASE, a), (RELEASE, a),
        (COMPUTE, 3), (RELEASE, b), (GET, v),
        # end: names still referenced, in first-binding order: w, v, a2 (-> a$), b (-> v)
        (PIN, 0), (PIN, v), (PIN, amut), (PIN, v)]
    assert tr.storage_root(v) == 0


def test_start_drops_prefix_and_manifest(tmp_path):
    lines = const("junk", 4) + [START] + const("w", 8)
    assert [op.name for op in parse_trace_lines(lines, "x", start=True).ops] == ["constant/0"]
    assert len(parse_trace_lines(lines, "x", start=False).ops) == 2
    with pytest.raises(TraceError, match="no ANNOTATE START"):
        parse_trace_lines(const("w", 8), "x", start=True)
    log = tmp_path / "m.log"
    log.write_text("\n".join(lines) + "\n")
    assert manifest_has_start(log) is None
    (tmp_path / "manifest.json").write_text(json.dumps({"models": [{"log": "m.log", "has_start": False}]}))
    assert manifest_has_start(log) is False
    assert len(parse_trace(log).ops) == 2
    (tmp_path / "manifest.json").write_text(json.dumps({"models": [{"log": "m.log", "has_start": True}]}))
    assert len(parse_trace(log).ops) == 1


BAD = [
    (lambda L: L[:2] + ["{not json"] + L[2:], 3, "invalid JSON"),
    (lambda L: L + [J(INSTRUCTION="FROB")], 7, "unknown INSTRUCTION"),
    (lambda L: L + ["[1, 2]"], 7, "expected a JSON object"),
    (lambda L: L + [J(INSTRUCTION="RELEASE")], 7, "misses field 'NAME'"),
    (lambda L: L + [J(INSTRUCTION="CONSTANT", NAME="q")], 7, "followed by its MEMORY"),
    (lambda L: L + call("g", ["zz"], ["b"], 1, [4]), 7, "used before it is defined"),
    (lambda L: L + call("g", ["a"], ["b"], "x1", [4]), 7, "TIME must be an integer"),
    (lambda L: L + call("g", ["a"], ["b"], 1, [4], [3]), 9, "ALIAS 3 is not -1"),
    (lambda L: L + call("g", ["a"], ["b"], 1, [4])[:2], 7, "log ends before the ALIAS"),
    (lambda L: L + [J(INSTRUCTION="MEMORY", NAME="a", MEMORY="4")], 7, "does not follow"),
    (lambda L: L + [J(INSTRUCTION="MUTATE", NAME="m", ARGS=["a"], MUTATE=[2], TIME="1")], 7, "out of range"),
    (lambda L: L + [J(INSTRUCTION="COPY", DST="a", SRC="w")], 7, "already defined"),
    (lambda L: L + const("big", -5), 8, "non-negative"),
]


@pytest.mark.parametrize("mutate,line,msg", BAD)
def test_malformed_line_names_file_and_line(tmp_path, mutate, line, msg, capsys):
    good = [START] + const("w", 8) + call("f", ["w"], ["a"], 5, [100])
    assert len(good) == 6
    log = tmp_path / "bad.log"
    log.write_text("\n".join(mutate(good)) + "\n")
    with pytest.raises(TraceError) as ei:
        parse_trace(log, start=True)
    assert f"bad.log:{line}:" in str(ei.value) and msg in str(ei.value)
    rc = memsched.cli.main.main(["dtr", "replay", str(log)])
    err = capsys.readouterr().err
    assert rc == 2 and f"bad.log:{line}" in err and "Traceback" not in err


def test_missing_file_cli(tmp_path, capsys):
    rc = memsched.cli.main.main(["dtr", "replay", str(tmp_path / "nope.log")])
    assert rc == 2 and "no such file" in capsys.readouterr().err


def test_shared_traces_parse(shared_data):
    d = shared_data / "dtr-traces"
    man = json.loads((d / "manifest.json").read_text())
    for m in man["models"]:
        tr = parse_trace(d / m["log"])
        s = tr.summary()
        assert s["ops"] > 100 and s["constant_ops"] > 0
        # every name used as an argument was computed before (schedule is replayable in order)
        seen = set()
        for kind, x in tr.schedule:
            if kind == COMPUTE:
                assert all(a in seen for a in tr.ops[x].args)
                seen.update(tr.ops[x].results)
            else:
                assert x in seen
