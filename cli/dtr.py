"""`memsched dtr {replay, sweep, report, explain, to-graph}`: parse, call the library, print."""
from __future__ import annotations

import json
import math
from pathlib import Path

from memsched.cli.options import positive_float
from memsched.cli.paths import check_output, check_plot
from memsched.formulations import MemschedError

__all__ = ["run"]


def _is_trace(path: str) -> bool:
    """A DTR log has an INSTRUCTION key on its first non-empty line."""
    p = Path(path)
    if not p.is_file():
        return True  # let the trace parser report the missing file
    try:
        with p.open() as f:
            for line in f:
                if line.strip():
                    try:
                        return "INSTRUCTION" in json.loads(line)
                    except (ValueError, TypeError):
                        return not line.lstrip().startswith(("{", "["))
    except (OSError, UnicodeDecodeError):
        return True
    return True


def _need_trace(path: str) -> None:
    """A memsched graph where a DTR log is needed: say so (its parse error would be JSON's).
    Anything else that is no DTR log is left to the trace parser's FILE:LINE message."""
    if _is_trace(path):
        return
    from memsched.instances.formats import load_graph

    try:
        load_graph(path)
    except (MemschedError, OSError, ValueError):
        return
    raise MemschedError(f"{path}: a memsched graph, not a DTR log (only dtr replay takes a graph: "
                         "it replays the given order)")


def _load(args):
    from memsched.solvers.dtr.replay import load_trace

    start = {"auto": None, "yes": True, "no": False}[getattr(args, "start", "auto")]
    _need_trace(args.trace)
    return load_trace(args.trace, start=start)  # an empty trace is refused there


def run(args) -> int:
    cmd = getattr(args, "dtr_command", None)
    if not cmd:
        args.dtr_parser.print_help()
        return 2
    return {"replay": _replay, "sweep": _sweep, "explain": _explain, "to-graph": _to_graph,
            "report": _report}[cmd](args)


_BYTES = {"budget", "peak", "dtr_peak", "baseline_memory"}


def _fmt_value(k, v) -> str:
    """Bytes with their unit, floats rounded, dicts and lists as plain text (never Python reprs)."""
    from memsched.cli.fmt import fmt_bytes

    if v is None:
        return "-"
    if k in _BYTES and isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_bytes(v)
    if k == "wall_s" and isinstance(v, (int, float)):
        return f"{v:.3f} s"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.6g}"
    if isinstance(v, dict):
        return ", ".join(f"{a} {_fmt_value(a, b)}" for a, b in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt_value(k, x) for x in v)
    return str(v)


def _print_kv(d: dict, keys) -> None:
    for k in keys:
        if k in d:
            print(f"{k:18s} {_fmt_value(k, d[k])}")


def _replay(args) -> int:
    from memsched.solvers.dtr.replay import parse_limit, replay

    limit = parse_limit(args.overhead_limit)
    if args.budget_bytes is not None and args.budget_bytes < 0:
        raise MemschedError(f"--budget-bytes must be non-negative, got {args.budget_bytes}")
    if args.budget_bytes is not None and args.ratio is not None:
        raise MemschedError(f"give --ratio or --budget-bytes, not both (got --ratio {args.ratio:g} and "
                            f"--budget-bytes {args.budget_bytes})")
    if not _is_trace(args.trace):
        if getattr(args, "allocator", "bytes") != "bytes":
            raise MemschedError(f"--allocator {args.allocator}: address-aware replays take a DTR trace; "
                                f"{args.trace} is a memsched graph (replayed with byte counting only)")
        return _replay_graph(args, limit)
    from memsched.solvers.dtr.allocator import ALLOCATORS, explain_fragmentation, replay_alloc

    alloc = getattr(args, "allocator", "bytes")
    if alloc not in ALLOCATORS:
        raise MemschedError(f"--allocator: expected one of {', '.join(ALLOCATORS)}, got {alloc!r}")
    tr = _load(args)
    ratio = args.ratio if args.ratio is not None or args.budget_bytes is not None else 1.0
    if alloc == "bytes":
        r = replay(tr, ratio if args.budget_bytes is None else None, budget=args.budget_bytes,
                   heuristic=args.heuristic, overhead_limit=limit, seed=args.seed, keep_runtime=True)
    else:
        r = replay_alloc(tr, ratio if args.budget_bytes is None else None, budget=args.budget_bytes,
                         heuristic=args.heuristic, allocator=alloc, overhead_limit=limit, seed=args.seed)
    d = r.to_json()
    if alloc != "bytes":
        d["allocator"] = alloc
    if r.outcome == "fragmentation" and not args.json:
        print(explain_fragmentation(r.failure, tr))
        d["failure"] = {k: v for k, v in d["failure"].items() if k != "layout"}
    if args.json:
        print(json.dumps(d))
    else:
        _print_kv(d, ["outcome", "heuristic", "ratio", "budget", "clock", "overhead", "peak", "evictions",
                      "eager_evictions", "recomputations", "baseline_memory", "baseline_compute", "wall_s"])
        if "failure" in d:
            print(f"{'failure':18s} {_fmt_value('failure', d['failure'])}")
    return 0


