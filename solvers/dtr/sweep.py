"""Budget sweeps and feasibility holes.

Protocol (:func:`sweep`):

1. coarse grid: ratios ``lo, lo + step, ..., hi`` (ratios are handled as integer
   multiples of ``resolution`` so that grid points are exact and reproducible);
2. refinement: every pair of neighbouring sampled ratios whose outcomes differ is
   re-sampled at every ``resolution`` step in between (``refine='scan'``, a dense scan,
   so that several switches inside one coarse interval are all seen; or
   ``refine='bisect'``: bisection), repeated until no unsampled change interval is left;
3. determinism: every ratio next to an outcome change (and every infeasible ratio of a
   hole) is replayed ``repeats`` times in all; differing outcomes or clocks make the
   point 'nondeterministic' (treated as unresolved);
4. a run past ``run_timeout`` seconds is 'unresolved': neither feasible nor infeasible.

A *hole* is an infeasible ratio b (outcome oom or remat_exceeded) with a feasible ratio
b' < b and a feasible ratio b'' > b among the sampled ones; consecutive infeasible
samples form one hole region, bracketed by the nearest feasible samples on each side.
"""
from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field

from .replay import budget_for, load_trace, replay, trace_baseline

__all__ = ["Point", "Hole", "SweepResult", "find_holes", "sweep", "FEASIBLE", "INFEASIBLE"]

FEASIBLE = ("ok",)
INFEASIBLE = ("oom", "remat_exceeded")


@dataclass
class Point:
    ratio: float
    budget: int
    outcome: str
    clock: int | float | None = None
    peak: int | None = None
    evictions: int | None = None
    runs: int = 1
    wall_s: float = 0.0

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Hole:
    feasible_below: float  # nearest feasible sampled ratio below the region
    first: float  # first infeasible ratio of the region
    last: float  # last infeasible ratio of the region
    feasible_above: float
    outcomes: list[str]
    ratios: list[float]

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class SweepResult:
    trace: str
    heuristic: str
    points: list[Point]
    holes: list[Hole]
    baseline_memory: int
    baseline_compute: int | float
    params: dict = field(default_factory=dict)
    wall_s: float = 0.0

    def min_feasible(self) -> float | None:
        ok = [p.ratio for p in self.points if p.outcome == "ok"]
        return min(ok) if ok else None

    def to_json(self) -> dict:
        return {"trace": self.trace, "heuristic": self.heuristic, "params": self.params,
                "baseline_memory": self.baseline_memory, "baseline_compute": self.baseline_compute,
                "samples": len(self.points), "min_feasible_ratio": self.min_feasible(),
                "unresolved": [p.ratio for p in self.points if p.outcome in ("unresolved", "nondeterministic")],
                "holes": [h.to_json() for h in self.holes], "points": [p.to_json() for p in self.points],
                "wall_s": round(self.wall_s, 3)}


def find_holes(points) -> list[Hole]:
    """Hole regions in ``points``: an iterable of Point or (ratio, outcome) pairs.
    Unresolved points are ignored (they neither open nor close a region)."""
    pts = []
    for p in points:
        r, o = (p.ratio, p.outcome) if isinstance(p, Point) else p
        if o in FEASIBLE or o in INFEASIBLE:
            pts.append((r, o))
    pts.sort()
    holes: list[Hole] = []
    last_ok = None
    run: list[tuple[float, str]] = []
    for r, o in pts:
        if o in FEASIBLE:
            if run and last_ok is not None:
                holes.append(Hole(last_ok, run[0][0], run[-1][0], r, [x[1] for x in run], [x[0] for x in run]))
            run = []
            last_ok = r
        else:
            run.append((r, o))
    return holes


# ------------------------------------------------------------------ workers
_W: dict = {}


def _init(path, heuristic, limit, timeout):
    _W["trace"] = load_trace(path)
    trace_baseline(_W["trace"])
    _W["args"] = (heuristic, limit, timeout)


def _run_one(k_res):
    k, res = k_res
    h, limit, timeout = _W["args"]
    r = replay(_W["trace"], k * res, heuristic=h, overhead_limit=limit, timeout=timeout)
    return k, (r.outcome, r.clock, r.peak, r.evictions, r.budget, r.wall_s)


