"""Ctrl-C in each phase of ``memsched remat --method cp`` (issue 19): the command stops
within about a second, prints the best schedule found so far (never "no schedule" once a
warm start fitted the budget) with status ``interrupted``, says why it stopped, and exits
with status 130.

Each run is a subprocess with ``--progress``; the signal is sent when the phase's own
progress line appears on stderr (no blind sleeping). The graph is random_layered n250 from
../shared/data (skipped when absent) at budget 0.7, where the warm starts find a schedule
within the budget after a few seconds and keep searching, then the models are built and
searched. The time limits are short (15-30 s) so that every phase starts within seconds; the
phases' order does not depend on the limit."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "graphs" / "random_layered"
N250 = DATA / "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json"
N100 = ROOT / "instances" / "shipped" / "random_layered_n100.json"
# the child restores Python's Ctrl-C handler (a test run started in the background hands
# SIGINT down as ignored, and memsched then leaves it ignored)
CHILD = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "import memsched.cli.main as m; sys.exit(m.main(sys.argv[1:]))")
LIMIT = 1.5  # seconds from Ctrl-C to exit: the target is 1 s, with slack for a loaded 2-core machine


def interrupt_at(argv, marker: str, timeout: float = 150.0, after: float = 0.0):
    """Run ``memsched argv``; send SIGINT when a stderr line contains ``marker`` (``after``
    seconds later, to land inside a phase that first builds a model). Returns
    (exit status, parsed JSON, stderr text, seconds from the signal to exit, the lines seen
    before the signal); exit status None when the command ended before the marker."""
    p = subprocess.Popen([sys.executable, "-c", CHILD, *map(str, argv)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    seen = []
    t_end = time.time() + timeout
    for line in p.stderr:
        seen.append(line)
        if marker in line:
            break
        if time.time() > t_end:
            p.kill()
            pytest.fail(f"no line with {marker!r} within {timeout} s: {''.join(seen)[-1500:]}")
    if p.poll() is not None or not seen or marker not in seen[-1]:
        out, err = p.communicate()
        return None, None, "".join(seen) + err, 0.0, seen
    if after:
        time.sleep(after)
    os.kill(p.pid, signal.SIGINT)
    t0 = time.perf_counter()
    out, err = p.communicate(timeout=timeout)
    dt = time.perf_counter() - t0
    return p.returncode, json.loads(out) if out.strip() else None, "".join(seen) + err, dt, seen


def _within_budget_line(lines) -> int | None:
    """The compute of the last warm-start line that reported a schedule within the budget."""
    got = None
    for line in lines:
        m = re.search(r"\[warm start\].*compute (\S+), peak (\d+) B <= budget", line)
        if m:
            got = float(m.group(1))
    return got


def _check(rc, d, err, dt):
    assert rc == 130, (rc, err[-1500:])
    assert dt < LIMIT, (dt, err[-1500:])
    assert "Traceback" not in err, err[-2000:]
    assert d["status"] == "interrupted", d
    assert "interrupted" in d["stopped"], d["stopped"]


# (marker of the phase's progress line, does a schedule within the budget exist by then)
PHASES = [
    ("moment-cut covering bound", False),  # the first bound, before any warm start
    ("plain orders", False),  # warm starts: the ordering heuristics and the beam search
    ("<= budget", True),  # warm starts: the greedy / local search has a schedule and keeps searching
    ("[build]", True),  # model build (Python)
    ("CP-SAT search for", True),  # CP-SAT search (presolve and search)
    ("threshold bound", True),  # the threshold / hitting-set bounds, after the models
]


@pytest.mark.skipif(not N250.exists(), reason="../shared/data is absent")
@pytest.mark.parametrize("marker,has_schedule", PHASES, ids=[m for m, _ in PHASES])
def test_ctrl_c_in_each_phase_returns_the_best_schedule_so_far(marker, has_schedule):
    rc, d, err, dt, seen = interrupt_at(["remat", N250, "--budget", "0.7", "--cap", "1", "--time-limit", "15",
                                         "--progress", "--json"], marker)
    if rc is None:
        pytest.skip(f"the solve ended before {marker!r} (a faster machine): {err[-600:]}")
    _check(rc, d, err, dt)
    if has_schedule:
        assert d["schedule"] is not None and d["peak"] <= d["budget"], d
        warm = _within_budget_line(seen)
        assert warm is not None and d["compute"] <= warm + 1e-9, (warm, d["compute"])
        assert "best schedule found so far" in d["stopped"], d["stopped"]
    else:
        assert d["schedule"] is None and "before any schedule" in d["stopped"], d


def test_ctrl_c_in_phase_one_search_without_a_schedule():
    """Budget 0.5 of the shipped n100: no warm start fits, phase 1 (least peak) searches."""
    rc, d, err, dt, _seen = interrupt_at(["remat", N100, "--budget", "0.5", "--cap", "1", "--time-limit", "30",
                                          "--progress", "--json"], "[phase 1a (fixed order)]")
    if rc is None:
        pytest.skip(f"the solve ended before phase 1: {err[-600:]}")
    _check(rc, d, err, dt)
    assert d["schedule"] is None and "before any schedule" in d["stopped"], d


FCN8 = ROOT.parent / "shared" / "data" / "graphs" / "checkmate" / "fcn_8_vgg_32_4166083_train_nx.json"


@pytest.mark.skipif(not FCN8.exists(), reason="../shared/data is absent")
def test_progress_lines_speak_in_the_result_units():
    """fcn_8 train at 0.8 (free order), whose costs CP-SAT divides by their gcd (2432):
    the CP-SAT progress lines print compute as the result prints it (at least the baseline,
    never CP-SAT's scaled integers, which would be 2432 times smaller) and the result says
    why the solve stopped. The free-order stage relaxation may prove it before any CP-SAT search
    line: its own line (incumbent and bound) speaks the same units."""
    p = subprocess.run([sys.executable, "-c", CHILD, "remat", str(FCN8), "--budget", "0.8", "--cap", "1",
                        "--time-limit", "10", "--workers", "2", "--progress", "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-1500:]
    d = json.loads(p.stdout)
    cp_lines = [ln for ln in p.stderr.splitlines() if "CP-SAT search" not in ln and re.search(r"\[(solve|phase|bounds)", ln)]
    # the incumbent of each line (the first figure; the second is the bound), printed to 6 digits
    computes = [float(m.group(1)) for ln in cp_lines for m in [re.search(r"s  compute (\d[\d.e+]*)", ln)] if m]
    assert computes, p.stderr[-1500:]
    assert min(computes) >= d["baseline_compute"] * (1 - 1e-5), computes  # scaled units: 2432 times smaller
    assert d["compute"] <= min(computes) * (1 + 1e-5), (d["compute"], computes)  # the result is the best one
    assert d["stopped"] and ("bound met" in d["stopped"] or "time limit" in d["stopped"]), d["stopped"]


def test_ctrl_c_in_the_relaxation_refutation():
    """Budget 0.6 of the shipped n100 in the given-order class: no warm start fits, and the
    given-order stage relaxation runs as a feasibility test (which refutes this budget when its
    share of the time limit is long enough, docs/remat.md); Ctrl-C there stops with no schedule
    and no claim."""
    rc, d, err, dt, _seen = interrupt_at(["remat", N100, "--budget", "0.6", "--cap", "1", "--order", "given",
                                          "--time-limit", "30", "--progress", "--json"], "feasibility at the budget")
    if rc is None:
        pytest.skip(f"the solve ended before the relaxation's feasibility test: {err[-600:]}")
    _check(rc, d, err, dt)
    assert d["schedule"] is None and "before any schedule" in d["stopped"], d


R50 = ROOT.parent / "shared" / "data" / "graphs" / "checkmate" / "ResNet50_256_2242243_train_nx.json"


@pytest.mark.skipif(not R50.exists(), reason="../shared/data is absent")
def test_ctrl_c_in_the_witness_search():
    """ResNet50-train at 0.6 in the given-order class: the search restricted to the covering
    program's operators runs for several seconds (and proves the row optimal when not
    interrupted, docs/remat.md "Witness search"); Ctrl-C there returns the warm start."""
    rc, d, err, dt, seen = interrupt_at(["remat", R50, "--budget", "0.6", "--cap", "1", "--order", "given",
                                         "--time-limit", "120", "--progress", "--json"],
                                        "search recomputing only the")
    if rc is None:
        pytest.skip(f"the solve ended before the witness search: {err[-600:]}")
    _check(rc, d, err, dt)
    assert d["schedule"] is not None and d["peak"] <= d["budget"], d
    assert "best schedule found so far" in d["stopped"], d["stopped"]


@pytest.mark.skipif(not N250.exists(), reason="../shared/data is absent")
def test_ctrl_c_in_the_tail_window_of_the_relaxation():
    """random_layered n250 at 0.8 in the given-order class: the whole relaxation is too large
    for its share, so its tail window of stages runs (docs/remat.md "Windows of stages"; at 0.9,
    the row this test used before, the resumed joint program now proves the row optimal first);
    Ctrl-C there returns the schedule found so far, and no claim. The signal goes 3 s after the
    phase's line, inside the window's CP-SAT search (its build takes under 1 s; the search about
    6 s at this time limit): red when the runner's Ctrl-C no longer stops the search (the
    command then exits only once the window's share is spent)."""
    _interrupt_given_n250("0.8", 30, "given-order stage relaxation (compact, stages", 3.0, "the tail window")


