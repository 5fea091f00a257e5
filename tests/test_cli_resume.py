"""Resume never loses a run (issue 19): a last line without its newline is a torn write,
not a finished run; --fsync; a per-run memory cap with its own outcome."""
import json
import os

import pytest

import memsched.cli.main
from memsched.solvers.harness import run_sweep
from memsched.solvers.pool.store import ResultStore, read_rows
from test_dtr_sweep_harness import KW, synth_file

SPEC = """
name = "res"
time_limit = 2
[[instances]]
generator = "chain"
grid = { n = [4, 5, 6] }
[[solvers]]
solver = "given"
"""


def _spec(tmp_path, text=SPEC):
    p = tmp_path / "spec.toml"
    p.write_text(text)
    return p


def test_done_keys_ignores_a_torn_last_line_even_when_it_parses(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"key": "a"}\n{"key": "b"}')  # "b" was cut right before its newline
    st = ResultStore(p)
    assert st.done_keys() == {"a"}
    assert [r["key"] for r in read_rows(p)] == ["a", "b"]  # a report still shows what is there
    st.open(resume=True)
    st.append({"key": "c"})
    st.close()
    assert p.read_text() == '{"key": "a"}\n{"key":"c"}\n'


def test_harness_resume_reruns_the_run_whose_line_was_torn(tmp_path):
    out = tmp_path / "r.jsonl"
    s = run_sweep(_spec(tmp_path), out, jobs=1, progress=False)
    assert s.executed == 3
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines))  # the last row lost its newline: a torn write
    torn_key = json.loads(lines[-1])["key"]
    s2 = run_sweep(_spec(tmp_path), out, jobs=1, progress=False, resume=True)
    assert s2.skipped == 2 and s2.executed == 1
    rows = read_rows(out)
    assert sorted(r["key"] for r in rows) == sorted(json.loads(x)["key"] for x in lines)
    assert [r["key"] for r in rows].count(torn_key) == 1


def test_dtr_sweep_resume_does_not_reuse_a_torn_line(tmp_path):
    from memsched.solvers.dtr.sweep import sweep

    p = synth_file(tmp_path, 8, 5)
    out = tmp_path / "d.jsonl"
    ref = sweep(p, "dtr", jobs=1, results=out, **KW)
    text = out.read_text()
    out.write_text(text.rstrip("\n"))  # torn last line
    again = sweep(p, "dtr", jobs=1, results=out, resume=True, **KW)
    # rows: the replays and the samples derived from equal replays' budget intervals
    assert again.reused == ref.replays + ref.derived - 1 and again.replays + again.derived == 1
    assert [(q.ratio, q.outcome) for q in again.points] == [(q.ratio, q.outcome) for q in ref.points]
    assert out.read_text().endswith("\n") and len(read_rows(out)) == ref.replays + ref.derived


def test_fsync_option_syncs_every_row(tmp_path, monkeypatch, capsys):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    out = tmp_path / "r.jsonl"
    rc = memsched.cli.main.main(["bench", str(_spec(tmp_path)), "-o", str(out), "-q", "--fsync"])
    assert rc == 0 and len(calls) == 3
    calls.clear()
    rc = memsched.cli.main.main(["bench", str(_spec(tmp_path)), "-o", str(tmp_path / "r2.jsonl"), "-q"])
    assert rc == 0 and calls == []


MEM_SPEC = """
name = "mem"
time_limit = 20
[[instances]]
generator = "chain"
params = { n = 4 }
[[solvers]]
solver = "debug.alloc"
label = "big"
params = { nbytes = 1_500_000_000 }
[[solvers]]
solver = "debug.alloc"
label = "small"
params = { nbytes = 1_000_000 }
"""


def test_memory_cap_gives_its_own_outcome_and_the_sweep_goes_on(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    spec = _spec(tmp_path, MEM_SPEC)
    rc = memsched.cli.main.main(["bench", str(spec), "-o", str(out), "-q", "--memory-limit", "1GiB", "--jobs", "1"])
    assert rc == 0
    rows = {r["solver"]: r for r in read_rows(out)}
    assert rows["big"]["status"] == "memory", rows["big"]
    assert "memory cap" in rows["big"]["message"] and str(1 << 30) in rows["big"]["message"]
    assert rows["small"]["status"] != "memory", rows["small"]  # the worker recovered: next run fine
    # without a cap the same run is not "memory"
    out2 = tmp_path / "r2.jsonl"
    rc = memsched.cli.main.main(["bench", str(spec), "-o", str(out2), "-q", "--jobs", "1"])
    assert rc == 0
    assert all(r["status"] != "memory" for r in read_rows(out2))


@pytest.mark.parametrize("bad", ["0", "-1", "0.5", "lots"])
def test_memory_limit_must_be_bytes(tmp_path, capsys, bad):
    with pytest.raises(SystemExit) as e:
        memsched.cli.main.main(["bench", str(_spec(tmp_path)), "-o", str(tmp_path / "r.jsonl"),
                                f"--memory-limit={bad}"])
    assert e.value.code == 2
    assert "--memory-limit" in capsys.readouterr().err
