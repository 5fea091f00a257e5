"""Ctrl-C in every phase of the long commands (issue 19): the command stops promptly,
prints the best result so far with status ``interrupted`` and exits with status 130;
a second Ctrl-C exits at once. Each command runs in a subprocess (the signal must not
reach pytest); the phase is found from the command's own stderr lines or from time."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
G100 = str(SHIPPED / "random_layered_n100.json")
G30 = str(SHIPPED / "random_layered_n30.json")
# the child restores Python's Ctrl-C handler itself: a test run started in the background
# (nohup ... &) hands SIGINT down as ignored, and memsched then leaves it ignored
CHILD = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "import memsched.cli.main as m; sys.exit(m.main(sys.argv[1:]))")
LIMIT = 3.0  # seconds from Ctrl-C to exit; the target is 1 s, with slack for a loaded 2-core machine


def _limit() -> float:
    """LIMIT, stretched by how oversubscribed the machine is right now (several test workers
    and other jobs on 2 cores make every step, the exit included, that many times slower)."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return LIMIT * max(1.0, load)


def _g250(tmp_path):
    """A 250-operator random layered graph (the issue's n250 instance when ../shared/data has it)."""
    shared = ROOT.parent / "shared" / "data" / "graphs" / "random_layered"
    hits = sorted(shared.glob("random_layered_n250*.json")) if shared.is_dir() else []
    if hits:
        return str(hits[0])
    from memsched.instances import save_graph
    from memsched.instances.generators import random_layered

    p = tmp_path / "n250.json"
    save_graph(random_layered(250, 0), p)
    return str(p)