def sweep(trace, heuristic: str = "dtr", *, lo: float = 0.1, hi: float = 1.0, step: float = 0.01,
          resolution: float = 1e-4, repeats: int = 3, run_timeout: float | None = 60.0, overhead_limit: float = 2.0,
          jobs: int = 1, progress=None, max_refine_points: int = 20000, refine: str = "scan") -> SweepResult:
    """Coarse-to-fine sweep of ``trace`` for one heuristic (see the module docstring).
    ``jobs`` > 1 uses that many worker processes (the trace path must be a file).
    ``refine='bisect'`` bisects each change interval down to the resolution instead of
    scanning it densely (cheaper for slow traces; finds one switch per interval)."""
    from formulations import MemschedError

    if not (0 < lo <= hi):
        raise MemschedError(f"sweep: need 0 < lo <= hi, got lo={lo} hi={hi}")
    if not (0 < resolution <= step):
        raise MemschedError(f"sweep: need 0 < resolution <= step, got resolution={resolution} step={step}")
    if refine not in ("scan", "bisect"):
        raise MemschedError(f"sweep: refine must be 'scan' or 'bisect', got {refine!r}")
    if repeats < 1:
        raise MemschedError(f"sweep: --repeats must be >= 1, got {repeats}")
    t_start = time.perf_counter()
    tr = load_trace(trace)
    base = trace_baseline(tr)
    res = resolution
    klo, khi = round(lo / res), round(hi / res)
    # grid in resolution units
    kstep = max(1, round(step / res))
    grid = list(range(klo, khi + 1, kstep))
    if grid[-1] != khi:
        grid.append(khi)
    results: dict[int, list] = {}
    pool = None
    if jobs > 1:
        ctx = mp.get_context("fork")
        pool = ctx.Pool(jobs, initializer=_init, initargs=(tr.path, heuristic, overhead_limit, run_timeout))
    else:
        _W["trace"] = tr
        _W["args"] = (heuristic, overhead_limit, run_timeout)

    def run_many(ks):
        ks = list(ks)
        items = [(k, res) for k in ks]
        out = pool.map(_run_one, items, chunksize=1) if pool else [_run_one(it) for it in items]
        for k, v in out:
            results.setdefault(k, []).append(v)
        if progress:
            progress(len(results))

    def cls(k):
        o = results[k][0][0]
        return o

    try:
        run_many(grid)
        # refinement: dense scan of every interval whose end outcomes differ
        scanned: set[tuple[int, int]] = set()
        while True:
            ks = sorted(results)
            todo = []
            for a, b in zip(ks, ks[1:]):
                if b - a > 1 and cls(a) != cls(b) and (a, b) not in scanned:
                    scanned.add((a, b))
                    if refine == "scan":
                        todo.extend(range(a + 1, b))
                    else:
                        todo.append((a + b) // 2)
            if not todo:
                break
            if len(results) + len(todo) > max_refine_points:
                todo = todo[: max(0, max_refine_points - len(results))]
                if not todo:
                    break
            run_many(todo)
        # determinism: repeat the points next to a change, and hole points
        ks = sorted(results)
        need = set()
        for a, b in zip(ks, ks[1:]):
            if cls(a) != cls(b):
                need.update((a, b))
        pts0 = [(k * res, cls(k)) for k in ks]
        for h in find_holes(pts0):
            need.update(round(r / res) for r in h.ratios)
        for _ in range(repeats - 1):
            if need:
                run_many(sorted(need))
    finally:
        if pool:
            pool.close()
            pool.join()
    points = []
    for k in sorted(results):
        runs = results[k]
        o, clock, peak, ev, budget, _ = runs[0]
        if any((x[0], x[1]) != (o, clock) for x in runs[1:]):
            o = "nondeterministic"
        points.append(Point(round(k * res, 10), budget, o, clock, peak, ev, len(runs), sum(x[5] for x in runs)))
    return SweepResult(trace=str(tr.path), heuristic=heuristic, points=points, holes=find_holes(points),
                       baseline_memory=base["baseline_memory"], baseline_compute=base["baseline_compute"],
                       params={"lo": lo, "hi": hi, "step": step, "resolution": resolution, "repeats": repeats,
                               "run_timeout": run_timeout, "overhead_limit": overhead_limit, "jobs": jobs,
                "refine": refine},
                       wall_s=time.perf_counter() - t_start)


def plot_sweep(result: SweepResult, path: str) -> None:
    """Feasibility map: outcome per sampled ratio (and the overhead of feasible runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    ax1.legend(loc="upper left", fontsize=7, ncol=5)
    ax1.set_title(f"{result.trace.split('/')[-1][:40]}  {result.heuristic}: feasibility map "
                  f"({len(result.points)} samples, {len(result.holes)} hole regions)", fontsize=9)
    ok = [p for p in result.points if p.outcome == "ok"]
    ax2.plot([p.ratio for p in ok], [p.clock / result.baseline_compute for p in ok], ".", ms=3)
    ax2.set_xlabel("budget ratio")
    ax2.set_ylabel("overhead (clock / baseline)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
