"""``memsched remat`` and ``memsched pareto``: text, JSON and plots of remat results."""
from __future__ import annotations

import time

from memsched.cli.fmt import emit_json, fmt_bytes, fmt_num, solver_output_to_stderr, table
from memsched.cli.interrupts import interrupted, mark_interrupted
from memsched.cli.options import (BUDGET_HELP, check_mip_solver, graph_parent, json_parent, load_graph, ratio_or_bytes,
                                  remat_parent)
from memsched.cli.paths import check_plot
from memsched.formulations import Graph, MemschedError
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # solver modules load lazily, when a command runs (fast --help)
    from memsched.solvers.result import SolveResult


def add_parsers(sub) -> None:
    g, j = graph_parent(), json_parent()
    s = sub.add_parser("remat", parents=[g, remat_parent(time_limit=60.0, method_help=METHOD_HELP), j],
                       help="rematerialization: least compute within a memory budget (or least peak within a compute budget)")
    s.add_argument("--budget", type=ratio_or_bytes, default=None,
                   help=BUDGET_HELP + " (default 0.8 with --objective compute; with --objective peak no default: "
                                      "a budget given is an upper limit on the peak)")
    s.add_argument("--objective", choices=["compute", "peak"], default="compute",
                   help="compute: least compute with peak <= budget; peak: least peak with compute <= (1+eps) x baseline")
    s.add_argument("--eps", type=float, default=None,
                   help="extra compute allowed with --objective peak, a share of the baseline (default 0)")
    s.add_argument("--progress", action="store_true", help="print each improving solution on stderr")
    s.set_defaults(func=cmd_remat)

    s = sub.add_parser("pareto", parents=[g, remat_parent(time_limit=30.0, method_help="any remat method (default cp)"), j],
                       help="budget sweep: extra compute vs peak (table and plot)")
    s.add_argument("--budgets", type=ratio_or_bytes, nargs="+", default=None,
                   help="budgets, each as for remat --budget: " + BUDGET_HELP + " (default 1.0 0.9 0.8 0.7 0.6 0.5)")
    s.add_argument("--plot", metavar="PNG", help="write the Pareto plot here (.png, .pdf or .svg; checked before solving)")
    s.set_defaults(func=cmd_pareto)


DEFAULT_BUDGET = 0.8  # remat --budget with --objective compute
METHOD_HELP = "cp, milp, checkpoint-all, chen-sqrt, revolve, dtr-greedy, sp-knapsack, width-dp, scale (large graphs: free order, no cap)"


def cmd_remat(args) -> int:
    from memsched.solvers.remat import dispatch as remat

    if args.eps is not None and args.objective != "peak":
        raise MemschedError("--eps applies to --objective peak only (least compute has no compute limit)")
    if args.eps is not None and not args.eps >= 0:
        raise MemschedError(f"--eps must be >= 0 (a share of the baseline compute), got {args.eps}")
    args.eps = args.eps or 0.0
    g = load_graph(args.graph)
    if args.budget is None and args.objective == "compute":
        args.budget = DEFAULT_BUDGET
    t0 = time.perf_counter()
    try:
        check_mip_solver(args)
        with solver_output_to_stderr():
            res = remat.solve_remat(g, budget=args.budget, method=args.method, cap=args.cap,
                                    time_limit=args.time_limit, mip_solver=args.mip_solver or "highs", objective=args.objective,
                                    eps=args.eps, seed=args.seed, progress=args.progress, workers=args.workers, order=args.order)
    except KeyboardInterrupt:  # the method had nothing to hand back (e.g. Ctrl-C while its model was built)
        from memsched.solvers.result import SolveResult, Status

        res = SolveResult(solver=f"remat-{args.method}", status=Status.INTERRUPTED, objective=args.objective,
                          wall_s=time.perf_counter() - t0, message="interrupted before a schedule was found",
                          params={"method": args.method, "order": args.order, "cap": args.cap,
                                  "budget": None if args.budget is None else remat.resolve_budget(g, args.budget)})
    mark_interrupted(res)
    if args.json:
        d = remat.result_json(g, res)
        d["stopped"] = stop_reason(res, args.time_limit)
        emit_json(d)
    else:
        print(format_result(g, res, args.time_limit))
    return 130 if interrupted() else 0


