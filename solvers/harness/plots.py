"""matplotlib figures of a sweep: memory timelines with the peak marked, Pareto
curves (extra compute vs peak), certificate gap per family, and the feasibility
map over budgets (DTR and every other budgeted solver)."""
from __future__ import annotations

import math
from pathlib import Path

from memsched.formulations import MemschedError

__all__ = ["all_plots", "plot_timeline", "plot_pareto", "plot_cert_gap", "plot_feasibility", "byte_unit",
           "distinct_colors", "front"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def byte_unit(max_bytes) -> tuple[float, str]:
    """(divisor, unit) for an axis whose largest value is ``max_bytes``: B, KiB, MiB, GiB, TiB."""
    x, div = float(max_bytes or 0), 1.0
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            return div, unit
        x /= 1024
        div *= 1024
    return div, "TiB"


def distinct_colors(n: int) -> list:
    """``n`` distinct colours (tab10 up to 10, tab20 up to 20, then a sampled hue circle)."""
    import matplotlib

    name = "tab10" if n <= 10 else "tab20" if n <= 20 else "hsv"
    cmap = matplotlib.colormaps[name]
    return [cmap(i if n <= 20 else i / n) for i in range(n)]


def front(xy: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The non-dominated points of ``xy`` (both coordinates minimized), sorted by x."""
    out = []
    for p in sorted(set(xy)):
        if not any(q != p and q[0] <= p[0] and q[1] <= p[1] for q in xy):
            out.append(p)
    return out


def _save(fig, path: Path):
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={"Software": None}, bbox_inches="tight")
    _plt().close(fig)
    return path


def plot_timeline(graph, runs: list[tuple[str, object]], path: Path, bound=None, budget=None) -> Path:
    """Memory after each event of each schedule; the peak of each is marked."""
    from memsched.formulations import evaluate

    plt = _plt()
    evs = [(label, evaluate(graph, sched)) for label, sched in runs]
    div, unit = byte_unit(max([ev.peak for _, ev in evs] + [bound or 0, budget or 0, 1]))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for (label, ev), col in zip(evs, distinct_colors(len(evs))):
        ys = [(y / div) for y in [ev.initial] + ev.timeline]
        ax.step(range(len(ys)), ys, where="post", label=f"{label} (peak {ev.peak / div:.4g} {unit})", lw=1.2,
                color=col)
        k = ev.peak_event + 1 if ev.peak_event >= 0 else 0
        ax.plot([k], [ev.peak / div], "v", color=col, ms=8)
    if bound is not None:
        ax.axhline(bound / div, ls="--", color="gray", lw=0.8, label=f"best lower bound {bound / div:.4g} {unit}")
    if budget is not None:
        ax.axhline(budget / div, ls=":", color="red", lw=0.8, label=f"budget {budget / div:.4g} {unit}")
    ax.margins(y=0.12)
    ax.set_xlabel("event (compute or free) of the schedule")
    ax.set_ylabel(f"memory resident ({unit})")
    ax.set_title(f"memory timeline: {graph.name}")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path)


def plot_pareto(rows: list[dict], path: Path, max_instances: int = 6) -> Path | None:
    """Extra compute (% over computing every operator once) vs peak (fraction of the
    given order's peak): per (instance, solver) its non-dominated points joined as a
    staircase (a dominated point is no part of a front); one panel per instance."""
    pts: dict[tuple, list] = {}
    for r in rows:
        if r.get("budget") is None or r.get("status") not in ("optimal", "feasible", "timeout"):
            continue
        if r.get("peak") is None or r.get("compute") is None or not r.get("given_peak") or not r.get("baseline_compute"):
            continue
        x = r["peak"] / r["given_peak"]
        y = 100.0 * (r["compute"] / r["baseline_compute"] - 1.0)
        pts.setdefault((r["instance"], r["solver"]), []).append((x, y))
    if not pts:
        return None
    insts = sorted({i for i, _ in pts})[:max_instances]
    plt = _plt()
    n = len(insts)
    cols = min(3, n)
    fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(4 * cols, 3.2 * math.ceil(n / cols)), squeeze=False)
    solvers = sorted({s for _, s in pts})
    color = dict(zip(solvers, distinct_colors(len(solvers))))
    for ax, inst in zip(axes.flat, insts):
        for (i, s), xy in sorted(pts.items()):
            if i != inst:
                continue
            f = front(xy)
            ax.step([p[0] for p in f], [p[1] for p in f], where="post", marker="o", ms=3, color=color[s], label=s)
        ax.set_title(inst, fontsize=9)
        ax.set_xlabel("peak / given-order peak")
        ax.set_ylabel("extra compute (%)")
        ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], color=color[s], marker="o", ms=3, label=s) for s in solvers]
    fig.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 0.98), frameon=False,
               title="solver")
    fig.suptitle("Pareto fronts: extra compute vs peak (non-dominated points)", fontsize=10)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return _save(fig, path)


def plot_cert_gap(cells, path: Path) -> Path | None:
    """Certificate gap (best known vs best bound) of every instance, one bar each,
    grouped and coloured by family (a box per family said nothing with one family or
    a handful of instances); certified optima are marked 0 explicitly."""
    items = sorted(((c.family, c.problem, c.instance, 100 * c.cert_gap) for c in cells if c.cert_gap is not None),
                   key=lambda t: (t[0], t[1], -t[3], t[2]))
    if not items:
        return None
    plt = _plt()
    fams = sorted({(f, p) for f, p, _, _ in items})
    color = dict(zip(fams, distinct_colors(len(fams))))
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.24 * len(items)))
    ys = list(range(len(items)))[::-1]
    ax.barh(ys, [g for *_, g in items], color=[color[(f, p)] for f, p, _, _ in items], height=0.7)
    for y, (_, _, _, g) in zip(ys, items):
        ax.annotate("certified" if g == 0 else f"{g:.2f} %", (g, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=6)
    ax.set_yticks(ys, [f"{i} ({p})" for _, p, i, _ in items], fontsize=6)
    ax.set_xlabel("certificate gap: (best known - best bound) / best known (%)")
    ax.set_title("certificate gap per instance (0 = certified optimal)", fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[k], label=f"{k[0]} / {k[1]}") for k in fams]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title="family / problem")
    top = max(g for *_, g in items)
    ax.set_xlim(0, top * 1.2 if top > 0 else 1.0)  # gaps are >= 0; all certified: a unit axis, not +-0.06
    return _save(fig, path)


_COLORS = {"optimal": "#1a9850", "feasible": "#91cf60", "infeasible": "#d73027", "timeout": "#fdae61",
           "error": "#000000"}


def plot_feasibility(rows: list[dict], path: Path) -> Path | None:
    """Outcome per (instance, solver) over budgets; budgets in bytes are shown as a
    fraction of the given order's peak."""
    pts = []
    for r in rows:
        b = r.get("budget")
        if b is None:
            continue
        x = b if b <= 1 else (b / r["given_peak"] if r.get("given_peak") else None)
        if x is None:
            continue
        pts.append((f"{r['instance']} / {r['solver']}", x, r.get("status", "error")))
    if not pts:
        return None
    plt = _plt()
    ys = sorted({p[0] for p in pts})
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.28 * len(ys)))
    for st, col in _COLORS.items():
        sel = [p for p in pts if p[2] == st]
        if sel:
            ax.scatter([p[1] for p in sel], [ys.index(p[0]) for p in sel], c=col, marker="s", s=30, label=st)
    ax.set_yticks(range(len(ys)), ys, fontsize=6)
    ax.set_xlabel("budget (fraction of the given order's peak)")
    ax.grid(axis="x", alpha=0.3)
    dtr = any("dtr" in p[0].lower() for p in pts)
    ax.set_title("feasibility map over budgets" + (" (DTR rows included)" if dtr else ""))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="status")
    return _save(fig, path)


