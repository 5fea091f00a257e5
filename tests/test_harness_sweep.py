"""Sweeps on the local process pool: rows, hard limits, crashes, SIGKILL + resume."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memsched.cli.main
from memsched.formulations import Schedule, evaluate
from memsched.solvers.harness import run_sweep
from memsched.solvers.harness.report import final_table, load_results
from memsched.solvers.harness.spec import load_source
from memsched.solvers.pool.store import read_rows

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
name = "mix"
time_limit = 2
[[instances]]
generator = "random_dag"
grid = { n = [7, 10] }
seeds = [0, 1]
[[instances]]
generator = "tree"
params = { n = 9, seed = 4 }
[[solvers]]
solver = "given"
[[solvers]]
solver = "order"
grid = { method = ["dfs", "lpmf", "greedy"] }
[[solvers]]
solver = "debug.crash"
params = { only = "tree9_s4", code = -11 }
[[solvers]]
solver = "debug.hang"
params = { only = "dag7_s1" }
time_limit = 0.2
hard_limit = 0.6
[[solvers]]
solver = "debug.raise"
params = { only = "dag10_s0", message = "boom" }
[[solvers]]
solver = "no.such.module:solve"
"""


def _spec(tmp_path, text=SPEC, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_sweep_records_every_run_and_survives_crash_hang_raise(tmp_path):
    out = tmp_path / "r.jsonl"
    s = run_sweep(_spec(tmp_path), out, jobs=2, progress=False)
    rows = read_rows(out)
    assert s.total == s.executed == len(rows) == 5 * 8
    assert len({r["key"] for r in rows}) == len(rows)
    by = {(r["instance"], r["solver_name"]): r for r in rows}
    crash = by[("tree9_s4", "debug.crash")]
    assert crash["status"] == "error" and "SIGSEGV" in crash["message"]
    hang = by[("dag7_s1", "debug.hang")]
    assert hang["status"] == "timeout" and "hard limit" in hang["message"] and hang["wall_s"] >= 0.6
    boom = by[("dag10_s0", "debug.raise")]
    assert boom["status"] == "error" and "boom" in boom["message"]
    missing = [r for r in rows if r["solver_name"] == "no.such.module:solve"]
    assert all(r["status"] == "error" and "no.such.module" in r["message"] for r in missing), missing
    # the same solvers on the other instances were unaffected
    assert by[("dag7_s0", "debug.hang")]["status"] == "feasible"
    assert by[("dag7_s0", "debug.crash")]["status"] == "feasible"
    for r in rows:
        for k in ("instance_hash", "solver", "params", "status", "objective", "bound", "gap", "wall_s", "peak",
                  "memsched_version"):
            assert k in r or r["status"] in ("error", "timeout"), k
        assert "memsched_version" in r and "instance_hash" in r


def test_rows_agree_with_the_evaluator(tmp_path):
    out = tmp_path / "r.jsonl"
    run_sweep(_spec(tmp_path), out, jobs=1, progress=False)
    for r in read_rows(out):
        if r["status"] not in ("feasible", "optimal"):
            continue
        g = load_source(r["source"])
        ev = evaluate(g, Schedule.from_names(g, r["schedule"]))
        assert r["peak"] == ev.peak == r["objective"]
        assert r["compute"] == ev.compute
        assert r["given_peak"] == evaluate(g, Schedule.from_order(g, g.given_order())).peak


SLOW = """
name = "slow"
time_limit = 5
[[instances]]
generator = "random_dag"
grid = { n = [8, 11, 14] }
seeds = [0, 1, 2, 3]
[[solvers]]
solver = "debug.sleep"
grid = { seconds = [0.1, 0.11] }
[[solvers]]
solver = "order"
grid = { method = ["dfs", "bfs", "lpmf"] }
"""


def _lines(p):
    return p.read_bytes().count(b"\n") if p.exists() else 0


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return True


def test_sigkill_mid_sweep_then_resume_equals_uninterrupted(tmp_path):
    spec = _spec(tmp_path, SLOW)
    out = tmp_path / "killed.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "memsched.cli.main", "bench", str(spec), "-o", str(out), "--jobs", "2",
                             "-q"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.time()
    while _lines(out) < 6 and proc.poll() is None and time.time() - t0 < 60:
        time.sleep(0.01)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    partial = read_rows(out)
    total = 12 * 5
    assert 6 <= len(partial) < total
    # the driver's workers die with it (no orphan keeps running solvers)
    pids = {int(r["worker"][3:]) for r in partial if r.get("worker", "").startswith("pid")}
    deadline = time.time() + 5
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    # a torn final line (a kill in mid-write) is tolerated
    with open(out, "ab") as f:
        f.write(b'{"key": "torn')
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(out), "--resume", "-q"]) == 0
    resumed = read_rows(out)
    assert len(resumed) == total and len({r["key"] for r in resumed}) == total
    assert [r["key"] for r in resumed[:len(partial)]] == [r["key"] for r in partial]
    ref = tmp_path / "ref.jsonl"
    run_sweep(spec, ref, jobs=2, progress=False)
    assert final_table(load_results(out)) == final_table(load_results(ref))
    # resuming a finished sweep runs nothing
    s = run_sweep(spec, out, resume=True, progress=False)
    assert s.executed == 0 and s.skipped == total


