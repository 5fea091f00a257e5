"""`memsched dtr {replay, sweep, explain, to-graph}`: parse, call the library, print."""
from __future__ import annotations

import json
import math
from pathlib import Path

from formulations import MemschedError

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


def _load(args):
    from instances.dtr_trace import parse_trace

    start = {"auto": None, "yes": True, "no": False}[getattr(args, "start", "auto")]
    return parse_trace(args.trace, start=start)


def run(args) -> int:
    cmd = getattr(args, "dtr_command", None)
    if not cmd:
        args.dtr_parser.print_help()
        return 2
    return {"replay": _replay, "sweep": _sweep, "explain": _explain, "to-graph": _to_graph}[cmd](args)


def _print_kv(d: dict, keys) -> None:
    for k in keys:
        if k in d:
            print(f"{k:18s} {d[k]}")


def _replay(args) -> int:
    from .replay import parse_limit, replay

    limit = parse_limit(args.overhead_limit)
    if args.budget_bytes is not None and args.budget_bytes < 0:
        raise MemschedError(f"--budget-bytes must be non-negative, got {args.budget_bytes}")
    if not _is_trace(args.trace):
        return _replay_graph(args, limit)
    tr = _load(args)
    ratio = args.ratio if args.ratio is not None or args.budget_bytes is not None else 1.0
    r = replay(tr, ratio if args.budget_bytes is None else None, budget=args.budget_bytes, heuristic=args.heuristic,
               overhead_limit=limit, seed=args.seed, keep_runtime=True)
    d = r.to_json()
    if args.json:
        print(json.dumps(d))
    else:
        _print_kv(d, ["outcome", "heuristic", "ratio", "budget", "clock", "overhead", "peak", "evictions",
                      "eager_evictions", "recomputations", "baseline_memory", "baseline_compute", "wall_s"])
        if "failure" in d:
            print(f"{'failure':18s} {d['failure']}")
    return 0


def _replay_graph(args, limit) -> int:
    from formulations import order_peak
    from instances.formats import load_graph

    from .graph import replay_graph

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


def _sweep(args) -> int:
    import sys

    from .replay import parse_limit
    from .sweep import plot_sweep, sweep

    limit = parse_limit(args.overhead_limit)
    if args.jobs < 1 or args.jobs > 2:
        raise MemschedError(f"--jobs must be 1 or 2 (the machine is shared), got {args.jobs}")
    tr = _load(args)

    def progress(n):
        if not args.json and sys.stderr.isatty():
            print(f"\r  {n} ratios sampled", end="", file=sys.stderr, flush=True)

    res = sweep(tr, args.heuristic, lo=args.lo, hi=args.hi, step=args.step, resolution=args.resolution,
                repeats=args.repeats, run_timeout=args.run_timeout, overhead_limit=limit, jobs=args.jobs,
                progress=progress, refine=args.refine)
    if args.plot:
        plot_sweep(res, args.plot)
    d = res.to_json()
    if args.json:
        print(json.dumps(d))
        return 0
    if sys.stderr.isatty():
        print(file=sys.stderr)
    counts = {}
    for p in res.points:
        counts[p.outcome] = counts.get(p.outcome, 0) + 1
    print(f"trace {res.trace}  heuristic {res.heuristic}  {len(res.points)} ratios sampled in {res.wall_s:.1f} s")
    print(f"outcomes: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}")
    print(f"smallest feasible ratio: {res.min_feasible()}")
    if not res.holes:
        print("no feasibility holes found")
    for h in res.holes:
        print(f"hole: infeasible {h.first:.4f}..{h.last:.4f} ({len(h.ratios)} samples: {', '.join(sorted(set(h.outcomes)))}) "
              f"between feasible {h.feasible_below:.4f} and {h.feasible_above:.4f}")
    if args.plot:
        print(f"feasibility map written to {args.plot}")
    return 0


def _explain(args) -> int:
    from .explain import explain, format_explanation
    from .replay import parse_limit

    limit = parse_limit(args.overhead_limit)
    tr = _load(args)
    d = explain(tr, args.budget, args.vs, heuristic=args.heuristic, overhead_limit=limit)
    if args.json:
        print(json.dumps(d, default=lambda x: None if isinstance(x, float) and math.isinf(x) else str(x)))
    else:
        print(format_explanation(d))
    return 0


def _to_graph(args) -> int:
    from instances.formats import save_graph

    from .graph import trace_to_graph

    g = trace_to_graph(_load(args))
    save_graph(g, args.output)
    s = g.summary()
    print(f"wrote {args.output}: {s['operators']} operators, {s['tensors']} tensors, {s['pinned']} pinned inputs, "
          f"{s['required_outputs']} required outputs, total cost {s['total_cost']:.0f}")
    return 0
