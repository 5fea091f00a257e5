"""Budget sweeps and feasibility holes.

Protocol (:func:`sweep`). By default (``step=None``) a sweep is *dense*: the 0.01 grid
first, then strides halving down to one ``resolution`` step, until every step of
``[lo, hi]`` is sampled (the coarse grid only orders the work, so partial results cover the
range early); then step 3 below. A sample whose budget lies in the budget-equivalence
interval of a finished replay takes that replay's result without running (every budget of
the interval runs the identical replay: :attr:`Runtime.eq_lo`, docs/dtr.md). With a
``step`` (a quick look that can miss holes between two coarse points of equal outcome):

1. coarse grid: ratios ``lo, lo + step, ..., hi`` (ratios are handled as integer
   multiples of ``resolution`` so that grid points are exact and reproducible);
2. refinement: every pair of neighbouring sampled ratios whose outcomes differ is
   re-sampled at every ``resolution`` step in between (``refine='scan'``, a dense scan,
   so that several switches inside one coarse interval are all seen; or
   ``refine='bisect'``: bisection), repeated until no unsampled change interval is left;
3. determinism: every ratio next to an outcome change is replayed ``repeats`` times in
   all; every other infeasible ratio of a hole (its interior) is sampled ``repeats`` times
   in all, each repeat round coarse to fine, and a repeat there whose budget lies in the
   interval of a replay of the same round takes that replay's result (so each round
   re-derives the hole from its own replays; with ``share``); differing outcomes or
   clocks make the point 'nondeterministic' (treated as unresolved);
4. a run past ``run_timeout`` seconds is 'unresolved': neither feasible nor infeasible
   (in a worker process it is also killed for real a little later, see below); a run
   whose worker process died is 'error' (also neither).

A *hole* is an infeasible ratio b (outcome oom, remat_exceeded, or thrash_or_oom with
``early_stop``) with a feasible ratio
b' < b and a feasible ratio b'' > b among the sampled ones; consecutive infeasible
samples form one hole region, bracketed by the nearest feasible samples on each side.

Execution (:func:`sweep_many`): the protocol of each (trace, heuristic) sweep is a
generator of batches of ratios; the replays of all batches of all sweeps go through one
executor of the benchmark harness (:mod:`solvers.harness.executors`: a local pool of
persistent worker processes, or Dask), as tasks of kind ``dtr_replay``
(:func:`execute_replay_task`). A sweep's next batch is submitted as soon as its previous
batch is complete, so several sweeps share the pool. Every replay appends one JSON line
to the ``results`` file; ``resume`` reuses the replays already there.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memsched.formulations import ratio_budget

from .replay import load_trace, replay, trace_baseline

__all__ = ["Point", "Hole", "SweepResult", "find_holes", "sweep", "sweep_many", "SweepInterrupted",
           "InlineExecutor", "execute_replay_task", "trace_id", "summarize_rows", "summarize_result",
           "format_summary", "report_rows",
           "FEASIBLE", "INFEASIBLE", "UNRESOLVED"]

FEASIBLE = ("ok",)
EARLY = "thrash_or_oom"  # Runtime.EARLY_OUTCOME (the sweep names it without importing the runtime)
DENSE_ORDER_STEP = 0.01  # a dense sweep's first pass (an ordering of work only)
# thrash_or_oom: a replay stopped early by the proof that it cannot end ok (early_stop)
INFEASIBLE = ("oom", "remat_exceeded", "fragmentation", "thrash_or_oom")
UNRESOLVED = ("unresolved", "nondeterministic", "error")


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
    replays: int = 0  # replays executed by this sweep
    reused: int = 0  # replays taken from the results file (resume)
    derived: int = 0  # samples taken from an equal replay's budget interval (sweep_many's share)
    resumed: int = 0  # replays resumed from another replay's snapshot (sweep_many's prefix)
    repeat_derived: int = 0  # repeat runs of hole interiors taken from a replay of the same round

    def min_feasible(self) -> float | None:
        ok = [p.ratio for p in self.points if p.outcome == "ok"]
        return min(ok) if ok else None

    def to_json(self) -> dict:
        return {"trace": self.trace, "heuristic": self.heuristic, "params": self.params,
                "baseline_memory": self.baseline_memory, "baseline_compute": self.baseline_compute,
                "samples": len(self.points), "min_feasible_ratio": self.min_feasible(),
                "unresolved": [p.ratio for p in self.points if p.outcome in UNRESOLVED],
                "holes": [h.to_json() for h in self.holes], "points": [p.to_json() for p in self.points],
                "wall_s": round(self.wall_s, 3), "replays": self.replays, "reused": self.reused,
                "derived": self.derived, "repeat_derived": self.repeat_derived, "resumed": self.resumed,
                "sampling": self.params.get("sampling")}


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




# ------------------------------------------------------------------ protocol
def _dense_levels(klo: int, khi: int, kstep: int) -> list[tuple[int, list[int]]]:
    """Every index of ``klo..khi`` in coarse-to-fine order: strides ``kstep // 2``,
    ``kstep // 4``, ..., 1 (each level holds the indices of its stride not in an earlier
    level; the coarse grid itself comes first, separately)."""
    seen = set(range(klo, khi + 1, kstep)) | {khi}
    out = []
    s = kstep
    while s > 1:
        s = max(1, s // 2)
        lvl = [k for k in range(klo, khi + 1, s) if k not in seen]
        seen.update(lvl)
        if lvl:
            out.append((s, lvl))
    return out


def _protocol(results: dict, grid: list[int], repeats: int, refine: str, max_refine_points: int,
              dense: tuple[int, int, int] | None = None):
    """The sweep protocol as a generator of ``(phase, ks)`` batches of ratio indices
    (ratio = k x resolution). Before asking for the next batch, the driver appends every
    run of the current batch to ``results[k]``: a list of runs
    ``(outcome, clock, peak, evictions, budget, wall_s)``; a point's class is the
    outcome of its first run. ``dense=(klo, khi, kstep)``: after the coarse grid, every
    index of the range is sampled, level by level (:func:`_dense_levels`), and no
    refinement is needed."""

    def cls(k):
        return results[k][0][0]

    yield "coarse", list(grid)
    if dense is not None:
        for s, lvl in _dense_levels(*dense):
            yield f"dense stride {s}", lvl
    # refinement: every interval whose end outcomes differ (dense scan or bisection)
    scanned: set[tuple[int, int]] = set()
    rnd = 0
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
        if not todo or dense is not None:
            break
        if len(results) + len(todo) > max_refine_points:
            todo = todo[: max(0, max_refine_points - len(results))]
            if not todo:
                break
        rnd += 1
        yield f"refine {rnd}", todo
    # determinism: every point next to an outcome change is replayed again in each round; the
    # other points of a hole (its interior) are sampled again in each round, coarse to fine
    # (:func:`_repeat_levels`), a point in the budget interval of a replay of the same round
    # taking that replay's result (``_Driver._sample``)
    ks = sorted(results)
    edge, inner = set(), set()
    for a, b in zip(ks, ks[1:]):
        if cls(a) != cls(b):
            edge.update((a, b))
    for h in find_holes([(k, cls(k)) for k in ks]):
        inner.update(h.ratios)
    inner -= edge
    for i in range(repeats - 1):
        if edge:
            yield f"repeat {i + 2}", sorted(edge)
        for s, lvl in _repeat_levels(sorted(inner)):
            yield f"repeat {i + 2} interior stride {s}", lvl


def _repeat_levels(ks: list[int]) -> list[tuple[int, list[int]]]:
    """The interior points ``ks`` of the holes, coarse to fine: strides 16, 8, 4, 2, 1 of the
    index (each level holds the points of its stride not in an earlier level), so that a
    round's coarser replays are finished, and their intervals known, when the finer points
    are sampled."""
    out, seen = [], set()
    for s in (16, 8, 4, 2, 1):
        lvl = [k for k in ks if k % s == 0 and k not in seen]
        seen.update(lvl)
        if lvl:
            out.append((s, lvl))
    return out


# ------------------------------------------------------------------ trace identity
def trace_id(tr) -> str:
    """sha256 (hex) identifying a trace: of its log file's bytes when the sweep read it
    from a file, else of its parsed content (operators and schedule). Cached in
    ``tr.meta['_sha256']``."""
    h = tr.meta.get("_sha256")
    if h is None:
        h = hashlib.sha256(repr((tr.ops, tr.schedule, tr.tensor_names, tr.has_start)).encode()).hexdigest()
        tr.meta["_sha256"] = h
    return h


def _file_sha256(path) -> str:
    d = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            d.update(chunk)
    return d.hexdigest()


def _load(trace):
    """Parse ``trace`` (a path or a DTRTrace); a path's trace is identified by its file's sha256."""
    if isinstance(trace, (str, Path)):
        tr = load_trace(trace)
        tr.meta.setdefault("_sha256", _file_sha256(trace))
        return tr
    return load_trace(trace)


# ------------------------------------------------------------------ one replay (worker side)
_TRACES: dict = {}  # instance hash -> DTRTrace, in a harness worker (sent once per worker)


def _debug_hook(debug: dict, ratio: float) -> None:
    """Test hooks: ``{"hang": [ratios], "crash": [ratios], "sleep": seconds}``."""

    def hit(key):
        return any(abs(ratio - x) < 1e-9 for x in debug.get(key, ()))

    if hit("hang"):
        while True:  # ignores the soft deadline: only the harness's kill ends it
            time.sleep(3600)
    if hit("crash"):
        os._exit(3)
    if debug.get("sleep"):
        time.sleep(float(debug["sleep"]))


def execute_replay_task(task: dict, trace=None, *, cache: bool = True) -> dict:
    """Run one replay task (kind ``dtr_replay``): ``trace`` is the DTRTrace, sent with the
    first task of each trace to a worker and cached there by ``task['instance_hash']``.
    The replay itself stops at ``task['timeout']`` seconds (outcome 'unresolved'); the
    executor kills the worker at ``task['hard_limit']``."""
    h = task["instance_hash"]
    if trace is not None and cache:
        _TRACES.setdefault(h, trace)
    tr = trace if trace is not None else _TRACES.get(h)
    if tr is None:
        return {"status": "error", "message": "worker has no copy of the trace (driver bug)", "wall_s": 0.0}
    if task.get("debug"):
        _debug_hook(task["debug"], task["ratio"])
    alloc = task.get("allocator", "bytes")
    if alloc != "bytes":
        from .allocator import replay_alloc

        r = replay_alloc(tr, task["ratio"], heuristic=task["heuristic"], allocator=alloc,
                         overhead_limit=task["overhead_limit"], seed=task["seed"], timeout=task["timeout"])
    elif task.get("prefix"):
        return _replay_prefix_task(task, tr)
    else:
        r = replay(tr, task["ratio"], heuristic=task["heuristic"], overhead_limit=task["overhead_limit"],
                   seed=task["seed"], timeout=task["timeout"], keep_runtime=True,
                   early_stop=bool(task.get("early_stop")))
    rt = r.runtime
    eq = None
    if r.outcome in FEASIBLE or r.outcome in INFEASIBLE:  # address-aware runs too (docs/dtr.md, Allocators)
        eq = _equiv(rt)
    out = {"status": "done", "outcome": r.outcome, "clock": r.clock, "peak": r.peak, "evictions": r.evictions,
           "budget": r.budget, "wall_s": r.wall_s, "worker": f"pid{os.getpid()}", "equiv": eq}
    if r.outcome == "thrash_or_oom":
        out["stopped_at"] = r.failure["pos"]  # schedule position of the early stop
    return out


def _equiv(rt) -> list:
    """Every budget in [lo, hi] runs the identical replay (Runtime.eq_lo / eq_hi)."""
    return [int(rt.eq_lo), None if rt.eq_hi == float("inf") else int(rt.eq_hi) - 1]


_PREFIX: dict = {}  # (instance hash, heuristic, overhead limit, seed) -> PrefixStore, in this process
_PREFIX_KEYS = 2  # stores kept per process (the most recent sweeps)


def _replay_prefix_task(task: dict, tr) -> dict:
    """A ``dtr_replay`` task through prefix sharing (:mod:`.prefix`): resumed from the
    deepest snapshot of an earlier replay in this process whose budget interval holds the
    budget; the result equals an independent replay's."""
    from .prefix import PrefixStore, replay_shared
    from .replay import budget_for

    key = (task["instance_hash"], task["heuristic"], task["overhead_limit"], task["seed"])
    store = _PREFIX.get(key)
    if store is None:
        while len(_PREFIX) >= _PREFIX_KEYS:
            del _PREFIX[next(iter(_PREFIX))]
        store = _PREFIX[key] = PrefixStore(len(tr.schedule), min_width=max(1, int(task.get("min_width", 1))))
    b = trace_baseline(tr)
    budget = budget_for(tr, task["ratio"])
    limit = b["baseline_compute"] * (task["overhead_limit"] - 1)
    t0 = time.perf_counter()
    deadline = None if task["timeout"] is None else t0 + task["timeout"]
    try:
        out, rt, start = replay_shared(tr, budget, task["heuristic"], remat_limit=limit, seed=task["seed"],
                                       deadline=deadline, store=store)
    except TimeoutError:
        return {"status": "done", "outcome": "unresolved", "clock": None, "peak": None, "evictions": None,
                "budget": budget, "wall_s": time.perf_counter() - t0, "worker": f"pid{os.getpid()}", "equiv": None}
    return {"status": "done", "outcome": out, "clock": rt.clock, "peak": rt.peak, "evictions": rt.evictions,
            "budget": budget, "wall_s": time.perf_counter() - t0, "worker": f"pid{os.getpid()}",
            "equiv": _equiv(rt), "resumed_at": start}