def _replay_graph(args, limit) -> int:
    from memsched.formulations import order_peak
    from memsched.instances.formats import load_graph

    from memsched.solvers.dtr.graph import replay_graph

    g = load_graph(args.trace)
    if args.budget_bytes is not None:
        budget = args.budget_bytes
    else:
        budget = int(order_peak(g, g.given_order()) * (args.ratio if args.ratio is not None else 1.0))
    res = replay_graph(g, budget, heuristic=args.heuristic, overhead_limit=limit, seed=args.seed)
    d = res.to_json(g)
    d["budget"] = budget
    if args.json:
        print(json.dumps(d))
    else:
        _print_kv(d, ["status", "method", "budget", "peak", "dtr_peak", "compute", "evictions", "dtr_recomputations",
                      "message", "wall_s"])
    return 0


def _sweep_command(args, results: str | None) -> str:
    """The command line that resumes this sweep."""
    import shlex

    parts = ["memsched", "dtr", "sweep", *args.trace, "--heuristic", args.heuristic, "--lo", str(args.lo),
             "--hi", str(args.hi), *(["--step", str(args.step)] if args.step is not None else []),
             "--resolution", str(args.resolution),
             "--repeats", str(args.repeats), "--run-timeout", str(args.run_timeout),
             "--overhead-limit", str(args.overhead_limit), "--refine", args.refine]
    parts += ["--no-share"] if getattr(args, "no_share", False) else []
    parts += ["--early-stop"] if getattr(args, "early_stop", False) else []
    parts += ["--allocator", args.allocator] if getattr(args, "allocator", "bytes") != "bytes" else []
    parts += ["--dask", args.dask] if args.dask else ["--jobs", str(args.jobs)]
    parts += ["--plot", args.plot] if args.plot else []
    parts += ["--fsync"] if getattr(args, "fsync", False) else []
    parts += ["-q"] if args.quiet else []
    parts += ["--json"] if args.json else []
    parts += ["--results", results or "FILE.jsonl", "--resume"]
    return shlex.join(parts)


def _print_sweep(res) -> None:
    counts = {}
    for p in res.points:
        counts[p.outcome] = counts.get(p.outcome, 0) + 1
    reused = f" ({res.reused} replays reused from the results file)" if res.reused else ""
    print(f"trace {res.trace}  heuristic {res.heuristic}  {len(res.points)} ratios sampled in {res.wall_s:.1f} s{reused}")
    print(f"baseline memory {_fmt_value('baseline_memory', res.baseline_memory)}")
    if res.params.get("allocator", "bytes") != "bytes":
        print(f"allocator {res.params['allocator']} (address-aware; outcome fragmentation: no block fitted)")
    if res.params.get("sampling"):
        print(f"sampling: {res.params['sampling']}")
    print(f"outcomes: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}")
    mf = res.min_feasible()
    lo = res.params.get("lo")
    if lo is not None and res.params.get("resolution"):  # the smallest sampled ratio: a multiple of it
        from memsched.solvers.dtr.sweep import grid_bounds, grid_ratio

        r = res.params["resolution"]
        lo = grid_ratio(grid_bounds(lo, res.params.get("hi", lo), r)[0], r)
    if mf is None:
        print("smallest feasible ratio: none sampled")
    elif lo is not None and abs(mf - lo) < 1e-12:
        print(f"smallest feasible ratio: <= {mf:g} (the sweep's --lo is already feasible; lower --lo to find it)")
    else:
        print(f"smallest feasible ratio: {mf:g} (of the ratios sampled)")
    if not res.holes:
        print("no feasibility holes found")
    for h in res.holes:
        print(f"hole: infeasible {h.first:.4f}..{h.last:.4f} ({len(h.ratios)} samples: {', '.join(sorted(set(h.outcomes)))}) "
              f"between feasible {h.feasible_below:.4f} and {h.feasible_above:.4f}")