@pytest.mark.skipif(not N250.exists(), reason="../shared/data is absent")
def test_ctrl_c_in_the_resumed_joint_program():
    """random_layered n250 at 0.8 in the given-order class: once the stage class has a schedule,
    the joint program of several moments is resumed (docs/remat.md, "Resumed after the first
    schedule") for half the time left, about 10 s at this limit (8 moments, then 16). Ctrl-C 4 s
    after its line lands in one of its CP-SAT solves and returns that schedule with the floor
    from before the phase, about 0.4 s after the signal on an idle machine. Seen red with the
    runner's ``stop_search`` removed: 4.3 s and 6.3 s (the solve runs out its share). At 0.9, the
    row this test used before, the solve that the signal hit had only about 1.5 s left, too
    close to the limit to tell the two apart on a loaded machine."""
    _interrupt_given_n250("0.8", 30, "several moments at once, resumed", 4.0, "the resumed joint program")


def _interrupt_given_n250(budget: str, limit: int, marker: str, after: float, phase: str) -> None:
    """random_layered n250, ``--order given``, Ctrl-C ``after`` seconds after the line with
    ``marker``: the checks of a phase that runs once a schedule is known (the schedule kept,
    nothing claimed beyond the floor)."""
    rc, d, err, dt, _seen = interrupt_at(["remat", N250, "--budget", budget, "--cap", "1", "--order", "given",
                                          "--time-limit", str(limit), "--progress", "--json"], marker, after=after)
    if rc is None:
        pytest.skip(f"the solve ended before {phase}: {err[-600:]}")
    _check(rc, d, err, dt)
    assert d["schedule"] is not None and d["peak"] <= d["budget"], d
    assert d["lower_bound"] < d["compute"], d


RL100 = DATA / "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json"


@pytest.mark.skipif(not RL100.exists(), reason="../shared/data is absent")
def test_ctrl_c_in_the_cut_loop_before_a_first_schedule():
    """random_layered n100 (../shared/data) at 0.7 in the given-order class: no warm start fits, the
    refutation test does not decide, and the relaxation with stage no-good cuts runs before
    any schedule is known (docs/remat.md, "The cut loop before the first schedule"); Ctrl-C 3 s
    into it stops with status interrupted and no claim. (Seen red with the loop ignoring an
    interrupted round: the command went on for 42 s.)"""
    rc, d, err, dt, _seen = interrupt_at(["remat", RL100, "--budget", "0.7", "--cap", "1", "--order", "given",
                                          "--time-limit", "60", "--progress", "--json"],
                                         "expanded form, before a schedule", after=3.0)
    if rc is None:
        pytest.skip(f"the solve ended before the cut loop: {err[-600:]}")
    _check(rc, d, err, dt)
    assert d["schedule"] is None or d["peak"] <= d["budget"], d
    assert d["status"] == "interrupted" and "optimal" not in d["stopped"], d