def _timeline_runs(cells, rows, base, max_timelines):
    """Pick the instances whose solvers disagree most; load their graphs."""
    from memsched.formulations import Schedule

    from .spec import graph_hash, load_source

    cand = []
    for c in cells:
        if c.problem != "peak" or c.best is None:
            continue
        with_sched = [r for r in c.rows if r.get("schedule") and r.get("status") in ("optimal", "feasible", "timeout")]
        if len(with_sched) < 1:
            continue
        spread = max((c.gap(r) or 0.0) for r in with_sched)
        cand.append((-spread, c.instance, c, with_sched))
    cand.sort(key=lambda t: (t[0], t[1]))
    out = []
    for _, _, c, rs in cand[:max_timelines]:
        try:
            g = load_source(rs[0]["source"], base)
        except (MemschedError, OSError):  # the instance file is gone or unreadable: no timeline for it
            continue
        if graph_hash(g) != rs[0]["instance_hash"]:
            continue  # the file changed since the sweep: do not plot a different graph
        # one line per distinct peak, best first, at most 4
        seen, runs = set(), []
        for r in sorted(rs, key=lambda r: (r["objective"], r["solver"])):
            if r["objective"] in seen:
                continue
            seen.add(r["objective"])
            runs.append((r["solver"], Schedule.from_names(g, r["schedule"])))
            if len(runs) == 4:
                break
        out.append((c, g, runs))
    return out


def all_plots(rows, cells, out_dir: Path, *, base=None, max_timelines: int = 3, prefix: str = ""):
    figs = []
    for c, g, runs in _timeline_runs(cells, rows, base, max_timelines):
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in c.instance)
        p = plot_timeline(g, runs, out_dir / f"{prefix}timeline_{safe}.png", bound=c.bound)
        figs.append((f"memory timeline of {c.instance} (peak marked per schedule)", p))
    p = plot_pareto(rows, out_dir / f"{prefix}pareto.png")
    if p:
        figs.append(("Pareto curves: extra compute vs peak", p))
    p = plot_cert_gap(cells, out_dir / f"{prefix}cert_gap.png")
    if p:
        figs.append(("certificate gap per family", p))
    p = plot_feasibility(rows, out_dir / f"{prefix}feasibility.png")
    if p:
        figs.append(("feasibility map over budgets", p))
    return figs
