"""``memsched arena``: plan tensor offsets in one static arena (docs/arena.md).

Input: a MiniMalloc CSV buffer list (``id,lower,upper,size``; detected by a ``.csv``
suffix or its header line) or a graph with a schedule (a schedule file or ``--method``,
as ``memsched run`` takes them). For a graph, each buffer is a tensor's lifetime in the
schedule (a recomputed tensor's later copies are named ``name#2``, ``name#3``; an
operator's workspace ``op:workspace@k``).
"""
from __future__ import annotations

from pathlib import Path

from memsched.cli.fmt import emit_json, fmt_bytes, table
from memsched.formulations import MemschedError

__all__ = ["add_parsers", "cmd_arena", "load_buffers", "placement_figure"]


def _is_csv(path: str) -> bool:
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return True
    try:
        with p.open() as fh:
            head = fh.readline().strip().lower()
    except (OSError, UnicodeDecodeError):
        return False
    return head.startswith("id,") and "size" in head


def graph_buffers(graph, schedule):
    """The schedule's buffers as arena buffers named by tensor (times: event index + 1, so
    graph inputs live from 0)."""
    from memsched.instances.arena_csv import Buffer
    from memsched.solvers.executors.arena import buffers_of

    out = []
    seen: dict[str, int] = {}
    for b in buffers_of(graph, schedule):
        if b.kind == "workspace":
            name = f"{graph.ops[b.op].name}:workspace@{b.event}"
        else:
            base = graph.tensors[b.tensor].name
            seen[base] = seen.get(base, 0) + 1
            name = base if seen[base] == 1 else f"{base}#{seen[base]}"
        out.append(Buffer(name, b.start + 1, b.end + 1, b.size))
    return out


def load_buffers(args):
    """(buffers, description, peak or None) for the command's input."""
    if _is_csv(args.input):
        from memsched.instances.arena_csv import read_arena_csv

        if getattr(args, "schedule", None) or (getattr(args, "method", None) not in (None, "given")):
            raise MemschedError(f"{args.input}: a CSV buffer list takes no schedule or --method")
        return read_arena_csv(args.input), f"buffer list {args.input}", None
    from memsched.cli.options import load_graph
    from memsched.cli.run import _schedule
    from memsched.formulations import evaluate

    g = load_graph(args.input)
    sched, what = _schedule(args, g)
    return graph_buffers(g, sched), f"{args.input}, {what}", evaluate(g, sched).peak


