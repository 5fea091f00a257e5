"""``memsched crosscheck``: the report table, the timelines plot, the command."""
from __future__ import annotations

from memsched.cli.fmt import fmt_bytes, table
from memsched.cli.options import BUDGET_HELP, ORDER_HELP, graph_parent, json_parent, positive_float, ratio_or_bytes
from memsched.formulations import evaluate
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # solver modules load lazily, when a command runs (fast --help)
    from memsched.solvers.crosscheck import CrosscheckReport, Row


def _status_text(rep: CrosscheckReport, r: Row) -> str:
    if r.method == "exact":
        cert = r.json.get("certified")
        return "certified optimal" if cert else f"{r.status}"
    cs, scope = r.json.get("class_status"), r.json.get("scope")
    if r.problem == "remat" and cs in ("optimal", "infeasible") and cs != r.status:
        return f"{r.status} ({cs} in {scope})"
    return r.status


def _best_order_bound(rep: CrosscheckReport):
    """The best proven lower bound on an order's peak: the bounds' or the exact solve's."""
    lb = rep.order_lower_bound
    exact = next((r for r in rep.rows if r.method == "exact"), None)
    if exact is not None and exact.lower_bound is not None:
        lb = max(lb or 0, exact.lower_bound)
    return lb


def _table_rows(rep: CrosscheckReport, order_lb) -> list[list[str]]:
    """One table row per method; the gap is to the order bound (peak) or the remat bound (compute)."""
    remat_lb = max((r.lower_bound for r in rep.rows
                    if r.problem == "remat" and r.global_claims and r.lower_bound is not None), default=None)
    rows = []
    for r in rep.rows:
        realized = ", ".join(f"{fmt_bytes(m['realized_peak'])}" if k.endswith(':cpu') and len(rep.backends) == 1
                             else f"{k}={m['realized_peak']}" for k, m in r.realized.items()) or "-"
        if r.problem == "order":
            gap = None if r.peak is None or not order_lb else (r.peak - order_lb) / r.peak
        else:
            gap = None if r.compute is None or remat_lb is None or not r.compute else (r.compute - remat_lb) / r.compute
        pct = rep.extra_pct(r)
        rows.append([r.method, r.problem, fmt_bytes(r.peak) if r.peak is not None else "-", realized,
                     "-" if pct is None else f"{pct:+.2f}%", _status_text(rep, r),
                     "-" if gap is None else f"{100 * gap:.2f}% " + ("peak" if r.problem == "order" else "compute")])
    return rows


def _head(rep: CrosscheckReport, order_lb) -> list[str]:
    g = rep.graph
    head = [f"graph {g.name}: {g.n_ops} operators, given-order peak {fmt_bytes(_given_peak(rep))}"]
    if rep.status == "interrupted":
        head.append(f"status: interrupted (Ctrl-C) in the {rep.interrupted_in} phase after {rep.steps_done} of "
                    f"{rep.steps_total} steps; the rows below are those finished before it")
    budget = "- (not reached)" if rep.budget is None else fmt_bytes(rep.budget)
    ratio = f" ({rep.budget_ratio} x given peak)" if rep.budget_ratio else ""
    scope = ", free order" if rep.order == "free" else ", first computations in the given order"
    scaled = (f" (every size divided by {rep.exec_scale}; realized peaks are of that scaled program)"
              if rep.exec_scale > 1 else "")
    return head + [f"remat budget: {budget}{ratio}{scope} (remat statuses are claims about this problem; "
                   "a class result is shown in brackets)",
                   f"best proven lower bound on the peak: {fmt_bytes(order_lb)}",
                   f"programs run on: {', '.join(rep.backends) or 'none'}{scaled}", ""]


def _verdict(rep: CrosscheckReport) -> str:
    if rep.disagreements:
        return "VERDICT: DISAGREEMENT\n" + "\n".join(f"  - {d}" for d in rep.disagreements)
    n = sum(1 for r in rep.rows if r.schedule is not None)
    partial = " (partial: the rows finished before Ctrl-C)" if rep.status == "interrupted" else ""
    ran = "realized == modeled, identical outputs, " if rep.backends else "(no program run), "
    return (f"VERDICT{partial}: all {n} schedules agree: evaluator == solver claims, {ran}"
            f"no bound above a feasible value ({rep.wall_s:.1f} s)")


