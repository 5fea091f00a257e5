"""DTR sweeps through the benchmark harness: the protocol is the same inline and in the
worker pool (local and Dask), a hanging replay is killed and recorded as unresolved, a
crash is contained, --resume replays nothing twice, Ctrl-C keeps the finished replays,
several sweeps share one pool, and the results file has its own report."""
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import memsched.cli.main
from memsched.instances.dtr_trace import parse_trace_lines
from memsched.solvers.dtr import replay
from memsched.solvers.dtr.sweep import (FEASIBLE, INFEASIBLE, InlineExecutor, find_holes, summarize_result,
                               summarize_rows, sweep, sweep_many)
from memsched.solvers.pool.executors import LocalExecutor
from memsched.solvers.pool.store import read_rows

from dtr_lines import J, call1 as call

ROOT = Path(__file__).resolve().parents[1]


def synth_lines(n: int, seed: int) -> list[str]:
    """A training-step-like trace: a forward chain with random skip connections, then a
    backward pass that reads the activations in reverse and releases them."""
    rng = random.Random(seed)
    L = [J(INSTRUCTION="ANNOTATE", ANNOTATION="START"), J(INSTRUCTION="CONSTANT", NAME="w"),
         J(INSTRUCTION="MEMORY", NAME="w", MEMORY="16")]
    acts = ["w"]
    for i in range(1, n + 1):
        args = [acts[-1]] + ([acts[-3]] if i > 3 and rng.random() < 0.3 else [])
        L += call(f"f{i}", args, f"a{i}", rng.randint(1, 30), rng.randint(40, 160))
        acts.append(f"a{i}")
    L += call("loss", [acts[-1]], f"g{n}", 1, 8)
    for i in range(n, 0, -1):
        L += call(f"f{i}_backward", [f"g{i}", acts[i - 1]], f"g{i - 1}", rng.randint(1, 30), rng.randint(40, 160))
        L += [J(INSTRUCTION="RELEASE", NAME=f"g{i}"), J(INSTRUCTION="RELEASE", NAME=acts[i])]
    return L


def synth_file(tmp_path, n: int, seed: int) -> Path:
    p = tmp_path / f"synth{n}_s{seed}.log"
    p.write_text("\n".join(synth_lines(n, seed)) + "\n")
    return p


KW = dict(lo=0.1, hi=1.0, step=0.1, resolution=0.005, repeats=2, run_timeout=30.0)


def key(res):
    return ([(p.ratio, p.budget, p.outcome, p.clock, p.peak, p.evictions, p.runs) for p in res.points],
            [h.to_json() for h in res.holes])


# ------------------------------------------------------------------ protocol
@settings(max_examples=80, deadline=None)
@given(n=st.integers(4, 24), seed=st.integers(0, 10 ** 6), refine=st.sampled_from(["scan", "bisect"]),
       h=st.sampled_from(["dtr", "lru", "dtr-eqclass"]), repeats=st.integers(1, 3))
@example(n=6, seed=207, refine="scan", h="dtr", repeats=2)  # repeats of a hole's interior derived in their round
def test_protocol_invariants(n, seed, refine, h, repeats):
    """Reference-free checks of the protocol: the coarse grid is sampled; no two
    neighbouring samples of different classes are more than one resolution step apart
    (scan) unless bisection stopped there; the points next to a change (and hole
    points) ran `repeats` times, every other point once; each point is its replay."""
    tr = parse_trace_lines(synth_lines(n, seed), "synth.log")
    res = sweep(tr, h, lo=0.2, hi=1.0, step=0.1, resolution=0.01, repeats=repeats, refine=refine)
    ks = [round(p.ratio / 0.01) for p in res.points]
    assert set(range(20, 101, 10)) <= set(ks)
    cls = [p.outcome for p in res.points]
    change = set()
    for i in range(len(ks) - 1):
        if cls[i] != cls[i + 1]:
            change.update((i, i + 1))
            if refine == "scan":
                assert ks[i + 1] - ks[i] == 1
    for hole in find_holes(res.points):
        change.update(i for i, p in enumerate(res.points) if hole.first <= p.ratio <= hole.last)
    for i, p in enumerate(res.points):
        assert p.runs == (repeats if i in change else 1), (p, i in change)
        r = replay(tr, ks[i] * 0.01, heuristic=h)
        assert (p.outcome, p.clock, p.peak, p.evictions, p.budget) == (r.outcome, r.clock, r.peak, r.evictions,
                                                                       r.budget)
    assert res.replays + res.derived + res.repeat_derived == sum(p.runs for p in res.points) and res.reused == 0