class InlineExecutor:
    """Runs replay tasks one at a time in this process (no hard kill: only the
    replay's own deadline). Same interface as the harness executors."""

    name = "inline"

    def run(self, tasks: list[dict], texts: dict, on_done) -> None:
        pending = deque(tasks)
        while pending:
            t = pending.popleft()
            try:
                out = execute_replay_task(t, texts[t["instance_hash"]], cache=False)
            except Exception as e:  # a runtime bug: recorded like a worker's error
                out = {"status": "error", "message": f"{type(e).__name__}: {e}", "wall_s": 0.0}
            more = on_done(t, out)
            if more:
                pending.extend(more)


# ------------------------------------------------------------------ driver
class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: the replays done so far are in ``results_file`` (if any)."""

    def __init__(self, results_file, executed: int, reused: int, partial=None):
        super().__init__(f"sweep interrupted after {executed} replays")
        self.results_file, self.executed, self.reused = results_file, executed, reused
        self.partial = partial or []  # a SweepResult per sweep from the ratios sampled so far


@dataclass
class _State:
    idx: int
    trace: object
    heuristic: str  # as given
    hname: str  # canonical
    tid: str
    base: dict
    gen: object = None
    results: dict = field(default_factory=dict)
    used: dict = field(default_factory=dict)
    left: int = 0
    phase: str = ""
    replays: int = 0
    reused: int = 0
    batch_replays: int = 0
    batch_reused: int = 0
    t0: float = 0.0
    wall_s: float = 0.0
    done: bool = False
    derived: int = 0  # samples taken from an equal run's budget interval (no replay)
    repeat_derived: int = 0  # repeat runs of hole interiors taken from a replay of the same round
    resumed: int = 0  # replays resumed from a snapshot (prefix sharing)
    intervals: "_Intervals" = field(default_factory=lambda: _Intervals())  # of every replay
    rounds: dict = field(default_factory=dict)  # repeat round -> _Intervals of that round's replays
    share: bool = True
    allocator: str = "bytes"

    def add_interval(self, lo, hi, run) -> None:
        self.intervals.add(lo, hi, run)

    def lookup(self, budget):
        return self.intervals.lookup(budget)

    @property
    def round(self) -> str | None:
        """The repeat round of the current phase ('2', '3', ...), None outside the repeats."""
        return self.phase.split()[1] if self.phase.startswith("repeat") else None

    @property
    def label(self) -> str:
        return f"{Path(str(self.trace.path)).stem[:28]} {self.heuristic}"


class _Intervals:
    """Budget-equivalence intervals of finished replays (disjoint or equal, Runtime.eq_lo /
    eq_hi), sorted by lower end, each with its run's (outcome, clock, peak, evictions)."""

    def __init__(self):
        self.eq_lo: list = []  # sorted lower ends
        self.eq: list = []  # (lo, hi, outcome, clock, peak, evictions), same order

    def add(self, lo, hi, run) -> None:
        import bisect

        i = bisect.bisect_left(self.eq_lo, lo)
        if i < len(self.eq_lo) and self.eq_lo[i] == lo:
            return  # the same run's interval (intervals of different runs are disjoint or equal)
        self.eq_lo.insert(i, lo)
        self.eq.insert(i, (lo, hi) + tuple(run))

    def lookup(self, budget):
        import bisect

        i = bisect.bisect_right(self.eq_lo, budget) - 1
        if i >= 0:
            e = self.eq[i]
            if e[1] is None or budget <= e[1]:
                return e
        return None


