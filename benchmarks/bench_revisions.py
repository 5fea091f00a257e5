"""Before/after timing of whole commands at two revisions, side by side in one run.

Checks out ``--base`` (default: the last commit before the layout move) into a temporary
git worktree and runs each command there and here alternately (A B A B ...), ``--runs``
times each, with the same interpreter (.venv/bin/python). The old tree is imported from its
own folder (PYTHONPATH), the new one through the installed ``memsched`` namespace. Reports
median wall seconds and the median of the per-pair ratios new/old.

    .venv/bin/python benchmarks/bench_revisions.py [--base 2c73ca9] [--runs 5]

Writes benchmarks/sections/99-layout-move.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

# (label, argv after the CLI entry point); the same arguments at both revisions
CASES = [
    ("info unet_small (start-up and loading)", ["info", str(ROOT / "instances" / "shipped" / "unet_small.json")]),
    ("dtr replay treelstm, dtr, ratio 0.5", ["dtr", "replay", str(DATA / "dtr-traces" / "treelstm-6-8000000000.0-2020-10-1-12-54-1-default.log"),
                                              "--ratio", "0.5", "--heuristic", "dtr"]),
    ("dtr replay lstm, dtr-eqclass, ratio 0.4", ["dtr", "replay", str(DATA / "dtr-traces" / "lstm-128-11000000000.0-2020-10-1-16-38-52-default.log"),
                                                  "--ratio", "0.4", "--heuristic", "dtr-eqclass"]),
    ("order --exact random_layered_n100", ["order", str(ROOT / "instances" / "shipped" / "random_layered_n100.json"),
                                           "--exact", "--time-limit", "60", "--workers", "1", "--json"]),
    ("order --exact unet_small", ["order", str(ROOT / "instances" / "shipped" / "unet_small.json"),
                                  "--exact", "--time-limit", "60", "--workers", "1", "--json"]),
    ("bound random_layered_n100", ["bound", str(ROOT / "instances" / "shipped" / "random_layered_n100.json"), "--json"]),
]


def _time(cmd, cwd, env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    el = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return el


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="2c73ca9", help="the revision to compare against")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "sections" / "99-layout-move.md"))
    a = ap.parse_args(argv)
    if not DATA.is_dir():
        raise SystemExit(f"needs the shared data at {DATA}")
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), a.base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            old_env = {**os.environ, "PYTHONPATH": str(old)}
            new_env = dict(os.environ)
            rows = []
            for label, args in CASES:
                o_cmd = [py, "-c", "import sys, memsched_cli; sys.exit(memsched_cli.main(sys.argv[1:]))", *args]
                n_cmd = [py, "-m", "memsched.cli.main", *args]
                _time(o_cmd, old, old_env), _time(n_cmd, tmp, new_env)  # warm-up (page cache, .pyc)
                olds, news = [], []
                for _ in range(a.runs):
                    olds.append(_time(o_cmd, old, old_env))
                    news.append(_time(n_cmd, tmp, new_env))
                ratio = statistics.median(n / o for n, o in zip(news, olds))
                rows.append((label, statistics.median(olds), statistics.median(news), ratio, min(n / o for n, o in zip(news, olds)),
                             max(n / o for n, o in zip(news, olds))))
                print(f"{label}: old {rows[-1][1]:.2f} s, new {rows[-1][2]:.2f} s, new/old {ratio:.3f}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, capture_output=True)
    lines = ["## Layout move: before vs after", "",
             f"Command: `.venv/bin/python benchmarks/bench_revisions.py --base {a.base} --runs {a.runs}`", "",
             f"Whole CLI commands (process start included) at revision `{a.base}` (before the package move) and at "
             f"the working tree, run alternately {a.runs} times each after one warm-up, same interpreter, on the 2-core "
             "development machine while other work was running (so absolute times are noisy; the paired ratio is the figure).", "",
             "| command | before (median s) | after (median s) | after/before (median of pairs) | min-max ratio |",
             "|---|---:|---:|---:|---:|"]
    for label, o, n, r, lo, hi in rows:
        lines.append(f"| {label} | {o:.2f} | {n:.2f} | {r:.3f} | {lo:.3f}-{hi:.3f} |")
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