# ------------------------------------------------------------------ pool == inline
def test_pool_equals_inline_several_sweeps_share_one_pool(tmp_path):
    paths = [synth_file(tmp_path, n, s) for n, s in ((12, 1), (20, 2), (30, 3))]
    pairs = [(p, h) for p in paths for h in ("dtr", "lru")]
    ex = LocalExecutor(2)
    lines = []
    pooled = sweep_many(pairs, executor=ex, log=lines.append, **KW)
    assert ex.spawned <= 2  # one pool of persistent workers for all six sweeps
    for (p, h), r in zip(pairs, pooled):
        ref = sweep(p, h, jobs=1, **KW)
        assert key(r) == key(ref), (p.name, h)
        assert r.params["executor"] == "local" and ref.params["executor"] == "inline"
    # progress: one line per batch per sweep, a final 'done' for each
    assert sum("done:" in x for x in lines) == len(pairs)
    assert any("coarse" in x for x in lines) and any("refine 1" in x for x in lines)


# ------------------------------------------------------------------ timeouts, crashes
def test_hang_is_killed_and_unresolved_crash_is_contained_then_resume(tmp_path):
    p = synth_file(tmp_path, 16, 5)
    out = tmp_path / "r.jsonl"
    kw = dict(KW, run_timeout=0.3, kill_grace=0.5)
    t0 = time.perf_counter()
    res = sweep(p, "dtr", jobs=2, results=out, debug={"hang": [0.5], "crash": [0.8]}, **kw)
    assert time.perf_counter() - t0 < 60
    by = {p.ratio: p for p in res.points}
    assert by[0.5].outcome == "unresolved" and by[0.8].outcome == "error"
    assert by[0.5].runs == 2 and by[0.8].runs == 2  # next to a change: repeated, each time killed / crashed
    assert all(h.first > 0.5 or h.last < 0.5 for h in res.holes)  # unresolved never closes or opens a hole
    tr = parse_trace_lines(synth_lines(16, 5), "x")
    for q in res.points:
        if q.ratio not in (0.5, 0.8):
            assert q.outcome == replay(tr, q.ratio, heuristic="dtr").outcome
    rows = read_rows(out)
    assert len(rows) == res.replays == sum(q.runs for q in res.points)
    hung = [r for r in rows if r["ratio"] == 0.5]
    assert all(r["outcome"] == "unresolved" and r["status"] == "timeout" and "killed by the harness" in r["message"]
               for r in hung)
    crashed = [r for r in rows if r["ratio"] == 0.8]
    assert all(r["outcome"] == "error" and "worker process died" in r["message"] for r in crashed)
    # resume with the same run timeout: the unresolved replays are not retried, the
    # crashed one is (its outcome then steers the protocol); nothing done runs again
    res2 = sweep(p, "dtr", jobs=1, results=out, resume=True, **kw)
    new = read_rows(out)[len(rows):]
    assert len(new) == res2.replays >= 1 and res2.reused + res2.replays == sum(q.runs for q in res2.points)
    assert any(r["ratio"] == 0.8 for r in new) and all(r["ratio"] != 0.5 for r in new)
    done = {r["budget"] for r in rows if r["outcome"] != "error"}
    assert all(r["budget"] not in done for r in new)
    assert {q.ratio: q.outcome for q in res2.points}[0.5] == "unresolved"
    # a longer run timeout retries the unresolved ones (now resolved)
    res3 = sweep(p, "dtr", jobs=1, results=out, resume=True, **dict(kw, run_timeout=30.0))
    assert res3.replays >= 1 and any(r["ratio"] == 0.5 for r in read_rows(out)[len(rows) + len(new):])
    assert {q.ratio: q.outcome for q in res3.points}[0.5] in FEASIBLE + INFEASIBLE