def _reusable(row: dict, run_timeout) -> bool:
    o = row.get("outcome")
    if o in FEASIBLE or o in INFEASIBLE:
        return True
    # a replay that did not finish in T seconds is not retried with a limit <= T
    rt = row.get("run_timeout")
    return o == "unresolved" and rt is not None and run_timeout is not None and rt >= run_timeout


def grid_ratio(k: int, resolution: float) -> float:
    """Ratio k x resolution as the decimal the user reads (k x 0.0007 for k = 200 is 0.14,
    not the float product 0.13999999999999999): the ratio `dtr replay --ratio` gets for
    the printed value, so both take one budget (ratio_budget reads a ratio as it prints)."""
    from fractions import Fraction

    return float(k * Fraction(repr(float(resolution))))


def grid_bounds(lo: float, hi: float, resolution: float) -> tuple[int, int]:
    """The indices k of the first and last ratio k x resolution inside [lo, hi] (a bound
    within 1e-9 steps of a multiple counts as that multiple); klo > khi when there is none."""
    return max(1, math.ceil(lo / resolution - 1e-9)), math.floor(hi / resolution + 1e-9)


def _check(lo, hi, step, resolution, refine, repeats, jobs):
    from memsched.formulations import MemschedError

    if not (0 < lo <= hi):
        raise MemschedError(f"sweep: need 0 < lo <= hi, got lo={lo} hi={hi}")
    if not math.isfinite(hi):
        raise MemschedError(f"sweep: --lo and --hi must be finite ratios, got lo={lo} hi={hi}")
    if step is None:
        step = max(resolution, DENSE_ORDER_STEP)
    if not (0 < resolution <= step) or not math.isfinite(step):
        raise MemschedError(f"sweep: need 0 < resolution <= step, got resolution={resolution} step={step}")
    klo, khi = grid_bounds(lo, hi, resolution)
    if klo > khi:
        raise MemschedError(f"sweep: no multiple of --resolution {resolution:g} in [{lo:g}, {hi:g}] (the sampled "
                            "ratios are multiples of the resolution)")
    if refine not in ("scan", "bisect"):
        raise MemschedError(f"sweep: refine must be 'scan' or 'bisect', got {refine!r}")
    if repeats < 1:
        raise MemschedError(f"sweep: --repeats must be >= 1, got {repeats}")
    if jobs < 1:
        raise MemschedError(f"sweep: --jobs must be >= 1, got {jobs}")


