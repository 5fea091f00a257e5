"""``memsched remat`` and ``memsched pareto``: text, JSON and plots of remat results."""
from __future__ import annotations

import sys

from memsched.cli.fmt import fmt_bytes, fmt_num, table
from memsched.formulations import Graph, MemschedError
from memsched.solvers.remat.dispatch import given_peak, result_json
from memsched.solvers.result import SolveResult




def format_result(graph: Graph, res: SolveResult) -> str:

    d = result_json(graph, res)
    rows = [["status", res.status], ["method", str(d["method"])], ["budget", fmt_bytes(d["budget"])],
            ["peak", fmt_bytes(res.peak)], ["compute", fmt_num(res.compute)],
            ["baseline compute", fmt_num(d["baseline_compute"])],
            ["overhead", "-" if d["overhead_pct"] is None else f"{d['overhead_pct']:.4f} %"],
            ["recomputations", fmt_num(d["recomputations"])],
            ["lower bound", fmt_num(res.lower_bound) + (f" ({res.objective})" if res.lower_bound is not None else "")],
            ["wall", f"{res.wall_s:.3f} s"]]
    if res.message:
        rows.append(["note", res.message])
    if res.params.get("scope"):
        rows.append(["scope", str(res.params["scope"])])
    return table(rows, ["remat", "value"])


def format_pareto(graph: Graph, rows: list[dict]) -> str:

    out = []
    for r in rows:
        out.append([f"{r['budget_ratio']:.3f}", fmt_bytes(r["budget"]), r["status"], fmt_bytes(r["peak"]),
                    "-" if r["overhead_pct"] is None else f"{r['overhead_pct']:.3f}", f"{r['wall_s']:.2f}"])
    return f"{graph.name}: given-order peak {fmt_bytes(given_peak(graph))}, baseline compute {graph.total_cost():g}\n" + \
        table(out, ["budget/P", "budget", "status", "peak", "overhead %", "wall s"])


def plot_pareto(graph: Graph, rows: list[dict], path) -> None:
    """Extra compute (%) against peak (bytes) for the feasible points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted((r["peak"], r["overhead_pct"], r["status"]) for r in rows if r["peak"] is not None)
    fig, ax = plt.subplots(figsize=(6, 4))
    if pts:
        ax.step([p for p, _, _ in pts], [o for _, o, _ in pts], where="post", color="tab:blue", alpha=0.5)
        for p, o, s in pts:
            ax.plot([p], [o], "o" if s == "optimal" else "s", color="tab:blue" if s == "optimal" else "tab:orange")
    for r in rows:
        if r["peak"] is None:
            ax.axvline(r["budget"], color="tab:red", ls=":", lw=1)
    ax.set_xlabel("peak memory (bytes)")
    ax.set_ylabel("extra compute (%)")
    ax.set_title(f"{graph.name}: remat Pareto front (o optimal, s feasible, : infeasible budget)", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise MemschedError(f"pareto: cannot write plot {path}: {e}") from None
    finally:
        plt.close(fig)