def interrupt(argv, *, after: float = 0.0, when: str | None = None, second: float | None = None,
              timeout: float = 120.0):
    """Start ``memsched argv``; send SIGINT once stderr shows ``when`` (then ``after`` s more),
    and again ``second`` s later if given. Returns (rc, stdout, stderr, seconds from the
    (last) Ctrl-C to exit); rc None when the command ended before the signal was sent."""
    p = subprocess.Popen([sys.executable, "-c", CHILD, *map(str, argv)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    err_lines = []
    if when is not None:
        t_end = time.time() + timeout
        for line in p.stderr:
            err_lines.append(line)
            if when in line or time.time() > t_end:
                break
    time.sleep(after)
    if p.poll() is not None:
        out, err = p.communicate()
        return None, out, "".join(err_lines) + err, 0.0
    os.kill(p.pid, signal.SIGINT)
    t0 = time.perf_counter()
    if second is not None:
        time.sleep(second)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGINT)
            t0 = time.perf_counter()
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, "".join(err_lines) + err, time.perf_counter() - t0


def _check(rc, out, err, dt, *, json_out=False):
    if rc is None:
        pytest.skip("the command finished before the signal (machine faster than expected)")
    assert rc == 130, (rc, out[-800:], err[-800:])
    assert dt < _limit(), (dt, _limit(), err[-800:])
    assert "Traceback" not in err, err[-2000:]
    if json_out:
        d = json.loads(out)
        assert d["status"] == "interrupted", d
        return d
    return out


@pytest.mark.parametrize("when,after", [("lower bound", 0.0), ("segment of", 0.5)])
def test_order_exact_interrupted_in_bounds_and_in_search(tmp_path, when, after):
    rc, out, err, dt = interrupt(["order", _g250(tmp_path), "--exact", "--time-limit", "300"], when=when, after=after)
    out = _check(rc, out, err, dt)
    assert "interrupted" in out and "order:" in out  # the best order so far is printed


@pytest.mark.parametrize("after", [1.0, 6.0])  # model build / warm starts, then the CP-SAT search
def test_remat_cp_interrupted(tmp_path, after):
    rc, out, err, dt = interrupt(["remat", _g250(tmp_path), "--budget", "0.65", "--time-limit", "300", "--json"],
                                 after=after)
    d = _check(rc, out, err, dt, json_out=True)
    assert "interrupted" in d["stopped"]
    if d["peak"] is not None:  # a best-so-far schedule is a valid one within the budget
        assert d["peak"] <= d["budget"]


@pytest.mark.parametrize("after", [1.5, 6.0])  # Pyomo model build, then HiGHS
def test_remat_milp_interrupted(tmp_path, after):
    rc, out, err, dt = interrupt(["remat", _g250(tmp_path), "--budget", "0.65", "--method", "milp",
                                  "--time-limit", "300", "--json"], after=after)
    d = _check(rc, out, err, dt, json_out=True)
    assert d["method"] == "milp" and "interrupted" in d["stopped"]


def test_pareto_interrupted_keeps_solved_budgets():
    rc, out, err, dt = interrupt(["pareto", G100, "--budgets", "0.9", "0.5", "0.45", "--time-limit", "120"],
                                 when="budget ", after=1.0)
    out = _check(rc, out, err, dt)
    assert "interrupted: 1 of 3 budgets solved" in out, out
    assert "optimal" in out  # the first budget's row is kept


PHASE_ORDER = ["bounds", "exact order", "remat", "programs"]
# (stderr line that ends the previous step, the phase Ctrl-C then lands in, rows finished by then,
# the graph: n30 reaches every phase within seconds; n100 for the bounds and the exact order:
# on n30 both last milliseconds, so a signal sent in the bounds phase could land two phases
# later, in remat; on n100 the exact order that follows the bounds lasts seconds)
CROSSCHECK_PHASES = [
    ("order best:", "bounds", {"given", "best"}, G100),
    ("bounds:", "exact order", {"given", "best"}, G100),
    ("order exact:", "remat", {"best", "exact"}, G30),
    ("remat cp at", "remat", {"exact", "remat-cp"}, G30),
    ("remat dtr at", "programs", {"exact", "remat-cp", "remat-milp", "dtr-greedy", "dtr"}, G30),
]


@pytest.mark.parametrize("when,phase,rows,graph", CROSSCHECK_PHASES,
                         ids=[p[1] + ":" + p[0] for p in CROSSCHECK_PHASES])
def test_crosscheck_interrupted_in_each_phase_prints_the_partial_report(when, phase, rows, graph):
    """Ctrl-C in every phase: exit 130 within the limit, the report of the rows finished so
    far on stdout with status interrupted and the phase named, no verdict claimed for the rest."""
    rc, out, err, dt = interrupt(["crosscheck", graph, "--time-limit", "20"], when=when, after=0.05, timeout=600)
    if when not in err:
        pytest.skip(f"{when!r} not reached in 600 s (loaded machine)")
    out = _check(rc, out, err, dt)
    # a short phase (bounds: well under a second) can end between the line and the signal:
    # then Ctrl-C lands in the next phase, which must be the one named
    k = PHASE_ORDER.index(phase)
    landed = [p for p in PHASE_ORDER[k:k + 2] if f"status: interrupted (Ctrl-C) in the {p} phase" in out]
    assert landed, out[:600]
    methods = {line.split()[0] for line in out.splitlines()[6:] if line and not line.startswith(("-", "VERDICT", "method"))}
    assert rows <= methods, (rows, methods)
    assert "VERDICT (partial" in out, out[-400:]


def test_crosscheck_interrupted_json_is_one_object_with_the_rows_so_far():
    rc, out, err, dt = interrupt(["crosscheck", G100, "--time-limit", "60", "--json"], after=7.0)
    if rc == 130 and not out.strip():  # a loaded machine was still loading the graph: nothing to report yet
        assert err.strip().splitlines()[-1] == "memsched crosscheck: interrupted", err[-400:]
        pytest.skip("Ctrl-C arrived before the cross-check began (loaded machine)")
    d = _check(rc, out, err, dt, json_out=True)
    assert d["interrupted_in"] in ("bounds", "exact order", "remat") and d["rows"], d
    assert all(r["method"] for r in d["rows"]) and d["steps"][0] == len(d["rows"]) + (d["order_lower_bound"] is not None)


def _sleep_spec(tmp_path, seconds=1.0):
    spec = tmp_path / "b.toml"
    spec.write_text('name = "b"\ntime_limit = 10\n[[instances]]\ngenerator = "chain"\n'
                    'grid = { n = [4, 5, 6, 7, 8, 9] }\n[[solvers]]\nsolver = "debug.sleep"\n'
                    f'params = {{ seconds = {seconds} }}\n')
    return spec


def test_bench_interrupted_keeps_finished_runs_and_says_how_to_resume(tmp_path):
    spec = _sleep_spec(tmp_path)
    res = tmp_path / "r.jsonl"
    rc, out, err, dt = interrupt(["bench", spec, "-o", res, "--jobs", "1"], when="[bench b 1/6")
    _check(rc, out, err, dt)
    assert "--resume" in err and "finished runs are kept" in out
    kept = [json.loads(x) for x in res.read_text().splitlines()]
    assert 1 <= len(kept) < 6


def test_bench_interrupted_before_any_run_finished_then_resumed(tmp_path):
    """Ctrl-C while the workers start and run the first tasks (two jobs, none finished yet on
    an unloaded machine): exit 130, the note says how to resume, and the resumed sweep runs
    every run exactly once."""
    spec = _sleep_spec(tmp_path, 2.0)
    res = tmp_path / "r.jsonl"
    rc, out, err, dt = interrupt(["bench", spec, "-o", res, "--jobs", "2", "--json"], after=1.5)
    d = _check(rc, out, err, dt, json_out=True)
    assert d["kept"] < 6 and "--resume" in err, (d, err[-500:])
    p = subprocess.run([sys.executable, "-m", "memsched.cli.main", "bench", str(spec), "-o", str(res), "--resume",
                        "--jobs", "2", "-q", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-800:]
    keys = [json.loads(x)["key"] for x in res.read_text().splitlines()]
    assert len(keys) == 6 == len(set(keys))


def test_dtr_sweep_interrupted_while_replaying(tmp_path):
    from test_dtr_sweep_harness import synth_file

    trace = synth_file(tmp_path, 80, 7)
    rc, out, err, dt = interrupt(["dtr", "sweep", trace, "--step", "0.001", "--resolution", "0.0001",
                                  "--results", tmp_path / "d.jsonl"], after=2.5)
    out = _check(rc, out, err, dt)
    assert "resume with:" in err
    assert "status: interrupted" in out and "ratios sampled" in out  # the partial map is printed


SWALLOW = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import memsched.solvers.ordering.dispatch as D
def stubborn(*a, **k):  # a solver that swallows the first Ctrl-C and keeps going
    print("solving", file=sys.stderr, flush=True)
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        time.sleep(60)
D.solve_order = stubborn
import memsched.cli.main as m
sys.exit(m.main(sys.argv[1:]))
"""


def test_second_ctrl_c_exits_at_once():
    p = subprocess.Popen([sys.executable, "-c", SWALLOW, "order", G100], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "solving" in line:
            break
    time.sleep(0.5)  # into the sleep (a signal between the print and the try would not be swallowed)
    os.kill(p.pid, signal.SIGINT)
    time.sleep(1.0)
    assert p.poll() is None  # the first one was swallowed
    os.kill(p.pid, signal.SIGINT)
    t0 = time.perf_counter()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130 and time.perf_counter() - t0 < 1.0, (p.returncode, err)
    assert "exiting" in err


def test_ctrl_c_while_the_parser_is_built_is_one_line(monkeypatch, capsys):
    """Ctrl-C before the command starts (options being parsed): exit 130, one line, no traceback."""
    import memsched.cli.main as m

    def interrupted_parser():
        raise KeyboardInterrupt

    monkeypatch.setattr(m, "build_parser", interrupted_parser)
    assert m.main(["info", G100]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "memsched: interrupted"