def sweep_many(pairs, *, lo: float = 0.1, hi: float = 1.0, step: float | None = None, resolution: float = 1e-4,
               repeats: int = 3, run_timeout: float | None = 60.0, overhead_limit: float = 2.0, jobs: int = 1,
               executor=None, dask=None, results=None, resume: bool = False, seed: int = 0,
               refine: str = "scan", max_refine_points: int = 20000, kill_grace: float | None = None,
               progress=None, log=None, debug: dict | None = None, fsync: bool = False,
               share: bool = True, allocator: str = "bytes", prefix: bool = False,
               early_stop: bool = False) -> list[SweepResult]:
    """Run the sweep protocol for every ``(trace, heuristic)`` of ``pairs`` concurrently,
    all replays through one executor; returns one SweepResult per pair, in order.

    Parameters
    ----------
    pairs : list of (trace, heuristic)
        A trace is a path or a DTRTrace.
    lo, hi, resolution : float
        The ratio range and its resolution (ratios are integer multiples of it).
    step : float or None
        None (the default): a *dense* sweep, every ``resolution`` step of ``[lo, hi]``
        sampled, first the 0.01 grid, then strides halving down to one step (partial
        results are spread over the range early). A ``step`` samples that coarse grid and
        refines only intervals whose end outcomes differ (a quick look: it misses holes
        between two coarse points of the same outcome).
    share : bool
        A sample whose budget lies in the budget-equivalence interval of a finished replay
        (:attr:`Runtime.eq_lo` .. ``eq_hi``: every budget there runs the identical replay)
        takes that replay's outcome, clock, peak and evictions without running (counted in
        ``SweepResult.derived``). Determinism repeats replay every sample next to an outcome
        change again; a hole's interior sample may take its repeat from a replay of the same
        round only (``SweepResult.repeat_derived``).
    allocator : str
        ``bytes`` (simrd's byte counting, the default) or an address-aware model
        (:mod:`.allocator`: ``first-fit``, ``best-fit``, ``caching``; shared as bytes runs are).
    prefix : bool
        Prefix sharing (:mod:`.prefix`, bytes only): a replay resumes from the deepest
        snapshot, taken by an earlier replay in the same worker process, whose budget
        interval holds its budget (counted in ``SweepResult.resumed``; the result equals an
        independent replay's). Determinism repeats always run from the start.
    early_stop : bool
        Replays stop as soon as they provably cannot end 'ok' (bytes only; docs/dtr.md
        section 3, "Early stop"): such a sample has outcome ``thrash_or_oom`` (infeasible;
        its full replay ends in remat_exceeded or oom, which one is not decided) and the
        clock, peak and evictions at the stop, not the full run's. Feasibility, holes and
        every other sample are those of full replays.
    executor, dask, jobs
        A harness executor (``LocalExecutor``, ``DaskExecutor``) or ``InlineExecutor``;
        default: ``DaskExecutor(dask)`` if ``dask``, else ``LocalExecutor(jobs)`` if
        ``jobs`` > 1, else inline.
    run_timeout, kill_grace : float
        In a worker process a replay stops itself at ``run_timeout`` s and is killed at
        ``run_timeout + kill_grace`` s (default grace: max(2 s, run_timeout / 4)); both
        are recorded as 'unresolved', a dead worker as 'error'.
    results, resume, fsync
        ``results``: a JSON-lines file receiving one row per replay (an existing non-empty
        file needs ``resume``); with ``resume`` the replays already in it are reused (same
        trace sha256, START flag, heuristic, budget, overhead limit and seed; an unresolved
        one only when its run_timeout was >= this one). A last line without its newline (a
        write cut by a kill) is not reused: it is dropped and rerun. ``fsync``: fsync the
        file after every row (survives a power cut).
    progress, log
        ``progress(n)``: called with the number of sampled ratios of a sweep after each of
        its batches; ``log(line)``: one progress line per batch.

    Returns
    -------
    list of SweepResult

    Ctrl-C raises :class:`SweepInterrupted` (a KeyboardInterrupt) after the workers are
    stopped, with the partial maps.

    Complexity: one replay per sample not derived from an interval or reused, plus the
    determinism repeats; the replays of all sweeps share the executor's workers.
    """
    from memsched.formulations import MemschedError

    from .allocator import ALLOCATORS

    _check(lo, hi, step, resolution, refine, repeats, jobs)
    if allocator not in ALLOCATORS:
        raise MemschedError(f"--allocator: expected one of {', '.join(ALLOCATORS)}, got {allocator!r}")
    cfg = _SweepConfig(lo, hi, step, resolution, repeats, run_timeout, overhead_limit, jobs, refine,
                       max_refine_points, kill_grace, seed, allocator, share, debug,
                       prefix and allocator == "bytes", early_stop and allocator == "bytes")
    pairs = list(pairs)
    if not pairs:
        return []
    return _Driver(cfg, pairs, executor, dask, results, resume, fsync, progress, log).run()