def format_report(rep: CrosscheckReport) -> str:
    """The text report: what was asked, one row per method, and the verdict."""
    lb = _best_order_bound(rep)
    body = table(_table_rows(rep, lb), ["method", "problem", "modeled peak", "realized peak", "extra compute",
                                        "status", "gap to bound (order rows: peak; remat rows: compute)"])
    return "\n".join(_head(rep, lb)) + body + "\n\n" + _verdict(rep)


def _given_peak(rep: CrosscheckReport):
    r = next((r for r in rep.rows if r.method == "given"), None)
    return r.peak if r else None


def _panel_lines(rep: CrosscheckReport, problem: str) -> list[tuple[str, list[int], int, bool]]:
    """The lines of one panel: (label, memory at each compute event, peak, highlighted).
    Methods whose schedules are identical share one line (``dfs = best``); the best row
    (least peak for orders, least compute within the budget for remat) is highlighted."""
    groups: dict = {}
    for r in rep.rows:
        if r.problem == problem and r.schedule is not None and r.peak is not None:
            groups.setdefault(r.schedule.events, []).append(r)
    if problem == "order":
        def key(rs):
            return rs[0].peak
    else:
        def key(rs):
            return rep.budget is not None and rs[0].peak > rep.budget, rs[0].compute, rs[0].peak
    best = min(groups.values(), key=key, default=None)
    out = []
    for events, rs in groups.items():
        ev = evaluate(rep.graph, rs[0].schedule)
        ys = [m for (kind, _), m in zip(events, ev.timeline) if kind == 0]
        out.append((" = ".join(r.method for r in rs), ys, ev.peak, rs is best))
    return out


def _draw_panel(ax, rep: CrosscheckReport, problem: str, div: float, colors) -> None:
    lines = _panel_lines(rep, problem)
    for (label, ys, peak, best), col in zip(lines, colors(len(lines))):
        xs = [k / max(1, len(ys) - 1) for k in range(len(ys))]
        ax.step(xs, [y / div for y in ys], where="post", lw=2.4 if best else 1.1, alpha=1.0 if best else 0.8,
                zorder=3 if best else 2, color=col,
                label=f"{label}: peak {fmt_bytes(peak)}" + (" (best)" if best else ""))
        if ys:
            k = max(range(len(ys)), key=ys.__getitem__)
            ax.plot([xs[k]], [ys[k] / div], "v", color=col, ms=7, zorder=4)  # this line's peak
    if problem == "order" and rep.order_lower_bound is not None:
        ax.axhline(rep.order_lower_bound / div, color="black", ls=":", lw=1.2,
                   label=f"lower bound on an order's peak: {fmt_bytes(int(rep.order_lower_bound))}")
    if problem == "remat" and rep.budget is not None:
        ax.axhline(rep.budget / div, color="black", ls="--", lw=1.2, label=f"budget: {fmt_bytes(rep.budget)}")


def timelines_figure(rep: CrosscheckReport):
    """The figure of :func:`plot_timelines` (returned open, for tests to inspect).

    Two panels side by side (small multiples): orderings (no recomputation), with the
    proven lower bound on the peak of an order; and remat schedules, with the budget.
    The order lower bound is not drawn on the remat panel (recomputation may go below it).
    Methods with identical schedules share a line; each line has its own colour and a
    marker at its peak; the best line of a panel is drawn thick; bound and budget are
    black; the legends sit outside the data, below each panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memsched.cli.fmt import byte_unit, distinct_colors

    drawn = [r for r in rep.rows if r.schedule is not None and r.peak is not None]
    div, unit = byte_unit(max([r.peak for r in drawn] + [rep.budget or 0, rep.order_lower_bound or 0, 1]))
    panels = [("order", "orderings (no recomputation)"), ("remat", "rematerialization (recomputation allowed)")]
    panels = [(k, t) for k, t in panels if any(r.problem == k for r in drawn)] or panels[:1]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5.2), sharey=True, squeeze=False)
    for ax, (problem, title) in zip(axes[0], panels):
        _draw_panel(ax, rep, problem, div, distinct_colors)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("progress through the schedule (compute events, normalized)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    axes[0][0].set_ylabel(f"memory while an operator runs ({unit})")
    fig.suptitle(f"memsched crosscheck: {rep.graph.name} ({rep.graph.n_ops} operators), memory timelines "
                 "(\u25bc = peak of each line)", fontsize=11)
    fig.tight_layout()
    return fig


def plot_timelines(rep: CrosscheckReport, path: str) -> None:
    """Memory timelines (memory during each compute event) of every method, one panel per
    problem, with the budget and the best lower bound on an order's peak drawn as lines."""
    from memsched.cli.paths import save_figure

    save_figure(timelines_figure(rep), path, "--plot", dpi=120, bbox_inches="tight")


