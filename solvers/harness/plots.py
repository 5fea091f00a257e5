"""matplotlib figures of a sweep: memory timelines with the peak marked, Pareto
curves (extra compute vs peak), certificate gap per family, and the feasibility
map over budgets (DTR and every other budgeted solver)."""
from __future__ import annotations

import math
from pathlib import Path

__all__ = ["all_plots", "plot_timeline", "plot_pareto", "plot_cert_gap", "plot_feasibility"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path):
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={"Software": None}, bbox_inches="tight")
    _plt().close(fig)
    return path


def plot_timeline(graph, runs: list[tuple[str, object]], path: Path, bound=None, budget=None) -> Path:
    """Memory after each event of each schedule; the peak of each is marked."""
    from memsched.formulations import evaluate

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for label, sched in runs:
        ev = evaluate(graph, sched)
        ys = [ev.initial] + ev.timeline
        line, = ax.step(range(len(ys)), ys, where="post", label=f"{label} (peak {ev.peak})", lw=1.2)
        k = ev.peak_event + 1 if ev.peak_event >= 0 else 0
        ax.plot([k], [ev.peak], "v", color=line.get_color(), ms=8)
        ax.annotate(f"{ev.peak}", (k, ev.peak), textcoords="offset points", xytext=(4, 4), fontsize=7,
                    color=line.get_color())
    if bound is not None:
        ax.axhline(bound, ls="--", color="gray", lw=0.8, label=f"best bound {bound:g}")
    if budget is not None:
        ax.axhline(budget, ls=":", color="red", lw=0.8, label=f"budget {budget:g}")
    ax.margins(y=0.12)
    ax.set_xlabel("event")
    ax.set_ylabel("bytes resident")
    ax.set_title(f"memory timeline: {graph.name}")
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def plot_pareto(rows: list[dict], path: Path, max_instances: int = 6) -> Path | None:
    """Extra compute (% over computing every operator once) vs peak (fraction of the
    given order's peak), one line per (instance, solver)."""
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
    for ax, inst in zip(axes.flat, insts):
        for (i, s), xy in sorted(pts.items()):
            if i != inst:
                continue
            xy.sort()
            ax.plot([p[0] for p in xy], [p[1] for p in xy], "o-", ms=3, label=s)
        ax.set_title(inst, fontsize=9)
        ax.set_xlabel("peak / given-order peak")
        ax.set_ylabel("extra compute %")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return _save(fig, path)


def plot_cert_gap(cells, path: Path) -> Path | None:
    """Certificate gap (best known vs best bound) per family, one box per family."""
    fams: dict[str, list] = {}
    for c in cells:
        if c.cert_gap is not None:
            fams.setdefault(f"{c.family}\n{c.problem}", []).append(100 * c.cert_gap)
    if not fams:
        return None
    plt = _plt()
    names = sorted(fams)
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(names)), 3.4))
    ax.boxplot([fams[n] for n in names], showmeans=True)
    ax.set_xticks(range(1, len(names) + 1), names, fontsize=7)
    for k, n in enumerate(names, 1):
        ax.plot([k] * len(fams[n]), fams[n], ".", color="k", ms=3, alpha=0.5)
    ax.set_ylabel("certificate gap %")
    ax.set_title("certificate gap per family (0 = certified optimal)")
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
    dtr = any("dtr" in p[0].lower() for p in pts)
    ax.set_title("feasibility map over budgets" + (" (DTR rows included)" if dtr else ""))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
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
        except Exception:
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