def _sweep(args) -> int:
    import sys

    from memsched.solvers.dtr.replay import parse_limit
    from memsched.solvers.dtr.sweep import SweepInterrupted, format_summary, summarize_result, sweep_many

    limit = parse_limit(args.overhead_limit)
    if args.dask is None and (args.jobs < 1 or args.jobs > 2):
        raise MemschedError(f"--jobs must be 1 or 2 (the machine is shared), got {args.jobs}")
    if args.resume and not args.results:
        raise MemschedError("--resume needs --results FILE.jsonl")
    if args.results:
        check_output(args.results, "--results")
    if args.plot:
        check_plot(args.plot)
    heuristics = [h.strip() for h in args.heuristic.split(",") if h.strip()]
    if not heuristics:
        raise MemschedError(f"--heuristic: no heuristic named in {args.heuristic!r}")
    from memsched.solvers.dtr.allocator import check_heuristic_allocator

    for h in heuristics:
        check_heuristic_allocator(h, getattr(args, "allocator", "bytes"))
    for t in args.trace:
        if Path(t).is_dir():
            raise MemschedError(f"{t}: a directory; name the trace files (e.g. {t}/*.log)")
        if not Path(t).is_file():
            raise MemschedError(f"{t}: no such trace file")
        _need_trace(t)
    # each (trace file, heuristic) once, however often it is named
    seen: set = set()
    pairs = []
    for t in args.trace:
        for h in heuristics:
            key = (Path(t).resolve(), h)
            if key not in seen:
                seen.add(key)
                pairs.append((t, h))
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    from memsched.solvers.pool.executors import DaskExecutor, LocalExecutor

    executor = DaskExecutor(args.dask) if args.dask else LocalExecutor(args.jobs)
    try:
        results = sweep_many(pairs, lo=args.lo, hi=args.hi, step=args.step, resolution=args.resolution,
                             repeats=args.repeats, run_timeout=args.run_timeout, overhead_limit=limit,
                             jobs=args.jobs, executor=executor, results=args.results, resume=args.resume,
                             refine=args.refine, log=log, fsync=getattr(args, "fsync", False),
                             share=not getattr(args, "no_share", False),
                             allocator=getattr(args, "allocator", "bytes"),
                             early_stop=getattr(args, "early_stop", False))
    except SweepInterrupted as e:
        for i, res in enumerate(e.partial):  # the best result so far: the ratios sampled before Ctrl-C
            if args.json:
                print(json.dumps(dict(res.to_json(), status="interrupted")))
                continue
            if i:
                print()
            _print_sweep(res)
            print("status: interrupted (a partial map: the ratios sampled before Ctrl-C)")
        if args.results:
            print(f"interrupted: {e.executed} replays of this run are kept in {args.results}"
                  f"{f' (with {e.reused} reused ones)' if e.reused else ''}; resume with:\n  "
                  f"{_sweep_command(args, args.results)}", file=sys.stderr)
        else:
            print(f"interrupted after {e.executed} replays; nothing was kept (no --results). "
                  f"To keep progress next time:\n  {_sweep_command(args, None)}", file=sys.stderr)
        return 130
    for res in results:
        if args.plot:
            if len(results) == 1:
                res.params["plot"] = args.plot
            else:
                stem = args.plot[:-4] if args.plot.endswith(".png") else args.plot
                res.params["plot"] = f"{stem}-{Path(res.trace).stem[:28]}-{res.heuristic}.png"
            plot_sweep(res, res.params["plot"])
    if args.json:
        for res in results:
            print(json.dumps(res.to_json()))
        return 0
    for i, res in enumerate(results):
        if i:
            print()
        _print_sweep(res)
        if args.plot:
            print(f"feasibility map written to {res.params['plot']}")
    if len(results) > 1:
        print()
        print(format_summary([summarize_result(r) for r in results]))
    if args.results:
        print(f"results: {args.results}")
    return 0


def _report(args) -> int:
    from memsched.solvers.pool.store import read_rows

    from memsched.solvers.dtr.sweep import format_summary, summarize_rows

    rows = []
    for f in args.results:
        rs = read_rows(f)
        try:
            summarize_rows(rs)  # its rows checked alone, so that an error names the file
        except MemschedError as e:
            raise MemschedError(f"{f}: {e}") from None
        rows += rs
    items = summarize_rows(rows)
    if not items:
        raise MemschedError(f"{', '.join(args.results)}: no DTR replay rows (write them with dtr sweep --results)")
    if args.json:
        for d in items:
            d = dict(d, holes=[h.to_json() for h in d["holes"]])
            print(json.dumps(d))
    else:
        print(format_summary(items))
    return 0


