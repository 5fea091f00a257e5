"""Seconds from Ctrl-C to exit of ``memsched remat`` in the witness search (the case of
tests/test_remat_sigint_phases.py ``test_ctrl_c_in_the_witness_search``), split into the
time until ``main`` returns and the interpreter's exit. A diagnosis aid, not a benchmark
row: ``--dump S`` prints every thread's stack S seconds after the signal (faulthandler),
which shows what still runs.

    .venv/bin/python benchmarks/ctrl_c_latency.py [--runs 5] [--dump 0.4]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
R50 = ROOT.parent / "shared" / "data" / "graphs" / "checkmate" / "ResNet50_256_2242243_train_nx.json"
CHILD = ("import signal, sys, time, faulthandler; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "faulthandler.register(signal.SIGUSR1, all_threads=True); import memsched.cli.main as m; "
         "r = m.main(sys.argv[1:]); sys.stderr.write(f'MAIN-RETURNED {time.time():.4f}\\n'); sys.exit(r)")
ARGV = ["remat", str(R50), "--budget", "0.6", "--cap", "1", "--order", "given", "--time-limit", "120",
        "--progress", "--json"]
MARKER = "search recomputing only the"


def once(dump: float | None) -> tuple[float, float | None, str]:
    p = subprocess.Popen([sys.executable, "-c", CHILD, *ARGV], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    for line in p.stderr:
        if MARKER in line:
            break
    t_sig = time.time()
    os.kill(p.pid, signal.SIGINT)
    if dump is not None:
        time.sleep(dump)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGUSR1)
    _out, err = p.communicate(timeout=150)
    total = time.time() - t_sig
    ret = next((float(ln.split()[1]) - t_sig for ln in err.splitlines() if ln.startswith("MAIN-RETURNED")), None)
    return total, ret, err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dump", type=float, default=None, help="print the stacks this many seconds after the signal")
    a = ap.parse_args()
    if not R50.exists():
        print(f"{R50} is absent", file=sys.stderr)
        return 2
    print("run  signal->exit s  signal->main returned s")
    for k in range(a.runs):
        total, ret, err = once(a.dump)
        print(f"{k + 1:>3}  {total:14.3f}  {'-' if ret is None else f'{ret:.3f}':>23}")
        if a.dump is not None:
            print(err[-4000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