def cmd_pareto(args) -> int:
    from memsched.solvers.remat import dispatch as remat

    if args.plot:
        check_plot(args.plot)
    check_mip_solver(args)
    budgets = args.budgets if args.budgets is not None else [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]
    g = load_graph(args.graph)
    rows = []
    with solver_output_to_stderr():
        for b in budgets:  # one budget at a time: Ctrl-C keeps the points already solved
            try:
                more = remat.pareto_sweep(g, budgets=[b], method=args.method, cap=args.cap, order=args.order,
                                          time_limit=args.time_limit, progress=not args.json,
                                          mip_solver=args.mip_solver or "highs", workers=args.workers, seed=args.seed)
            except KeyboardInterrupt:
                more = []
            if interrupted():
                for r in more:
                    if r.get("status") not in ("optimal", "infeasible"):
                        r["status"] = "interrupted"
                rows += more
                break
            rows += more
    if args.plot:
        plot_pareto(g, rows, args.plot, method=args.method)
    if args.json:
        emit_json({"graph": g.name, "points": rows, **({"status": "interrupted"} if interrupted() else {})})
    else:
        print(format_pareto(g, rows))
        if interrupted():
            done = sum(1 for r in rows if r.get("status") != "interrupted")
            print(f"interrupted: {done} of {len(budgets)} budgets solved")
        if args.plot:
            print(f"plot written to {args.plot}")
    return 130 if interrupted() else 0


def stop_reason(res: SolveResult, time_limit: float | None = None) -> str:
    """Why the solve stopped, in words: the method's own reason (``params["stop"]``: time
    limit, bound met, interrupted, proved infeasible, ...) when it gives one, and what a
    proof inside a narrower class does not cover."""
    st = res.status
    late = time_limit is not None and res.wall_s >= 0.9 * time_limit
    said = res.params.get("stop")
    if st == "interrupted":
        return "interrupted (Ctrl-C): the best schedule found so far" if res.schedule is not None \
            else "interrupted (Ctrl-C) before any schedule within the budget was found"
    if st == "optimal":
        return "proved optimal" + (f": {said}" if said and said != "interrupted" else "")
    if st == "infeasible":
        return "proved infeasible: no schedule fits the budget" + (f" ({said})" if said else "")
    cs = res.class_status
    if cs in ("optimal", "infeasible"):
        return (f"proved {cs} among {class_words(res.scope)}" + (f" ({said})" if said else "")
                + f", a narrower class than the asked problem ({asked_words(res)})")
    if said and said != "interrupted":
        return said + ("" if res.schedule is not None or st not in ("timeout", "unknown")
                       else " before any schedule within the budget was found")
    if st == "feasible":
        if late:
            return f"time limit ({time_limit:g} s) reached before optimality was proven"
        return "the method ended without a proof of optimality (a heuristic, or a narrower class of schedules)"
    if st == "timeout":
        return f"time limit ({time_limit:g} s) reached" + ("" if res.schedule is not None else
                                                             " before any schedule within the budget was found") \
            if time_limit is not None else "time limit reached"
    if st == "unknown":
        return "no schedule found and no proof that none exists"
    return st


def anytime_words(res: SolveResult) -> str:
    """first schedule, best schedule, proof (seconds) and the final gap, from res.extra."""
    ex = res.extra

    def sec(k):
        return "-" if ex.get(k) is None else f"{ex[k]:.2f} s"
    gap = "-" if ex.get("gap") is None else f"{100.0 * ex['gap']:.4f} %"
    return f"first {sec('time_to_first_s')}, best {sec('time_to_best_s')}, proof {sec('time_to_proof_s')}, gap {gap}"