def _explain(args) -> int:
    from memsched.solvers.dtr.explain import explain, explain_alloc, format_alloc_explanation, format_explanation
    from memsched.solvers.dtr.replay import parse_limit

    limit = parse_limit(args.overhead_limit)
    if args.max_pins < 0:
        raise MemschedError(f"--max-pins must be non-negative, got {args.max_pins}")
    alloc = getattr(args, "allocator", "bytes")
    if alloc != "bytes" and args.vs is not None:
        raise MemschedError(f"dtr explain: --vs is for --allocator bytes (two budgets side by side); with "
                            f"--allocator {alloc} the failure at --budget is explained alone: drop --vs")
    if alloc != "bytes":
        from memsched.solvers.dtr.allocator import check_heuristic_allocator

        check_heuristic_allocator(args.heuristic, alloc)
        d = explain_alloc(_load(args), args.budget, alloc, heuristic=args.heuristic, overhead_limit=limit,
                          max_pins=args.max_pins, time_limit=args.pin_time_limit)
        print(json.dumps(d, default=str) if args.json else format_alloc_explanation(d))
        return 0
    if args.vs is None:
        raise MemschedError("dtr explain: --vs (a smaller feasible ratio) is required with --allocator bytes")
    tr = _load(args)
    d = explain(tr, args.budget, args.vs, heuristic=args.heuristic, overhead_limit=limit, max_pins=args.max_pins,
                pin_time_limit=args.pin_time_limit)
    if args.json:
        print(json.dumps(d, default=lambda x: None if isinstance(x, float) and math.isinf(x) else str(x)))
    else:
        print(format_explanation(d))
    return 0


def _to_graph(args) -> int:
    from memsched.instances.formats import save_graph

    from memsched.solvers.dtr.graph import trace_to_graph

    check_output(args.output, "-o")
    g = trace_to_graph(_load(args))
    try:
        save_graph(g, args.output)
    except OSError as e:
        raise MemschedError(f"-o {args.output}: cannot write: {e.strerror or e}") from None
    s = g.summary()
    print(f"wrote {args.output}: {s['operators']} operators, {s['tensors']} tensors, {s['pinned']} pinned inputs, "
          f"{s['required_outputs']} required outputs, total cost {s['total_cost']:.0f}")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("dtr", help="DTR online eviction: replay traces, sweep budgets, explain feasibility holes")
    s.set_defaults(func=run, dtr_parser=s)
    dsub = s.add_subparsers(dest="dtr_command", metavar="SUBCOMMAND")
    d = dsub.add_parser("replay", help="replay a trace (or a GRAPH) under a budget")
    d.add_argument("trace", metavar="TRACE", help="DTR log, or a memsched GRAPH file (replayed in its given order)")
    d.add_argument("--ratio", type=positive_float, default=None,
                   help="budget = int(ratio x baseline memory) (default 1.0); for a GRAPH: ratio x given-order peak")
    d.add_argument("--budget-bytes", type=int, default=None, help="absolute budget in bytes instead of --ratio")
    d.add_argument("--heuristic", default="dtr",
                   help="dtr, dtr-eqclass, dtr-local, lru, size, msps, random, ab-*, lookahead-K, belady")
    d.add_argument("--overhead-limit", default="2.0", help="thrash limit as a multiple of baseline compute, or inf")
    d.add_argument("--seed", type=int, default=0, help="seed of the random heuristic")
    d.add_argument("--start", choices=["auto", "yes", "no"], default="auto",
                   help="honour ANNOTATE START (auto: manifest.json has_start, else if present)")
    d.add_argument("--allocator", default="bytes",
                   help="bytes (default, simrd's byte counting), first-fit, best-fit, caching (address-aware)")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("sweep", help="dense budget sweeps (traces x heuristics in parallel), find holes")
    d.add_argument("trace", metavar="TRACE", nargs="+", help="one or more DTR logs; every (trace, heuristic) is swept")
    d.add_argument("--heuristic", default="dtr", help="a heuristic, or several separated by commas")
    d.add_argument("--lo", type=float, default=0.1)
    d.add_argument("--hi", type=float, default=1.0)
    d.add_argument("--step", type=float, default=None,
                   help="quick look: a coarse grid of this step, refined only where outcomes change (misses holes "
                        "between equal coarse outcomes); default: dense, every --resolution step")
    d.add_argument("--resolution", type=float, default=1e-4, help="sampling resolution (default 1e-4)")
    d.add_argument("--allocator", default="bytes",
                   help="bytes (default, simrd's byte counting), first-fit, best-fit, caching (address-aware)")
    d.add_argument("--no-share", action="store_true",
                   help="replay every sample (default: samples inside an equal replay's budget interval reuse it)")
    d.add_argument("--early-stop", action="store_true",
                   help="stop a replay once it provably cannot end ok (outcome thrash_or_oom: infeasible, the full "
                        "run ends in remat_exceeded or oom; its clock is the clock at the stop); docs/dtr.md")
    d.add_argument("--repeats", type=int, default=3, help="runs per point next to an outcome change (default 3)")
    d.add_argument("--run-timeout", type=positive_float, default=60.0, help="seconds per run; later: unresolved")
    d.add_argument("--overhead-limit", default="2.0")
    d.add_argument("--jobs", type=int, default=2, help="harness worker processes (at most 2 unless --dask)")
    d.add_argument("--dask", metavar="ADDRESS", help="run the replays on a Dask scheduler (tcp://host:8786)")
    d.add_argument("--results", metavar="FILE.jsonl", help="append one JSON line per replay (see --resume)")
    d.add_argument("--resume", action="store_true", help="reuse the replays already in --results, append the rest")
    d.add_argument("--fsync", action="store_true", help="fsync --results after every row (survives a power cut)")
    d.add_argument("--refine", choices=["scan", "bisect"], default="scan",
                   help="scan every resolution step of a change interval (default) or bisect it")
    d.add_argument("--plot", metavar="PNG", help="write the feasibility map (several sweeps: PNG-<trace>-<heuristic>.png)")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    d.add_argument("--json", action="store_true", help="one JSON object per sweep (one line each)")
    d = dsub.add_parser("report", help="feasibility summary of a sweep results file (--results of dtr sweep)")
    d.add_argument("results", metavar="RESULTS", nargs="+", help="results files (JSON lines)")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("explain", help="explain a feasibility hole: replay two budgets side by side")
    d.add_argument("trace", metavar="TRACE")
    d.add_argument("--budget", type=positive_float, required=True, help="failing budget (ratio)")
    d.add_argument("--vs", type=positive_float, default=None,
                   help="a feasible budget (ratio) to compare with: smaller for a hole, larger for an ordinary failure; required with --allocator bytes")
    d.add_argument("--heuristic", default="dtr")
    d.add_argument("--overhead-limit", default="2.0")
    d.add_argument("--allocator", default="bytes",
                   help="first-fit, best-fit, caching: explain an address-aware failure at --budget (the "
                        "missing block, the tensors that split it, replays with pin / evict-first / coop)")
    d.add_argument("--max-pins", type=int, default=100,
                   help="single-pin search (with --allocator: fragmenters pinned alone): at most this many (default 100)")
    d.add_argument("--pin-time-limit", type=positive_float, default=120.0,
                   help="single-pin search (with --allocator: the interventions): start no replay after this "
                        "many seconds (default 120)")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("to-graph", help="convert a trace into a memsched graph (forward+backward DAG)")
    d.add_argument("trace", metavar="TRACE")
    d.add_argument("-o", "--output", metavar="FILE", required=True)


