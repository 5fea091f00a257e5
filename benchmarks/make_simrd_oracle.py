"""Regenerate the simrd oracle (tests/data/simrd_oracle/): unmodified simrd's results as data.

simrd (uwsampl/dtr-prototype @ eff53cc4, folder simrd/) is run, UNMODIFIED, from a checkout
outside the project ($SIMRD_DIR, default /work/scratch/simrd/simrd; its interpreter
$SIMRD_PYTHON, default /work/scratch/simrd-venv/bin/python: a venv with only ``attrs``). Nothing of simrd is
imported here: a small driver (below) runs in a separate simrd process, parses each log
with simrd's ``parse_file``, runs simrd's V1 infinite-budget baseline, then
``RuntimeV2EagerOptimized(int(ratio x baseline_memory), heuristic,
remat_limit=baseline_compute x (limit - 1))`` per run, and prints one JSON line per run.
Evictions are observed by wrapping the runtime's ``_T_evict`` telemetry hook (it only
counts; behaviour unchanged); the eviction sequence is the storages' ``root_id`` in order.
``RandomStorage`` reads Python's global ``random``; the driver seeds it with 0 before each
run (memsched: ``seed=0``).

Two files:

* ``small.jsonl.gz``: one line per random trace of memsched's own generator
  (``memsched.instances.dtr_random``: seed + parameters + sha256 of the text), its simrd
  baseline, and per heuristic x overhead limit x ratio: outcome, clock, peak, evictions and
  the eviction sequence. Every heuristic simrd and memsched share (7 paper heuristics and the
  16 ablations), ratios 0.3..1.0, limits 2.0 and inf.
* ``shared.jsonl.gz``: the four DTR traces of ../shared/data/dtr-traces (never copied:
  named by file and sha256), a modest ratio grid, every shared heuristic, both limits; a
  run over ``--run-timeout`` seconds is left out (listed in the header line as skipped),
  and the whole part stops starting runs after ``--shared-budget`` seconds. With
  ``--traces a,b`` only those traces are run, into ``shared-a-b.jsonl.gz`` (the tests read
  every ``shared*.jsonl.gz``).

Regenerate (the exact commands used for the committed files):

    .venv/bin/python benchmarks/make_simrd_oracle.py --part small
    .venv/bin/python benchmarks/make_simrd_oracle.py --part shared --run-timeout 20 --shared-budget 1500
    .venv/bin/python benchmarks/make_simrd_oracle.py --part shared --traces lstm,treelstm --run-timeout 20 --shared-budget 1200

tests/test_dtr_oracle.py compares memsched.solvers.dtr against these files;
benchmarks/bench_dtr_oracle.py writes section 61-dtr-oracle.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "data" / "simrd_oracle"
DATA = ROOT / ".." / "shared" / "data" / "dtr-traces"

from memsched.instances.dtr_random import random_trace_lines, trace_sha256  # noqa: E402
from memsched.solvers.dtr.runtime import HEURISTICS  # noqa: E402

# every heuristic both implement: memsched name -> simrd class
SHARED = {h: v[0] for h, v in HEURISTICS.items() if v[0]}
SMALL_RATIOS = [0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0]
SHARED_RATIOS = [0.2, 0.4, 0.7]
LIMITS = [2.0, "inf"]
N_SMALL = 300


def small_params(seed: int) -> dict:
    """Generator parameters of small trace ``seed``: four families, by seed mod 4."""
    fam = seed % 4
    if fam == 0:
        return {}
    if fam == 1:
        return {"small_sizes": True}
    if fam == 2:
        return {"n_calls": 26, "alias_p": 0.3, "multi_p": 0.5, "release_p": 0.35, "small_sizes": True}
    # views of any argument: storage cycles (simrd's own region assertion can trip here)
    return {"n_calls": 20, "alias_p": 0.35, "alias_any": True}


# Run under simrd's interpreter: argv = simrd dir, job file. A job: {"key", "path" | "lines",
# "runs": [[heuristic class, ratio, limit], ...], "evseq", "timeout"}. Prints per job a
# baseline line, then one line per run (outcome 'timeout' when an alarm stopped it).
DRIVER = r'''
import sys, json, math, time, random, signal
sys.path.insert(0, sys.argv[1]); sys.setrecursionlimit(10**7)
from simrd.runtime import RuntimeV1, RuntimeV2EagerOptimized, RematExceededError
from simrd.heuristic import HEURISTICS, Heuristic
import simrd.heuristic.ablation
from simrd.parse import parse_file

class Alarm(Exception):
    pass

def on_alarm(*a):
    raise Alarm()

signal.signal(signal.SIGALRM, on_alarm)
jobs = json.load(open(sys.argv[2]))
for job in jobs:
    if "lines" in job:
        g = parse_file(job["lines"], start=True)
    else:
        with open(job["path"]) as f:
            g = parse_file(f, start=True)
    cb = g.get_closure()
    rt = RuntimeV1(math.inf, Heuristic(), stats=False, trace=False); cb(rt)
    s = rt.telemetry.summary
    bm, bc = s["max_memory"], s["model_compute"]
    print(json.dumps({"key": job["key"], "baseline": {"baseline_memory": bm, "baseline_compute": bc,
                      "const_memory": s["model_const_memory"], "bottleneck_memory": s["bottleneck_memory"]}}),
          flush=True)
    deadline = job.get("deadline")
    for cls, r, lim in job["runs"]:
        if deadline is not None and time.time() > deadline:
            print(json.dumps({"key": job["key"], "h": cls, "ratio": r, "limit": lim, "outcome": "skipped"}), flush=True)
            continue
        limit = math.inf if lim == "inf" else float(lim)
        rt = RuntimeV2EagerOptimized(int(bm * r), HEURISTICS[cls](), remat_limit=bc * (limit - 1),
                                     stats=False, trace=False)
        seq = []
        def hook(st, _o=rt._T_evict):
            seq.append(st.root_id); _o(st)
        rt._T_evict = hook
        random.seed(0)
        out = "ok"; t0 = time.perf_counter()
        if job.get("timeout"):
            signal.setitimer(signal.ITIMER_REAL, job["timeout"])
        try:
            cb(rt)
        except MemoryError:
            out = "oom"
        except RematExceededError:
            out = "remat_exceeded"
        except Alarm:
            out = "timeout"
        except AssertionError:
            out = "assert"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        d = {"key": job["key"], "h": cls, "ratio": r, "limit": lim, "budget": rt.budget, "outcome": out,
             "clock": rt.clock, "peak": rt.telemetry.summary["max_memory"], "evictions": len(seq),
             "wall_s": round(time.perf_counter() - t0, 4)}
        if job.get("evseq"):
            d["seq"] = seq
        print(json.dumps(d), flush=True)
'''


def simrd_paths(a):
    d = Path(a.simrd_dir or os.environ.get("SIMRD_DIR", "/work/scratch/simrd/simrd"))
    py = a.simrd_python or os.environ.get("SIMRD_PYTHON", "/work/scratch/simrd-venv/bin/python")
    if not (d / "simrd" / "runtime" / "v2.py").is_file():
        sys.exit(f"make_simrd_oracle: no simrd checkout at {d} (set SIMRD_DIR or --simrd-dir)")
    return d, py


def simrd_commit(d: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(d), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_driver(sd: Path, py: str, jobs: list[dict]):
    """Yield the driver's JSON lines."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
        jf = f.name
    try:
        p = subprocess.Popen([py, "-c", DRIVER, str(sd), jf], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        for line in p.stdout:
            if line.startswith("{"):
                yield json.loads(line)
        if p.wait() != 0:
            raise RuntimeError(f"simrd driver failed: {p.stderr.read()[-3000:]}")
    finally:
        os.unlink(jf)


def header(a, part: str, sd: Path, extra: dict) -> dict:
    cmd = "  ".join([".venv/bin/python benchmarks/make_simrd_oracle.py"] + [
        x for x in (f"--part {part}",
                    f"--seeds {a.seeds}" if part == "small" and a.seeds != N_SMALL else "",
                    f"--traces {a.traces}" if part == "shared" and a.traces else "",
                    f"--run-timeout {a.run_timeout:g}" if part == "shared" else "",
                    f"--shared-budget {a.shared_budget:g}" if part == "shared" else "") if x]).replace("  ", " ")
    return {"header": True, "part": part, "simrd": "uwsampl/dtr-prototype simrd/ (unmodified)",
            "simrd_commit": simrd_commit(sd), "runtime": "RuntimeV2EagerOptimized", "random_seed": 0,
            "budget": "int(ratio * baseline_memory)", "remat_limit": "baseline_compute * (limit - 1)",
            "command": cmd, "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "heuristics": SHARED, **extra}


def make_small(a, sd, py) -> Path:
    hs = list(SHARED)
    runs = [[SHARED[h], r, lim] for h in hs for lim in LIMITS for r in SMALL_RATIOS]
    jobs, meta = [], {}
    for seed in range(a.seeds):
        params = small_params(seed)
        lines = random_trace_lines(seed, **params)
        key = f"random-{seed}"
        jobs.append({"key": key, "lines": lines, "runs": runs, "evseq": True})
        meta[key] = {"seed": seed, "params": params, "sha256": trace_sha256(lines)}
    recs: dict[str, dict] = {}
    by_cls = {v: k for k, v in SHARED.items()}
    t0 = time.time()
    for d in run_driver(sd, py, jobs):
        k = d["key"]
        if "baseline" in d:
            recs[k] = {"trace": k, **meta[k], "baseline": d["baseline"], "runs": {}}
            continue
        h = by_cls[d["h"]]
        row = [d["ratio"], d["budget"], d["outcome"], d["clock"], d["peak"], d["evictions"], d["seq"]]
        recs[k]["runs"].setdefault(h, {}).setdefault(str(d["limit"]), []).append(row)
    out = OUT / "small.jsonl.gz"
    OUT.mkdir(parents=True, exist_ok=True)
    n = sum(len(x) for r in recs.values() for hh in r["runs"].values() for x in hh.values())
    hdr = header(a, "small", sd, {"generator": "memsched.instances.dtr_random.random_trace_lines",
                                  "ratios": SMALL_RATIOS, "limits": LIMITS, "traces": len(recs), "rows": n,
                                  "row": ["ratio", "budget", "outcome", "clock", "peak", "evictions",
                                          "eviction sequence (storage root ids)"],
                                  "simrd_wall_s": round(time.time() - t0, 1)})
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write((json.dumps(hdr) + "\n").encode())
        for r in recs.values():
            f.write((json.dumps(r, separators=(",", ":")) + "\n").encode())
    print(f"small: {len(recs)} traces, {n} rows, {time.time() - t0:.0f} s -> {out} ({out.stat().st_size} B)")
    return out


def make_shared(a, sd, py) -> Path:
    man = json.loads((DATA / "manifest.json").read_text())
    names = [m["log"] for m in man["models"]]
    if a.traces:
        names = [n for n in names if n.split("-")[0] in a.traces.split(",")]
    # cheap heuristics first: an exhausted time budget then leaves out the slowest runs
    slow = {"dtr", "msps", "ab-e-size-stale", "ab-e-size", "ab-e-stale", "ab-e"}
    hs = [h for h in SHARED if h not in slow] + [h for h in SHARED if h in slow]
    t_end = time.time() + a.shared_budget
    jobs = []
    for n in names:
        runs = [[SHARED[h], r, lim] for lim in LIMITS for h in hs for r in SHARED_RATIOS]
        jobs.append({"key": n, "path": str((DATA / n).resolve()), "runs": runs, "evseq": False,
                     "timeout": a.run_timeout, "deadline": t_end})
    recs: dict[str, dict] = {}
    skipped = []
    by_cls = {v: k for k, v in SHARED.items()}
    t0 = time.time()
    # one driver per trace, run in turn (each gets what is left of the budget)
    for job in jobs:
        for d in run_driver(sd, py, [job]):
            k = d["key"]
            if "baseline" in d:
                sha = hashlib.sha256((DATA / k).read_bytes()).hexdigest()
                recs[k] = {"trace": k, "sha256": sha, "baseline": d["baseline"], "runs": {}}
                continue
            h = by_cls[d["h"]]
            if d["outcome"] in ("timeout", "skipped"):
                skipped.append([k, h, d["limit"], d["ratio"], d["outcome"]])
                continue
            row = [d["ratio"], d["budget"], d["outcome"], d["clock"], d["peak"], d["evictions"], d["wall_s"]]
            recs[k]["runs"].setdefault(h, {}).setdefault(str(d["limit"]), []).append(row)
            print(f"{k[:12]:12s} {h:20s} {d['limit']!s:4s} {d['ratio']:.2f} {d['outcome']:15s} {d['wall_s']:.1f}s",
                  flush=True)
    out = OUT / ("shared.jsonl.gz" if not a.traces else f"shared-{a.traces.replace(',', '-')}.jsonl.gz")
    OUT.mkdir(parents=True, exist_ok=True)
    n = sum(len(x) for r in recs.values() for hh in r["runs"].values() for x in hh.values())
    hdr = header(a, "shared", sd, {"data": "../shared/data/dtr-traces", "ratios": SHARED_RATIOS, "limits": LIMITS,
                                   "run_timeout_s": a.run_timeout, "budget_s": a.shared_budget, "rows": n,
                                   "row": ["ratio", "budget", "outcome", "clock", "peak", "evictions",
                                           "simrd wall s"],
                                   "skipped": skipped, "simrd_wall_s": round(time.time() - t0, 1)})
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write((json.dumps(hdr) + "\n").encode())
        for r in recs.values():
            f.write((json.dumps(r, separators=(",", ":")) + "\n").encode())
    print(f"shared: {n} rows, {len(skipped)} skipped, {time.time() - t0:.0f} s -> {out}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["small", "shared", "all"], default="all")
    ap.add_argument("--seeds", type=int, default=N_SMALL, help="number of small random traces (seeds 0..N-1)")
    ap.add_argument("--traces", default=None, help="shared part: comma-separated trace stems (default: all)")
    ap.add_argument("--run-timeout", type=float, default=20.0, help="shared part: seconds per simrd run")
    ap.add_argument("--shared-budget", type=float, default=1500.0, help="shared part: seconds in all")
    ap.add_argument("--simrd-dir", default=None)
    ap.add_argument("--simrd-python", default=None)
    a = ap.parse_args(argv)
    sd, py = simrd_paths(a)
    if a.part in ("small", "all"):
        make_small(a, sd, py)
    if a.part in ("shared", "all"):
        if not (DATA / "manifest.json").is_file():
            print(f"no traces at {DATA}; shared part not made")
        else:
            make_shared(a, sd, py)
    return 0


if __name__ == "__main__":
    sys.exit(main())