def _bytes(n) -> str:
    """Bytes with their unit even below 1 KiB (a progress line has no header to say so)."""
    text = fmt_bytes(n)
    return text + " B" if n is not None and abs(int(n)) < 1024 else text


def step_text(rep_graph, step) -> str:
    """One progress line for a finished cross-check step, in bytes and compute units."""
    r = step.row
    if step.phase == "bounds":
        return f"bounds: lower bound on an order's peak {_bytes(step.lower_bound)}"
    if step.phase == "programs":
        return f"ran {step.count} programs on {step.method}" + (f" ({step.note})" if step.note else "")
    if r is None:
        return f"remat {step.method.removeprefix('remat-')} at budget {_bytes(step.budget)}: {step.note}"
    if r.problem == "order":
        return f"order {r.method}: peak {_bytes(r.claimed_peak)}" + ("" if r.method != "exact" else f" ({r.status})")
    base = rep_graph.total_cost()
    extra = "" if r.claimed_compute is None or not base else f" (+{100 * (r.claimed_compute - base) / base:.2f}%)"
    comp = "no schedule" if r.claimed_compute is None else f"compute {r.claimed_compute:.6g}{extra}"
    return f"remat {r.method.removeprefix('remat-')} at budget {_bytes(step.budget)}: {r.status}, {comp}"


def cli(args) -> int:
    import json
    import sys

    from memsched.instances import load_graph

    from memsched.cli.fmt import solver_output_to_stderr
    from memsched.cli.interrupts import interrupted
    from memsched.cli.paths import check_plot
    from memsched.cli.progress import ProgressBar

    if args.plot:
        check_plot(args.plot)
    g = load_graph(args.graph)
    with solver_output_to_stderr(), ProgressBar("crosscheck", 0, enabled=not args.json, every=1) as bar:
        from memsched.solvers.crosscheck import crosscheck

        def progress(step):
            bar.update(step.done, step_text(g, step), total=step.total)
            if interrupted():  # a solver swallowed the Ctrl-C to return its best: stop the cross-check here
                raise KeyboardInterrupt

        rep = crosscheck(g, budget=args.budget, time_limit=args.time_limit, order=args.order, progress=progress)
    stopped = rep.status == "interrupted"
    if args.plot and not stopped:
        plot_timelines(rep, args.plot)
    if args.json:
        print(json.dumps(rep.to_json(), default=str))
    else:
        print(format_report(rep))
        if args.plot:
            print(f"timelines plotted to {args.plot}" if not stopped else f"no plot drawn (interrupted): {args.plot}")
    if rep.disagreements:
        print(f"memsched crosscheck: {len(rep.disagreements)} disagreement(s): {rep.disagreements[0]}", file=sys.stderr)
        return 1
    return 130 if stopped else 0


def add_parsers(sub) -> None:
    s = sub.add_parser("crosscheck", parents=[graph_parent(), json_parent()],
                       help="solve one instance every way and check all answers against each other")
    s.add_argument("--budget", type=ratio_or_bytes, default=None,
                   help=BUDGET_HELP + " (default: the smallest of 0.7, 0.8, 0.9 at which remat finds a schedule)")
    s.add_argument("--order", choices=["free", "given"], default="free", help=ORDER_HELP)
    s.add_argument("--time-limit", type=positive_float, default=30.0,
                   help="seconds for each exact solve (exact order, remat cp, MILP, baselines; default 30)")
    s.add_argument("--plot", metavar="PNG", help="memory timelines plot (.png, .pdf or .svg; checked before solving)")
    s.set_defaults(func=cli)