@dataclass
class _SweepConfig:
    """The protocol's parameters (see :func:`sweep_many`), with the derived grid."""
    lo: float
    hi: float
    step: float | None
    resolution: float
    repeats: int
    run_timeout: float | None
    overhead_limit: float
    jobs: int
    refine: str
    max_refine_points: int
    kill_grace: float | None
    seed: int
    allocator: str
    share: bool
    debug: dict | None
    prefix: bool = False
    early_stop: bool = False

    def __post_init__(self):
        res = self.resolution
        self.dense = self.step is None
        if self.dense:
            self.step = max(res, DENSE_ORDER_STEP)
        self.klo, self.khi = grid_bounds(self.lo, self.hi, res)
        self.kstep = max(1, round(self.step / res))
        self.grid = list(range(self.klo, self.khi + 1, self.kstep))
        if self.grid[-1] != self.khi:
            self.grid.append(self.khi)
        self.limit = float(self.overhead_limit)
        if self.run_timeout is None:
            self.hard = 1e6  # no limit in practice; selectors reject poll timeouts past 2**31 ms
        else:
            grace = self.kill_grace if self.kill_grace is not None else max(2.0, self.run_timeout / 4)
            self.hard = self.run_timeout + grace

    def protocol(self, results: dict):
        return _protocol(results, self.grid, self.repeats, self.refine, self.max_refine_points,
                         (self.klo, self.khi, self.kstep) if self.dense else None)