def format_result(graph: Graph, res: SolveResult, time_limit: float | None = None) -> str:

    from memsched.solvers.remat.dispatch import result_json

    d = result_json(graph, res)
    rows = [["status", res.status], ["method", str(d["method"])], ["budget", fmt_bytes(d["budget"])],
            ["peak", fmt_bytes(res.peak)], ["compute", fmt_num(res.compute)],
            ["baseline compute", fmt_num(d["baseline_compute"])],
            ["overhead", "-" if d["overhead_pct"] is None else f"{d['overhead_pct']:.4f} %"],
            ["recomputations", fmt_num(d["recomputations"])],
            ["lower bound", fmt_num(res.lower_bound) + (f" ({res.objective})" if res.lower_bound is not None else "")],
            ["wall", f"{res.wall_s:.3f} s"]]
    rows.append(["anytime", anytime_words(res)])
    rows.append(["stopped", stop_reason(res, time_limit)])
    if res.message:
        rows.append(["note", res.message])
    rows.append(["claim", claim_words(res)])
    if res.scope:
        cc = res.params.get("caps_from_compute")
        searched = f"{res.scope}: {class_words(res.scope)}"
        if isinstance(cc, dict):  # docs/remat.md, "Caps from a known compute"
            src = "the compute limit" if res.objective == "peak" else "the compute of a schedule within the budget,"
            searched += (f", with at most {cc['max_cap']} extra computation(s) per operator, caps derived from "
                         f"{src} {cc['compute']:g} (they keep an optimum of the unbounded problem)")
        rows.append(["class searched", searched])
    return table(rows, ["remat", "value"])


# --------------------------------------------------------------- claims in words
_CLASS_WORDS = {
    "free": "all schedules (free order)",
    "given-first-computations": "schedules that keep the given order of first computations",
    "given-order-stages": "Checkmate's stage schedules (given order; each stage's recomputations in given-order position)",
    "heuristic": "the schedules this heuristic builds",
}


def class_words(scope: str | None) -> str:
    """The class a method searched (SolveResult.scope), in words (docs/claims.md)."""
    if not scope:
        return "an unnamed class"
    parts = scope.split(",")
    cap = next((p.split(":", 1)[1] for p in parts if p.startswith("capped:")), None)
    base = next((p for p in parts if not p.startswith("capped:")), "free")
    words = _CLASS_WORDS.get(base, base)
    if cap is not None:
        words += f" with at most {cap} extra computation(s) per operator"
    return words


def asked_words(res: SolveResult) -> str:
    order = res.params.get("order", "free")
    cap = res.params.get("cap")
    return ("free order" if order == "free" else "the given order of first computations") + \
        ("" if cap is not None else ", unbounded recomputation")


def claim_words(res: SolveResult) -> str:
    """What the result proves, in words: e.g. "optimal among schedules that keep the given
    order; not proven for free order"."""
    st, cs = res.status, res.class_status
    if st in ("optimal", "infeasible"):
        return f"{st} for the asked problem ({asked_words(res)})"
    if cs in ("optimal", "infeasible"):
        return f"{cs} among {class_words(res.scope)}; not proven for {asked_words(res)}"
    if res.scope == "heuristic":
        return f"a heuristic: nothing proven ({asked_words(res)})"
    if not res.scope:  # e.g. Ctrl-C before the method returned: no class searched to speak of
        return f"nothing proven ({asked_words(res)})"
    return f"nothing proven beyond the lower bound ({class_words(res.scope)})"


def _status_cell(r: dict) -> str:
    cs = r.get("class_status")
    if cs in ("optimal", "infeasible") and cs != r["status"]:
        return f"{r['status']} ({cs} in {r.get('scope')})"
    return r["status"]