def test_tiny_run_timeout_is_unresolved_never_feasible(tmp_path):
    tr = parse_trace_lines(synth_lines(400, 7), "big.log")
    for ex in (InlineExecutor(), LocalExecutor(1)):
        res = sweep(tr, "dtr", executor=ex, run_timeout=1e-9, kill_grace=5.0, lo=0.5, hi=1.0, step=0.25,
                    resolution=0.25, repeats=1)
        assert [q.outcome for q in res.points] == ["unresolved"] * 3
        assert res.holes == [] and res.min_feasible() is None
        assert summarize_result(res)["unresolved"] == 3


# ------------------------------------------------------------------ resume
def test_resume_does_no_replay_twice(tmp_path):
    p = synth_file(tmp_path, 20, 11)
    out = tmp_path / "r.jsonl"
    full = sweep(p, "dtr-eqclass", jobs=1, results=out, **KW)
    rows = out.read_text().splitlines()
    assert len(rows) == full.replays > 0
    again = sweep(p, "dtr-eqclass", jobs=1, results=out, resume=True, **KW)
    assert again.replays == 0 and again.reused == full.replays and key(again) == key(full)
    assert len(out.read_text().splitlines()) == len(rows)
    # an interrupted file: the first m rows and a torn line
    m = len(rows) // 2
    out.write_text("\n".join(rows[:m]) + "\n" + rows[m][:20])
    part = sweep(p, "dtr-eqclass", jobs=2, results=out, resume=True, **KW)
    assert part.replays == full.replays - m and part.reused == m and key(part) == key(full)
    assert len(read_rows(out)) == full.replays
    # another overhead limit or seed is another replay: nothing reused
    other = sweep(p, "dtr-eqclass", jobs=1, results=out, resume=True, **dict(KW, overhead_limit=3.0))
    assert other.reused == 0


def test_results_file_needs_resume(tmp_path, capsys):
    p = synth_file(tmp_path, 8, 1)
    out = tmp_path / "r.jsonl"
    args = ["dtr", "sweep", str(p), "--lo", "0.5", "--hi", "1.0", "--step", "0.25", "--resolution", "0.25",
            "--results", str(out), "--jobs", "1", "-q"]
    assert memsched.cli.main.main(args) == 0
    assert memsched.cli.main.main(args) == 2
    assert "--resume" in capsys.readouterr().err
    assert memsched.cli.main.main(args[:-5] + ["--resume", "-q"]) == 2  # --resume without --results
    assert memsched.cli.main.main(args[:-3] + ["--jobs", "3"]) == 2
    assert memsched.cli.main.main(["dtr", "sweep", str(p), "--heuristic", "dtr,bogus"]) == 2
    assert memsched.cli.main.main(["dtr", "sweep", str(tmp_path / "missing.log")]) == 2
    empty = tmp_path / "e.jsonl"
    empty.write_text(json.dumps({"key": "x", "status": "optimal"}) + "\n")
    assert memsched.cli.main.main(["dtr", "report", str(empty)]) == 2