def placement_figure(res, what: str = "", time_label: str = "time"):
    """Time x address picture of a placement: one rectangle per buffer.

    Parameters
    ----------
    res : ArenaResult
        A placement (``res.offsets`` set).
    what : str
        The input, named in the title (file and schedule).
    time_label : str
        The x axis' meaning (schedule events for a graph, lifetime units for a CSV).

    Returns
    -------
    matplotlib.figure.Figure
        Addresses in the largest binary unit that keeps the numbers readable; the lower
        bound and the capacity as lines, the legend outside the data.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from memsched.cli.fmt import byte_unit, fmt_bytes

    fig, ax = plt.subplots(figsize=(10, 5))
    bufs = res.buffers
    top = max(res.arena_size or 0, res.lower_bound, res.capacity or 0, 1)
    div, unit = byte_unit(top)
    cmap = plt.get_cmap("tab20")
    for k, (b, o) in enumerate(zip(bufs, res.offsets or [])):
        if b.size == 0:
            continue
        ax.add_patch(Rectangle((b.lower, o / div), b.upper - b.lower, b.size / div, facecolor=cmap(k % 20),
                               edgecolor="black", linewidth=0.3))
    t0 = min((b.lower for b in bufs), default=0)
    t1 = max((b.upper for b in bufs), default=1)
    ax.set_xlim(t0, t1)
    ax.set_ylim(0, top / div * 1.04)
    ax.axhline(res.lower_bound / div, color="black", linestyle="--", linewidth=1.2,
               label=f"lower bound (max live) {fmt_bytes(res.lower_bound)}")
    if res.arena_size is not None:
        ax.axhline(res.arena_size / div, color="black", linestyle="-", linewidth=1.2,
                   label=f"arena ({res.status}) {fmt_bytes(res.arena_size)}")
    if res.capacity is not None:
        ax.axhline(res.capacity / div, color="gray", linestyle=":", linewidth=1.2,
                   label=f"capacity {fmt_bytes(res.capacity)}")
    ax.set_xlabel(time_label)
    ax.set_ylabel(f"address ({unit})")
    head = f"Static arena: {what}" if what else "Static arena"
    ax.set_title(f"{head}\n{len(bufs)} buffers, arena {fmt_bytes(res.arena_size)}, {res.status}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def add_parsers(sub) -> None:
    s = sub.add_parser("arena", help="plan tensor offsets in one static arena (exact, anytime)",
                       description="Place every buffer at a byte offset so that buffers live at the same time never "
                                   "overlap; minimize the arena, or fit --capacity. INPUT: a MiniMalloc CSV "
                                   "(id,lower,upper,size; half-open lifetimes) or a graph with a schedule.")
    s.add_argument("input", metavar="INPUT", help="buffer list .csv, or GRAPH")
    s.add_argument("schedule", metavar="SCHEDULE", nargs="?", help="for a GRAPH: schedule JSON (default: --method)")
    s.add_argument("--method", default="given",
                   help="for a GRAPH without SCHEDULE: given (default), an ordering heuristic or exact")
    s.add_argument("--capacity", type=int, default=None, help="arena capacity in bytes: feasible / infeasible")
    s.add_argument("--minimize", action="store_true", help="with --capacity: also minimize the arena")
    s.add_argument("--solver", choices=["auto", "search", "cpsat", "greedy"], default="auto",
                   help="auto (default): greedy, canonical search, CP-SAT backstop")
    s.add_argument("--time-limit", type=float, default=60.0, help="seconds (default 60)")
    s.add_argument("--plot", metavar="FILE.png", help="write the time x address picture")
    s.add_argument("--offsets", action="store_true", help="print every buffer's offset")
    s.add_argument("--json", action="store_true", help="print one JSON object (offsets included)")
    s.set_defaults(func=cmd_arena)


def cmd_arena(args) -> int:
    from memsched.solvers.arena import solve_arena

    if args.capacity is not None and args.capacity < 0:
        raise MemschedError(f"--capacity must be a non-negative integer, got {args.capacity}")
    if not args.time_limit > 0:
        raise MemschedError(f"--time-limit must be positive, got {args.time_limit}")
    if args.plot:
        from memsched.cli.paths import check_plot

        check_plot(args.plot)
    bufs, what, peak = load_buffers(args)
    res = solve_arena(bufs, capacity=args.capacity, minimize=True if args.minimize else None, method=args.solver,
                      time_limit=args.time_limit)
    if args.plot and res.offsets is not None:
        from memsched.cli.paths import save_figure

        label = ("time (lifetime units of the CSV)" if _is_csv(args.input)
                 else "time (schedule event; a buffer lives from its computation to its free)")
        save_figure(placement_figure(res, what, label), args.plot, dpi=110, bbox_inches="tight")
    if args.json:
        out = {"status": res.status, "arena_size": res.arena_size, "lower_bound": res.lower_bound,
               "offsets": res.offset_map(), "wall_s": round(res.wall_s, 4), "capacity": res.capacity,
               "max_live": res.max_live, "greedy_size": res.greedy_size, "buffers": len(bufs), "nodes": res.nodes}
        if peak is not None:
            out["peak"] = peak
        emit_json(out)
    else:
        rows = [["input", what], ["buffers", str(len(bufs))], ["status", res.status],
                ["arena", "-" if res.arena_size is None else fmt_bytes(res.arena_size)],
                ["lower bound", f"{res.lower_bound} (max live {res.max_live})"],
                ["greedy best fit", str(res.greedy_size)], ["wall", f"{res.wall_s:.2f} s"]]
        if res.capacity is not None:
            rows.insert(3, ["capacity", str(res.capacity)])
        if peak is not None:
            rows.append(["schedule peak", str(peak)])
        print(table(rows, ["", ""]))
        if args.offsets and res.offsets is not None:
            print(table([[b.id, b.lower, b.upper, b.size, o] for b, o in zip(res.buffers, res.offsets)],
                        ["buffer", "lower", "upper", "size", "offset"]))
    if res.status == "interrupted":
        return 130
    return 1 if res.status == "timeout" else 0