def format_pareto(graph: Graph, rows: list[dict]) -> str:
    from memsched.solvers.remat.dispatch import given_peak

    out = []
    for r in rows:
        out.append(["-" if r["budget_ratio"] is None else f"{r['budget_ratio']:.3f}", fmt_bytes(r["budget"]), _status_cell(r), fmt_bytes(r["peak"]),
                    "-" if r["overhead_pct"] is None else f"{r['overhead_pct']:.3f}", f"{r['wall_s']:.2f}"])
    return f"{graph.name}: given-order peak {fmt_bytes(given_peak(graph))}, baseline compute {graph.total_cost():g}\n" + \
        table(out, ["budget/P", "budget", "status", "peak", "overhead %", "wall s"])


def pareto_front(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Split the rows with a schedule into (front, dominated): a point is on the front
    unless another point has peak <= and extra compute <= with one of them strictly
    smaller. The front is sorted by peak."""
    pts = [r for r in rows if r.get("peak") is not None and r.get("overhead_pct") is not None]
    front, dominated = [], []
    for r in pts:
        beaten = any(q is not r and q["peak"] <= r["peak"] and q["overhead_pct"] <= r["overhead_pct"]
                     and (q["peak"] < r["peak"] or q["overhead_pct"] < r["overhead_pct"]) for q in pts)
        (dominated if beaten else front).append(r)
    # equal points: keep one on the front
    seen, uniq = set(), []
    for r in sorted(front, key=lambda r: (r["peak"], r["overhead_pct"])):
        k = (r["peak"], r["overhead_pct"])
        if k not in seen:
            seen.add(k)
            uniq.append(r)
    return uniq, dominated


def pareto_figure(graph: Graph, rows: list[dict], method: str | None = None):
    """The figure of :func:`plot_pareto` (returned open, for tests to inspect): the
    non-dominated points joined as a staircase (proven optimal: filled circles; feasible
    but not proven: squares), dominated points as grey crosses off the front, budgets with
    no schedule as dotted vertical lines. Peaks in KiB/MiB/GiB; the legend outside the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memsched.cli.fmt import byte_unit

    front, dominated = pareto_front(rows)
    none = [r for r in rows if r.get("peak") is None]
    top = max([r["peak"] for r in front + dominated] + [r["budget"] for r in none] + [1])
    div, unit = byte_unit(top)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    if front:
        ax.step([r["peak"] / div for r in front], [r["overhead_pct"] for r in front], where="post",
                color="tab:blue", alpha=0.6, lw=1.5, label="Pareto front")
        opt = [r for r in front if r["status"] == "optimal"]
        feas = [r for r in front if r["status"] != "optimal"]
        if opt:
            ax.plot([r["peak"] / div for r in opt], [r["overhead_pct"] for r in opt], "o", color="tab:blue",
                    ls="none", label="proven optimal for its budget")
        if feas:
            ax.plot([r["peak"] / div for r in feas], [r["overhead_pct"] for r in feas], "s", color="tab:orange",
                    ls="none", label="feasible (optimality not proven)")
    if dominated:
        ax.plot([r["peak"] / div for r in dominated], [r["overhead_pct"] for r in dominated], "x", color="0.55",
                ls="none", label="dominated (not on the front)")
    for n, r in enumerate(none):
        ax.axvline(r["budget"] / div, color="tab:red", ls=":", lw=1,
                   label="budget with no schedule found" if n == 0 else None)
    ax.set_xlabel(f"peak memory ({unit})")
    ax.set_ylabel("extra compute (% of the baseline)")
    ax.set_title(f"{graph.name}: rematerialization Pareto front" + (f" ({method})" if method else ""), fontsize=10)
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plot_pareto(graph: Graph, rows: list[dict], path, method: str | None = None) -> None:
    """Extra compute (%) against peak for the feasible points (see :func:`pareto_figure`)."""
    from memsched.cli.paths import save_figure

    save_figure(pareto_figure(graph, rows, method), path, "--plot", dpi=120, bbox_inches="tight")
