"""Ctrl-C during a remat CP solve: the best schedule so far comes back with status
timeout (never optimal), re-checked by the evaluator (run in a subprocess so that
the signal cannot reach pytest)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CODE = """
import json, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from memsched.instances.generators import random_layered
from memsched.solvers.remat.dispatch import solve_remat
g = random_layered(60, 3)
print("ready", file=sys.stderr, flush=True)
r = solve_remat(g, 0.8, method="cp", cap=1, time_limit=120, workers=1, progress=True)
print(json.dumps({"status": r.status, "message": r.message, "has_schedule": r.schedule is not None,
                  "peak": r.peak, "budget": r.params["budget"], "wall_s": r.wall_s}))
"""


def test_sigint_returns_best_so_far_with_status_timeout():
    p = subprocess.Popen([sys.executable, "-c", CODE], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    for line in p.stderr:
        if "ready" in line:
            break
    time.sleep(6.0)  # into the search (warm starts take a few seconds)
    # (the child restores Python's Ctrl-C handler itself: a test run started in the
    # background, e.g. `nohup ... &`, hands SIGINT down as ignored)
    t_kill = time.perf_counter()
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    d = json.loads(out.strip().splitlines()[-1])
    assert time.perf_counter() - t_kill < 30, d  # the signal ended the 120 s solve
    assert d["status"] != "optimal", d
    if d["status"] == "timeout" and d["has_schedule"]:
        assert d["peak"] <= d["budget"] and "interrupted" in d["message"], d


def test_the_slot_model_build_stops_when_asked():
    """build_remat_cp(stop=...) ends the build with BuildStopped as soon as stop() is True
    (the witness search passes the Ctrl-C flag), and builds normally otherwise."""
    import pytest

    from memsched.formulations.remat_cpsat import BuildStopped, build_remat_cp
    from memsched.instances.generators import random_layered

    g = random_layered(150, 1)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 1  # the second check: inside the per-operator loop

    with pytest.raises(BuildStopped):
        build_remat_cp(g, 10**9, [1] * g.n_ops, objective="compute", fix_order=g.given_order(), stop=stop)
    assert len(calls) == 2
    cp = build_remat_cp(g, 10**9, [1] * g.n_ops, objective="compute", fix_order=g.given_order(), stop=lambda: False)
    assert cp.model is not None