class _Driver:
    """Runs the protocols of several sweeps through one executor: a sweep's next batch is
    submitted when its previous batch is complete; samples are derived from equal runs'
    intervals, reused from the results file, or replayed."""

    def __init__(self, cfg: _SweepConfig, pairs, executor, dask, results, resume, fsync, progress, log):
        from .runtime import canonical_heuristic

        self.cfg, self.progress, self.log, self.results, self.resume = cfg, progress, log, results, resume
        self.t_start = time.perf_counter()
        loaded: dict = {}
        self.states: list[_State] = []
        for i, (trace, heuristic) in enumerate(pairs):
            ck = str(trace) if isinstance(trace, (str, Path)) else id(trace)
            if ck not in loaded:
                loaded[ck] = _load(trace)
            tr = loaded[ck]
            st = _State(i, tr, heuristic, canonical_heuristic(heuristic), f"{trace_id(tr)}/start={int(tr.has_start)}",
                        trace_baseline(tr))
            st.gen = cfg.protocol(st.results)
            st.share = cfg.share and not cfg.debug  # a test hook targets a ratio: run it
            st.allocator = cfg.allocator
            self.states.append(st)
        if executor is None:
            from memsched.solvers.pool.executors import DaskExecutor, LocalExecutor

            jobs = cfg.jobs
            executor = DaskExecutor(dask) if dask is not None else LocalExecutor(jobs) if jobs > 1 else InlineExecutor()
        self.executor = executor
        self.store, self.reuse = self._open_store(results, resume, fsync)
        self.texts = {st.tid: st.trace for st in self.states}
        self.totals = {"replays": 0, "reused": 0}

    def _open_store(self, results, resume, fsync):
        """The results file and, with ``resume``, its reusable rows by replay key."""
        from memsched.formulations import MemschedError
        from memsched.solvers.pool.store import ResultStore, read_rows

        if results is None:
            return None, {}
        store, reuse = ResultStore(results, fsync=fsync), {}
        if store.exists() and not resume:
            raise MemschedError(f"{results}: results file exists; use --resume to continue it, or choose another file")
        if resume and store.exists():
            for row in read_rows(results, complete_only=True):
                if row.get("kind") != "dtr_replay" or not _reusable(row, self.cfg.run_timeout):
                    continue
                try:
                    key = (row["trace_sha256"], bool(row["start"]), row["heuristic"], int(row["budget"]),
                           float(row["overhead_limit"]), int(row.get("seed", 0)), row.get("allocator", "bytes"),
                           bool(row.get("early_stop", False)))
                except (KeyError, TypeError, ValueError):
                    continue
                reuse.setdefault(key, []).append(row)
        return store, reuse

    # ---------------------------------------------------------------- progress
    def say(self, st, what):
        if self.log:
            el = time.perf_counter() - st.t0
            self.log(f"[{st.label}] {what}: {len(st.results)} ratios sampled, {st.replays} replays"
                     f"{f' ({st.reused} reused)' if st.reused else ''}, {el:.1f} s")

    def finish_batch(self, st):
        if self.progress:
            self.progress(len(st.results))
        self.say(st, f"{st.phase} ({st.batch_replays + st.batch_reused} runs)")

    # ---------------------------------------------------------------- batches
    def advance(self, st) -> list[dict]:
        """The next batch of ``st`` as tasks (samples derived from an interval or found in
        the results file are taken at once); [] when the sweep is complete."""
        while True:
            try:
                st.phase, ks = next(st.gen)
            except StopIteration:
                st.done = True
                st.wall_s = time.perf_counter() - st.t0
                self.say(st, "done")
                return []
            st.batch_replays = st.batch_reused = 0
            tasks = [t for t in (self._sample(st, k) for k in ks) if t is not None]
            if tasks:
                st.left = len(tasks)
                return tasks
            self.finish_batch(st)

    def _sample(self, st, k) -> dict | None:
        """Sample ratio index ``k`` of ``st``: derived from a finished replay's interval,
        reused from the results file, or a task to run (returned)."""
        cfg = self.cfg
        ratio = grid_ratio(k, cfg.resolution)
        budget = ratio_budget(ratio, st.base["baseline_memory"])  # as replay() does (budget_for)
        key = (trace_id(st.trace), bool(st.trace.has_start), st.hname, budget, cfg.limit, cfg.seed, cfg.allocator,
               cfg.early_stop)
        n = st.used.get(key, 0)
        st.used[key] = n + 1
        rows = self.reuse.get(key)
        has_row = bool(rows) and n < len(rows)
        rnd = st.round
        if not st.share:
            e = None
        elif rnd is None:
            e = st.lookup(budget) if n == 0 else None
        elif "interior" in st.phase and rnd in st.rounds:
            # a hole's interior point in a repeat round: from a replay of this round only
            e = st.rounds[rnd].lookup(budget)
        else:
            e = None
        if e is not None and not has_row:
            st.results.setdefault(k, []).append((e[2], e[3], e[4], e[5], budget, 0.0))
            if rnd is None:
                st.derived += 1
            else:
                st.repeat_derived += 1
            if self.store is not None:
                self.store.append(self.row(st, k, budget, n, e[2], e[3], e[4], e[5], 0.0, "derived", None,
                                           derived_from=[e[0], e[1]]))
            return None
        if has_row:
            r = rows[n]
            st.results.setdefault(k, []).append((r["outcome"], r.get("clock"), r.get("peak"), r.get("evictions"),
                                                 budget, float(r.get("wall_s") or 0.0)))
            st.reused += 1
            st.batch_reused += 1
            self.totals["reused"] += 1
            return None
        return {"key": f"dtr:{trace_id(st.trace)[:12]}:{st.hname}:{budget}:{n}:{os.urandom(4).hex()}",
                "kind": "dtr_replay", "instance_hash": st.tid, "sweep": st.idx, "k": k,
                "ratio": ratio, "budget": budget, "heuristic": st.hname, "overhead_limit": cfg.limit,
                "allocator": cfg.allocator, "seed": cfg.seed, "timeout": cfg.run_timeout,
                "time_limit": cfg.run_timeout, "hard_limit": cfg.hard, "debug": cfg.debug,
                "prefix": cfg.prefix and not st.phase.startswith("repeat") and not cfg.early_stop,
                "early_stop": cfg.early_stop,
                "min_width": int(cfg.resolution * st.base["baseline_memory"])}

    def on_done(self, task, out):
        """A replay finished: record it; the sweep's next batch when this one is complete."""
        st = self.states[task["sweep"]]
        status = out.get("status")
        clock = peak = ev = None
        wall = float(out.get("wall_s") or 0.0)
        if status == "done":
            outcome, clock, peak, ev = out["outcome"], out["clock"], out["peak"], out["evictions"]
        elif status == "timeout":
            outcome = "unresolved"
        else:
            outcome = "error"
        st.results.setdefault(task["k"], []).append((outcome, clock, peak, ev, task["budget"], wall))
        st.replays += 1
        st.resumed += bool(out.get("resumed_at"))
        st.batch_replays += 1
        self.totals["replays"] += 1
        eq = out.get("equiv") if status == "done" else None
        if eq is not None:
            st.add_interval(eq[0], eq[1], (outcome, clock, peak, ev))
            if st.round is not None:
                st.rounds.setdefault(st.round, _Intervals()).add(eq[0], eq[1], (outcome, clock, peak, ev))
        if self.store is not None:
            self.store.append(self.row(st, task["k"], task["budget"], None, outcome, clock, peak, ev, wall, status,
                                       out.get("worker"), key=task["key"], message=out.get("message"), equiv=eq,
                                       resumed_at=out.get("resumed_at") or None, stopped_at=out.get("stopped_at")))
        st.left -= 1
        if st.left == 0:
            self.finish_batch(st)
            return self.advance(st)
        return None

    def row(self, st, k, budget, n, outcome, clock, peak, ev, wall, status, worker, key=None, message=None,
            **extra) -> dict:
        """One results-file row (docs/dtr.md, results file)."""
        cfg = self.cfg
        row = {"key": key or f"dtr:{trace_id(st.trace)[:12]}:{st.hname}:{budget}:{n}:{os.urandom(4).hex()}",
               "kind": "dtr_replay", "trace": str(st.trace.path),
               "trace_sha256": trace_id(st.trace), "start": bool(st.trace.has_start), "heuristic": st.hname,
               "ratio": grid_ratio(k, cfg.resolution), "budget": budget, "overhead_limit": cfg.limit,
               "seed": cfg.seed, "run_timeout": cfg.run_timeout, "outcome": outcome, "clock": clock, "peak": peak,
               "evictions": ev, "wall_s": round(wall, 6), "baseline_memory": st.base["baseline_memory"],
               **({} if cfg.allocator == "bytes" else {"allocator": cfg.allocator}),
               **({"early_stop": True} if cfg.early_stop else {}),
               "baseline_compute": st.base["baseline_compute"], "status": status,
               "worker": worker, "executor": getattr(self.executor, "name", type(self.executor).__name__),
               "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if message:
            row["message"] = message
        row.update({a: b for a, b in extra.items() if b is not None})
        return row

    # ---------------------------------------------------------------- running
    def assemble(self, interrupted: bool = False) -> list[SweepResult]:
        c = self.cfg
        return _assemble(self.states, time.perf_counter() - self.t_start, c.resolution, c.lo, c.hi, c.step,
                         c.resolution, c.repeats, c.run_timeout, c.overhead_limit, c.jobs, c.refine, self.executor,
                         self.results, interrupted=interrupted, dense=c.dense, early_stop=c.early_stop)

    def run(self) -> list[SweepResult]:
        """Submit every sweep's first batch and let the executor run to the end."""
        if self.store is not None:
            self.store.open(self.resume)
        try:
            tasks = []
            for st in self.states:
                st.t0 = time.perf_counter()
                tasks += self.advance(st)
            if tasks:
                self.executor.run(tasks, self.texts, self.on_done)
        except KeyboardInterrupt:
            try:
                partial = self.assemble(interrupted=True)
            except Exception:  # the partial map is a courtesy: never hide the interrupt behind it
                partial = []
            raise SweepInterrupted(self.results, self.totals["replays"], self.totals["reused"], partial) from None
        finally:
            if self.store is not None:
                self.store.close()
        unfinished = [st.label for st in self.states if not st.done]
        if unfinished:  # an executor that returned early: a bug, never a silent partial map
            raise RuntimeError(f"sweep: executor {self.executor!r} stopped before {', '.join(unfinished)} finished")
        return self.assemble()


def _assemble(states, wall, res, lo, hi, step, resolution, repeats, run_timeout, overhead_limit, jobs, refine,
              executor, results, interrupted: bool = False, dense: bool = False,
              early_stop: bool = False) -> list[SweepResult]:
    """One SweepResult per sweep from the ratios sampled (all of them, or so far when
    ``interrupted``: then ``params['status']`` is 'interrupted')."""
    out = []
    for st in states:
        points = []
        for k in sorted(st.results):
            runs = st.results[k]
            o, clock, peak, ev, budget, _ = runs[0]
            if any((x[0], x[1]) != (o, clock) for x in runs[1:]):
                o = "nondeterministic"
            points.append(Point(grid_ratio(k, res), budget, o, clock, peak, ev, len(runs), sum(x[5] for x in runs)))
        klo, khi = grid_bounds(lo, hi, res)
        n_range = khi - klo + 1
        sampling = (f"{'dense' if dense else f'coarse step {step:g} + {refine} refinement'}: {len(points)} of "
                    f"{n_range} resolution steps ({resolution:g}) of [{lo:g}, {hi:g}] sampled; "
                    f"{st.replays} replays run{f' ({st.resumed} resumed from shared prefixes)' if st.resumed else ''}, "
                    f"{st.derived} samples from equal runs' budget intervals, "
                    f"{st.reused} reused"
                    + (f"; {st.repeat_derived} repeats of hole interiors from replays of the same round"
                       if st.repeat_derived else "")
                    + (f"; early stop on: {sum(1 for p in points if p.outcome == 'thrash_or_oom')} samples "
                       "thrash_or_oom (proven infeasible, stopped early: clock not the full run's)"
                       if early_stop else ""))
        out.append(SweepResult(
            trace=str(st.trace.path), heuristic=st.heuristic, points=points, holes=find_holes(points),
            baseline_memory=st.base["baseline_memory"], baseline_compute=st.base["baseline_compute"],
            params={"lo": lo, "hi": hi, "step": None if dense else step, "dense": dense, "sampling": sampling,
                    "allocator": st.allocator, "early_stop": early_stop,
                    "resolution": resolution, "repeats": repeats,
                    "run_timeout": run_timeout, "overhead_limit": overhead_limit, "jobs": jobs, "refine": refine,
                    "executor": getattr(executor, "name", "?"), "trace_sha256": trace_id(st.trace),
                    "results": None if results is None else str(results),
                    **({"status": "interrupted"} if interrupted and not st.done else {})},
            wall_s=st.wall_s if len(states) > 1 else wall, replays=st.replays, reused=st.reused,
            derived=st.derived, resumed=st.resumed, repeat_derived=st.repeat_derived))
    return out


def sweep(trace, heuristic: str = "dtr", *, lo: float = 0.1, hi: float = 1.0, step: float | None = None,
          resolution: float = 1e-4, repeats: int = 3, run_timeout: float | None = 60.0, overhead_limit: float = 2.0,
          jobs: int = 1, progress=None, max_refine_points: int = 20000, refine: str = "scan",
          **kw) -> SweepResult:
    """Sweep of ``trace`` for one heuristic (see the module docstring): dense by default
    (``step=None``), coarse-to-fine with a ``step``.
    ``jobs`` > 1 runs the replays in that many harness worker processes (hard kill past
    the run timeout); ``refine='bisect'`` bisects each change interval down to the
    resolution instead of scanning it densely (cheaper for slow traces; finds one
    switch per interval). Further keywords (``executor``, ``dask``, ``results``,
    ``resume``, ``seed``, ``log``, ...) as for :func:`sweep_many`."""
    return sweep_many([(trace, heuristic)], lo=lo, hi=hi, step=step, resolution=resolution, repeats=repeats,
                      run_timeout=run_timeout, overhead_limit=overhead_limit, jobs=jobs, progress=progress,
                      max_refine_points=max_refine_points, refine=refine, **kw)[0]


# ------------------------------------------------------------------ results files
def _summary(trace, sha, heuristic, limit, points, replays, allocator="bytes") -> dict:
    counts: dict = {}
    for p in points:
        counts[p.outcome] = counts.get(p.outcome, 0) + 1
    ok = [p.ratio for p in points if p.outcome in FEASIBLE]
    return {"trace": trace, "trace_sha256": sha, "heuristic": heuristic, "overhead_limit": limit,
            **({} if allocator == "bytes" else {"allocator": allocator}),
            "samples": len(points), "replays": replays, "outcomes": counts, "min_feasible_ratio": min(ok) if ok else None,
            "unresolved": sum(1 for p in points if p.outcome in UNRESOLVED), "holes": find_holes(points)}


def summarize_result(r: SweepResult) -> dict:
    """The summary of a SweepResult (as :func:`summarize_rows` gives for a results file)."""
    return _summary(Path(r.trace).name, r.params.get("trace_sha256"), r.heuristic, r.params.get("overhead_limit"),
                    r.points, r.replays + r.reused, r.params.get("allocator", "bytes"))


def summarize_rows(rows) -> list[dict]:
    """Per (trace, heuristic, overhead limit, seed): the feasibility summary of the
    ``dtr_replay`` rows of a results file. A ratio's outcome is its first row's; rows
    that disagree (outcome or clock) make it 'nondeterministic'. A row without a positive
    numeric ratio or a string outcome raises MemschedError naming its key."""
    from memsched.formulations import MemschedError

    groups: dict = {}
    for r in rows:
        if r.get("kind") != "dtr_replay":
            continue
        ratio = r.get("ratio")
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio) or ratio <= 0:
            raise MemschedError(f"dtr_replay row {r.get('key')!r}: ratio must be a positive number, got {ratio!r}")
        if not isinstance(r.get("outcome"), str):
            raise MemschedError(f"dtr_replay row {r.get('key')!r}: outcome must be a string, got {r.get('outcome')!r}")
        g = (r.get("trace_sha256"), r.get("start"), r.get("heuristic"), r.get("overhead_limit"), r.get("seed", 0),
             r.get("allocator", "bytes"), bool(r.get("early_stop")))
        groups.setdefault(g, []).append(r)
    out = []
    for (sha, _start, h, limit, _seed, alloc, _early), rs in groups.items():
        by_ratio: dict = {}
        for r in rs:
            by_ratio.setdefault(float(r["ratio"]), []).append(r)
        points = []
        for ratio in sorted(by_ratio):
            runs = by_ratio[ratio]
            o, clock = runs[0]["outcome"], runs[0].get("clock")
            if any((x["outcome"], x.get("clock")) != (o, clock) for x in runs[1:]):
                o = "nondeterministic"
            points.append(Point(ratio, runs[0].get("budget"), o, clock, runs[0].get("peak"), runs[0].get("evictions"),
                                len(runs), sum(float(x.get("wall_s") or 0.0) for x in runs)))
        out.append(_summary(Path(str(rs[0].get("trace"))).name, sha, h, limit, points,
                            sum(1 for r in rs if r.get("status") != "derived"), alloc))
    out.sort(key=lambda d: (d["trace"], d["heuristic"], str(d["overhead_limit"])))
    return out