# ------------------------------------------------------------------ CLI: several sweeps, report
def test_cli_several_sweeps_and_report(tmp_path, capsys):
    a, b = synth_file(tmp_path, 14, 21), synth_file(tmp_path, 22, 22)
    out = tmp_path / "r.jsonl"
    opts = ["--lo", "0.1", "--hi", "1.0", "--step", "0.1", "--resolution", "0.005", "--repeats", "2"]
    rc = memsched.cli.main.main(["dtr", "sweep", str(a), str(b), "--heuristic", "dtr,lru", *opts, "--jobs", "2",
                            "--results", str(out), "--json"])
    cap = capsys.readouterr()
    assert rc == 0
    got = [json.loads(x) for x in cap.out.splitlines()]
    assert [(Path(d["trace"]).name, d["heuristic"]) for d in got] == \
           [(a.name, "dtr"), (a.name, "lru"), (b.name, "dtr"), (b.name, "lru")]
    assert "done:" in cap.err
    refs = []
    for d, (t, h) in zip(got, [(a, "dtr"), (a, "lru"), (b, "dtr"), (b, "lru")]):
        ref = sweep(t, h, jobs=1, **dict(KW, repeats=2))
        refs.append(ref)
        assert [(q["ratio"], q["outcome"], q["clock"], q["runs"]) for q in d["points"]] == \
               [(q.ratio, q.outcome, q.clock, q.runs) for q in ref.points]
        assert d["holes"] == [h.to_json() for h in ref.holes]
    assert len(read_rows(out)) == sum(d["replays"] + d["derived"] for d in got)
    # the report of the results file: one summary per sweep, equal to the sweeps' own
    assert memsched.cli.main.main(["dtr", "report", str(out), "--json"]) == 0
    items = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    want = sorted((summarize_result(r) for r in refs), key=lambda d: (d["trace"], d["heuristic"]))
    assert len(items) == 4
    for it, w in zip(items, want):
        assert (it["trace"], it["heuristic"], it["samples"], it["min_feasible_ratio"], it["outcomes"]) == \
               (w["trace"], w["heuristic"], w["samples"], w["min_feasible_ratio"], w["outcomes"])
        assert it["holes"] == [h.to_json() for h in w["holes"]]
    # memsched report recognizes the DTR rows
    assert memsched.cli.main.main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "DTR budget sweeps" in text and text.count(a.name[:20]) >= 2
    # text mode: the per-sweep report, then the summary table
    out2 = tmp_path / "r2.jsonl"
    assert memsched.cli.main.main(["dtr", "sweep", str(a), "--heuristic", "dtr,lru", *opts, "--jobs", "1",
                              "--results", str(out2), "-q"]) == 0
    text = capsys.readouterr().out
    assert text.count("smallest feasible ratio:") == 2 and "| trace | heuristic |" in text


def test_report_holes_on_a_synthetic_outcome_sequence(tmp_path):
    # ratios 0.1 .. 0.9; 0.7 is unresolved (ignored); 0.75 disagrees between its runs
    seq = [(0.1, "oom"), (0.2, "oom"), (0.3, "ok"), (0.4, "oom"), (0.5, "remat_exceeded"), (0.6, "ok"),
           (0.7, "unresolved"), (0.8, "oom"), (0.9, "ok"), (0.75, "ok"), (0.75, "oom")]
    rows = [{"key": f"k{i}", "kind": "dtr_replay", "trace": "/x/t.log", "trace_sha256": "ab", "start": True,
             "heuristic": "dtr", "ratio": r, "budget": int(r * 1000), "overhead_limit": 2.0, "seed": 0,
             "outcome": o, "clock": 5, "wall_s": 0.0} for i, (r, o) in enumerate(seq)]
    rows.append(dict(rows[0], key="other", heuristic="lru", outcome="ok"))
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = summarize_rows(read_rows(f))
    d = {x["heuristic"]: x for x in items}
    assert d["lru"]["samples"] == 1 and d["lru"]["min_feasible_ratio"] == 0.1 and d["lru"]["holes"] == []
    s = d["dtr"]
    assert s["samples"] == 10 and s["replays"] == 11 and s["min_feasible_ratio"] == 0.3
    assert s["unresolved"] == 2  # 0.7 unresolved, 0.75 nondeterministic
    assert [(h.feasible_below, h.first, h.last, h.feasible_above) for h in s["holes"]] == \
           [(0.3, 0.4, 0.5, 0.6), (0.6, 0.8, 0.8, 0.9)]