def test_existing_results_need_resume(tmp_path, capsys):
    spec = _spec(tmp_path, SLOW.replace("[8, 11, 14]", "[5]").replace("[0, 1, 2, 3]", "[0]"))
    out = tmp_path / "r.jsonl"
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(out), "-q"]) == 0
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(out), "-q"]) == 2
    assert "--resume" in capsys.readouterr().err
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(out), "--jobs", "0"]) == 2


def test_progress_line_on_stderr(tmp_path, capsys):
    spec = _spec(tmp_path, SLOW.replace("[8, 11, 14]", "[5]").replace("[0, 1, 2, 3]", "[0, 1]"))
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(tmp_path / "r.jsonl"), "--json"]) == 0
    cap = capsys.readouterr()
    assert "[bench slow 10/10" in cap.err and "feasible 10" in cap.err
    summary = json.loads(cap.out)
    assert summary["executed"] == 10 and summary["statuses"] == {"feasible": 10}


def test_budgeted_rows_respect_their_budget(tmp_path):
    pytest.importorskip("memsched.solvers.dtr.graph")
    spec = _spec(tmp_path, """
[[instances]]
generator = "random_dag"
params = { n = 12 }
seeds = [0, 1]
[[solvers]]
solver = "dtr"
budgets = { from = 0.5, to = 1.0, step = 0.25 }
""")
    out = tmp_path / "r.jsonl"
    run_sweep(spec, out, jobs=2, progress=False)
    rows = read_rows(out)
    assert len(rows) == 2 * 3
    for r in rows:
        assert r["status"] in ("feasible", "infeasible"), r.get("message")
        assert r["budget_bytes"] >= 1
        if r["status"] == "feasible":
            g = load_source(r["source"])
            ev = evaluate(g, Schedule.from_names(g, r["schedule"]))
            assert ev.peak == r["peak"] <= r["budget_bytes"] and ev.compute == r["objective"]


def test_hello_and_result_together_are_both_seen(tmp_path):
    """Regression: with a buffered pipe reader, the worker's hello and its first
    result could be read into the buffer together, where select() cannot see the
    result; the run then looked hung until its hard limit."""
    from select import select

    from memsched.solvers.pool.executors import WorkerProc
    from memsched.solvers.harness.spec import parse_spec
    from memsched.solvers.harness.sweep import _task

    spec = parse_spec({"time_limit": 1, "hard_limit": 5, "instances": [{"generator": "chain", "params": {"n": 5}}],
                       "solvers": [{"solver": "given"}]})
    run = spec.runs()[0]
    w = WorkerProc()
    try:
        select([w.fd], [], [], 60)  # the hello is in the pipe
        w.send(_task(spec, run), run.instance.text)
        time.sleep(0.5)  # the result most likely follows it
        out, ok = w.wait_result(5.0, 1.0)
        assert ok and out["status"] == "feasible"
    finally:
        w.kill()
