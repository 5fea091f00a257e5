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