def plot_sweep(result, path: str) -> None:
    """Feasibility map: outcome per sampled ratio (and the overhead of feasible runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memsched.cli.fmt import byte_unit

    colors = {"ok": "tab:green", "oom": "tab:red", "remat_exceeded": "tab:orange",
              "unresolved": "tab:gray", "nondeterministic": "tab:purple"}
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5), sharex=True, gridspec_kw={"height_ratios": [1, 2]})
    for o, c in colors.items():
        xs = [p.ratio for p in result.points if p.outcome == o]
        if xs:
            ax1.scatter(xs, [0] * len(xs), c=c, s=8, marker="|", label=o)
    for h in result.holes:
        ax1.axvspan(h.first, h.last + 1e-9, color="red", alpha=0.3)
    ax1.set_yticks([])
    ax1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, title="outcome")
    nh = len(result.holes)
    name = result.trace.split("/")[-1]
    mem = result.baseline_memory
    div, unit = byte_unit(mem)
    fig.suptitle(f"DTR feasibility map: {name}\nheuristic {result.heuristic}, {len(result.points)} budgets sampled, "
                 f"{'no holes' if nh == 0 else f'{nh} hole region' + ('' if nh == 1 else 's') + ' (shaded)'}, baseline memory {mem / div:.4g} {unit}",
                 fontsize=9)
    ok = [p for p in result.points if p.outcome == "ok"]
    ax2.plot([p.ratio for p in ok], [p.clock / result.baseline_compute for p in ok], ".", ms=3, color="tab:green")
    ax2.set_xlabel("budget (fraction of the trace's baseline memory)")
    ax2.set_ylabel("compute / baseline compute")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
