"""``memsched bench`` and ``memsched report``: thin wrappers over the harness."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from memsched.cli.options import size
from memsched.formulations import MemschedError

__all__ = ["bench", "report"]


def bench(args) -> int:
    from memsched.solvers.harness.spec import load_spec
    from memsched.solvers.harness.sweep import run_sweep

    from memsched.cli.paths import check_output
    from memsched.cli.progress import ProgressBar

    if args.jobs is not None and args.jobs < 1:
        raise MemschedError(f"--jobs must be at least 1, got {args.jobs}")
    if args.output:
        check_output(args.output, "-o")
    spec = load_spec(args.spec)
    try:
        with ProgressBar(f"bench {spec.name}", 0, enabled=not args.quiet) as bar:
            def progress(done, total, statuses):
                bar.update(done, _run_counts(statuses, done, total, bar), total=total)

            s = run_sweep(spec, args.output, jobs=args.jobs, dask=args.dask, resume=args.resume, progress=progress,
                          fsync=args.fsync, memory_limit=args.memory_limit)
    except KeyboardInterrupt:
        _interrupted_note(args)
        return 130
    bad = {k: v for k, v in s.statuses.items() if k in ("error", "timeout", "memory")}
    if getattr(args, "json", False):
        print(json.dumps(s.to_json()))
    else:
        st = ", ".join(f"{v} {k}" for k, v in sorted(s.statuses.items())) or "nothing to do"
        skip = f" ({s.skipped} already done)" if s.skipped else ""
        print(f"{s.executed} of {s.total} runs executed{skip} in {s.wall_s:.1f} s on {s.executor} "
              f"({s.jobs if s.executor == 'local' else 'cluster'} jobs): {st}")
        print(f"results: {s.output}")
        if bad:
            print(f"note: {sum(bad.values())} run(s) ended in error/timeout/memory; see their 'message' field",
                  file=sys.stderr)
    return 0


def _run_counts(statuses, done: int, total: int, bar) -> str:
    """``feasible 3, timeout 1, eta 12s``: the statuses of the finished runs and the time left."""
    import time

    el = time.perf_counter() - bar.t0
    eta = f", eta {el / done * (total - done):.0f}s" if 0 < done < total else ""
    return ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) + eta


def _interrupted_note(args) -> None:
    """After Ctrl-C: what was kept and the command that continues the sweep."""
    import shlex

    from memsched.solvers.harness.spec import load_spec
    from memsched.solvers.pool.store import ResultStore

    try:
        spec = load_spec(args.spec)
        out = Path(args.output or spec.output or f"{spec.name}.jsonl")
        kept = len(ResultStore(out).done_keys())
    except (MemschedError, OSError, ValueError):  # the note must never hide the interrupt
        out, kept = Path(args.output or "RESULTS.jsonl"), None
    cmd = ["memsched", "bench", args.spec, "-o", str(out), "--resume"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    what = f"{kept} finished runs are kept in {out}" if kept is not None else f"finished runs are kept in {out}"
    print(f"memsched bench: interrupted: {what}; continue with:\n  {shlex.join(cmd)}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"status": "interrupted", "output": str(out), "kept": kept}))
    else:
        print(f"interrupted; {what}")


def report(args) -> int:
    from memsched.cli.paths import check_output_dir
    from memsched.solvers.harness.report import build_report, load_results

    if args.output_dir:
        check_output_dir(args.output_dir, "-o")
    notes: list[str] = []
    rows = load_results(args.results, notes=notes)
    for n in notes:
        print(f"memsched report: warning: {n}", file=sys.stderr)
    if not rows:
        raise MemschedError(f"{', '.join(args.results)}: no result rows")
    dtr = [r for r in rows if r.get("kind") == "dtr_replay"]  # from `memsched dtr sweep --results`
    if dtr:
        from memsched.solvers.dtr.sweep import report_rows

        print("## DTR budget sweeps\n")
        print(report_rows(dtr))
        rows = [r for r in rows if r.get("kind") != "dtr_replay"]
        if not rows:
            return 0
        print()
    out_dir = Path(args.output_dir) if args.output_dir else None
    rep = build_report(rows, out_dir=out_dir, plots=out_dir is not None and not getattr(args, "no_plots", False),
                       base=Path(args.results[0]).resolve().parent)
    if out_dir is None:
        print(rep.markdown)
    else:
        print(f"report written to {out_dir / 'report.md'} ({len(rep.files)} files)")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("bench", help="run a benchmark sweep from a TOML/YAML spec (JSON lines out)",
                       description="Run every instance x solver x budget of SPEC (docs/harness.md). One JSON line "
                                   "per run is appended and flushed as it ends; a run past its hard limit is "
                                   "killed and recorded as timeout, a crash as error, and the sweep goes on.")
    s.add_argument("spec", metavar="SPEC", help="sweep spec, .toml (or .yaml/.yml with PyYAML)")
    s.add_argument("-o", "--output", metavar="RESULTS.jsonl",
                   help="results file (default: the spec's 'output', else NAME.jsonl)")
    s.add_argument("--jobs", type=int, default=None, help="local worker processes (default: the spec's 'jobs', else 2)")
    s.add_argument("--dask", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786) instead of locally")
    s.add_argument("--resume", action="store_true", help="skip runs already in the results file, append the rest")
    s.add_argument("--fsync", action="store_true", help="fsync the results file after every row (survives a power cut)")
    s.add_argument("--memory-limit", type=size, default=None, metavar="SIZE",
                   help="address-space cap per run in its worker (RLIMIT_AS), e.g. 4GiB; a run past it is "
                        "recorded with status 'memory' and the sweep goes on")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    s.add_argument("--json", action="store_true", help="print the sweep summary as one JSON object")
    s.set_defaults(func=bench)

    s = sub.add_parser("report", help="render tables and plots from benchmark results",
                       description="Markdown tables (per instance: best known, best bound, certified optimum, "
                                   "each solver's gap; per solver; per family). With -o DIR: report.md, CSV "
                                   "tables and PNG plots in DIR; else the markdown on stdout.")
    s.add_argument("results", metavar="RESULTS", nargs="+", help="results files (JSON lines) from memsched bench")
    s.add_argument("-o", "--output-dir", metavar="DIR", default=None,
                   help="write report.md, CSV tables and plots here (created inside an existing directory); "
                        "default: the markdown on stdout")
    s.add_argument("--no-plots", action="store_true", help="tables only")
    s.set_defaults(func=report)