def format_summary(items: list[dict]) -> str:
    """A markdown table of summaries, then one line per hole."""
    lines = ["| trace | heuristic | limit | samples | replays | ok | oom | remat_exceeded | unresolved "
             "| smallest feasible | holes |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    holes = []
    for d in items:
        c = d["outcomes"]
        mf = d["min_feasible_ratio"]
        lines.append(f"| {d['trace'][:40]} | {d['heuristic']} | {d['overhead_limit']} | {d['samples']} | {d['replays']} "
                     f"| {c.get('ok', 0)} | {c.get('oom', 0)} | {c.get('remat_exceeded', 0)}"
                     f"{f' (+{c[EARLY]} thrash_or_oom)' if c.get(EARLY) else ''} | {d['unresolved']} "
                     f"| {'-' if mf is None else f'{mf:.4f}'} | {len(d['holes'])} |")
        for h in d["holes"]:
            holes.append(f"hole ({d['trace'][:40]}, {d['heuristic']}): infeasible {h.first:.4f}..{h.last:.4f} "
                         f"({len(h.ratios)} samples: {', '.join(sorted(set(h.outcomes)))}) between feasible "
                         f"{h.feasible_below:.4f} and {h.feasible_above:.4f}")
    return "\n".join(lines + ([""] + holes if holes else []))


def report_rows(rows) -> str:
    """The text of ``memsched report`` / ``memsched dtr report`` for DTR replay rows."""
    items = summarize_rows(rows)
    return format_summary(items) if items else "no DTR replay rows"