# ------------------------------------------------------------------ Ctrl-C
CHILD = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background parent hands SIGINT down ignored
import memsched.solvers.dtr.sweep
S = sys.modules["memsched.solvers.dtr.sweep"]  # (the package's `sweep` attribute is the function)
orig = S.sweep_many
def slow(*a, **k):
    k["debug"] = {"sleep": 0.15}
    return orig(*a, **k)
S.sweep_many = slow
import memsched.cli.main
sys.exit(memsched.cli.main.main(sys.argv[1:]))
"""


def test_ctrl_c_keeps_finished_replays_and_resume_completes(tmp_path):
    p = synth_file(tmp_path, 18, 31)
    out = tmp_path / "r.jsonl"
    opts = ["--lo", "0.1", "--hi", "1.0", "--step", "0.1", "--resolution", "0.005", "--repeats", "2"]
    ref = sweep(p, "dtr", jobs=1, **KW)
    assert ref.replays > 20
    proc = subprocess.Popen([sys.executable, "-c", CHILD, "dtr", "sweep", str(p), *opts, "--jobs", "2",
                             "--results", str(out), "-q"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    t_end = time.time() + 60
    while time.time() < t_end and proc.poll() is None and (not out.exists() or len(out.read_text().splitlines()) < 6):
        time.sleep(0.1)
    # Ctrl-C, repeated like a user would if the first one goes unanswered under load
    for _ in range(10):
        if proc.poll() is not None:
            break
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
    so, se = proc.communicate(timeout=30)
    assert proc.returncode == 130, (so, se)
    assert "resume with:" in se and "--resume" in se and str(out) in se
    kept = read_rows(out)
    assert 6 <= len(kept) < ref.replays
    # resume (the command it printed, run in-process): nothing is replayed twice
    assert memsched.cli.main.main(["dtr", "sweep", str(p), *opts, "--jobs", "1", "--results", str(out), "--resume",
                              "-q", "--json"]) == 0
    rows = read_rows(out)
    assert len(rows) == ref.replays
    res = sweep(p, "dtr", jobs=1, results=out, resume=True, **KW)
    assert res.replays == 0 and key(res) == key(ref)


# ------------------------------------------------------------------ Dask
def test_dask_executor_equals_inline(tmp_path):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from memsched.solvers.pool.executors import DaskExecutor

    paths = [synth_file(tmp_path, 12, 41), synth_file(tmp_path, 18, 42)]
    pairs = [(q, "dtr") for q in paths]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with Client(lc) as client:
            got = sweep_many(pairs, executor=DaskExecutor(client), debug={"hang": [0.4]},
                             **dict(KW, run_timeout=0.3, kill_grace=0.5))
    for (q, h), r in zip(pairs, got):
        assert {x.ratio: x.outcome for x in r.points}[0.4] == "unresolved"
        tr = parse_trace_lines(synth_lines(*(12, 41) if q == paths[0] else (18, 42)), "x")
        for x in r.points:
            if x.ratio != 0.4:
                assert (x.outcome, x.clock) == (lambda y: (y.outcome, y.clock))(replay(tr, x.ratio, heuristic=h))


def test_worker_pool_sweep_without_run_timeout():
    """run_timeout=None (no limit) in worker processes: the hard kill limit stays within what
    the executor's poll accepts (a 1e7 s limit overflowed it)."""
    from memsched.instances.dtr_random import random_trace

    r = sweep(random_trace(3), "dtr", lo=0.5, hi=0.6, resolution=0.01, repeats=1, run_timeout=None, jobs=2)
    assert len(r.points) == 11 and r.replays + r.derived == 11
