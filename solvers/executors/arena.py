"""Static arena planning: one buffer for a whole schedule, every tensor a view at a fixed offset.

Problem (offline dynamic storage allocation). A schedule defines *buffers*: each
compute of an operator creates one buffer per output tensor, live from that
compute event until the tensor's free event (or the end), plus one workspace
buffer live only during the compute; graph inputs are buffers live from the start.
Two buffers *conflict* when their half-open event intervals ``[start, end)``
intersect. Assign each buffer an offset so that conflicting buffers do not
overlap in ``[offset, offset + size)``; minimize the arena size ``max(offset + size)``.

Lower bound: the arena is at least the maximum total size of buffers live at one
compute event, which is exactly the schedule's peak as the evaluator computes it
(the live set at compute event k is "resident + outputs + workspace"). So a plan
whose arena equals the peak is optimal.

* :func:`best_fit`: greedy, buffers in decreasing size (ties: longer lifetime,
  earlier start); each goes into the smallest gap among the already placed
  conflicting buffers that fits it (else on top). O(B^2 log B). Several orders
  are tried and the smallest arena kept.
* :func:`cpsat_plan`: exact CP-SAT model, ``AddNoOverlap2D`` over fixed time
  intervals and variable offset intervals, minimizing the arena, hinted with the
  best-fit plan and bounded below by the peak. Optimal when it proves it.

The problem is NP-hard (Garey & Johnson, SR2 "dynamic storage allocation"); the
peak lower bound is not always attainable (e.g. three unit buffers pairwise
conflicting in a cyclic interval pattern with different sizes).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.schedule import COMPUTE, FREE
from memsched.solvers.engines.cpsat import solve_cpsat

__all__ = ["Buffer", "ArenaPlan", "buffers_of", "best_fit", "cpsat_plan", "plan_arena", "check_plan"]


@dataclass(frozen=True)
class Buffer:
    """One allocation of a schedule. ``kind`` is "input", "output" or "workspace";
    ``tensor`` the tensor index (-1 for workspace), ``op`` the operator index (-1 for
    inputs), ``event`` the compute event that creates it (-1 for inputs);
    it is live on compute events ``start <= k < end``."""

    kind: str
    tensor: int
    op: int
    event: int
    size: int
    start: int
    end: int


@dataclass
class ArenaPlan:
    buffers: list[Buffer]
    offsets: list[int]
    size: int  # arena bytes
    lower_bound: int  # the schedule's peak
    method: str
    status: str  # "optimal" (size == lower bound or proven), "feasible"
    wall_s: float = 0.0
    extra: dict = field(default_factory=dict)

    def offset_of(self) -> dict[tuple[str, int, int], int]:
        """Map (kind, tensor-or-op, event) -> offset, the key the emitter uses."""
        return {_key(b): o for b, o in zip(self.buffers, self.offsets)}


def _key(b: Buffer) -> tuple[str, int, int]:
    return (b.kind, b.op if b.kind == "workspace" else b.tensor, b.event)


def buffers_of(graph: Graph, schedule: Schedule) -> list[Buffer]:
    """All non-empty buffers of a (valid) schedule with their lifetimes, in creation order."""
    evaluate(graph, schedule)  # validity first: the judge
    n_ev = len(schedule.events)
    open_: dict[int, tuple[int, int, int]] = {}  # tensor -> (start, op, event)
    out: list[Buffer] = []
    for j in graph.input_idx:
        open_[j] = (-1, -1, -1)
    for k, (kind, x) in enumerate(schedule.events):
        if kind == COMPUTE:
            for j in graph.op_out[x]:
                open_[j] = (k, x, k)
            if graph.workspace[x] > 0:
                out.append(Buffer("workspace", -1, x, k, graph.workspace[x], k, k + 1))
        elif kind == FREE:
            start, op, ev = open_.pop(x)
            if graph.size[x] > 0:
                out.append(Buffer("input" if op == -1 else "output", x, op, ev, graph.size[x], start, k))
    for j, (start, op, ev) in open_.items():
        if graph.size[j] > 0:
            out.append(Buffer("input" if op == -1 else "output", j, op, ev, graph.size[j], start, n_ev))
    out.sort(key=lambda b: (b.start, b.kind != "input", b.tensor, b.op))
    return out


def _conflicts(buffers: list[Buffer]) -> list[list[int]]:
    """Adjacency of the interval-conflict graph by a sweep. O(B log B + conflicts)."""
    idx = sorted(range(len(buffers)), key=lambda i: buffers[i].start)
    adj: list[list[int]] = [[] for _ in buffers]
    active: list[int] = []
    for i in idx:
        b = buffers[i]
        active = [a for a in active if buffers[a].end > b.start]
        for a in active:
            adj[a].append(i)
            adj[i].append(a)
        active.append(i)
    return adj


def _peak(buffers: list[Buffer]) -> int:
    ev: dict[int, int] = {}
    for b in buffers:
        ev[b.start] = ev.get(b.start, 0) + b.size
        ev[b.end] = ev.get(b.end, 0) - b.size
    cur = best = 0
    for t in sorted(ev):
        cur += ev[t]
        best = max(best, cur)
    return best


def _place(buffers: list[Buffer], adj: list[list[int]], order: list[int]) -> tuple[list[int], int]:
    off = [-1] * len(buffers)
    top = 0
    for i in order:
        size = buffers[i].size
        busy = sorted((off[a], off[a] + buffers[a].size) for a in adj[i] if off[a] >= 0)
        best, best_gap = None, None
        cur = 0
        for lo, hi in busy:
            gap = lo - cur
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cur, gap
            cur = max(cur, hi)
        off[i] = best if best is not None else cur
        top = max(top, off[i] + size)
    return off, top


def best_fit(buffers: list[Buffer]) -> tuple[list[int], int]:
    """Greedy best-fit placement; returns (offsets, arena size). Tries three orders."""
    if not buffers:
        return [], 0
    adj = _conflicts(buffers)
    n = len(buffers)
    orders = [
        sorted(range(n), key=lambda i: (-buffers[i].size, -(buffers[i].end - buffers[i].start), buffers[i].start, i)),
        sorted(range(n), key=lambda i: (buffers[i].start, -buffers[i].size, i)),
        sorted(range(n), key=lambda i: (-(buffers[i].size * (buffers[i].end - buffers[i].start)), i)),
    ]
    lb = _peak(buffers)
    best = None
    for o in orders:
        off, top = _place(buffers, adj, o)
        if best is None or top < best[1]:
            best = (off, top)
        if top == lb:
            break
    return best


def cpsat_plan(buffers: list[Buffer], *, hint: list[int] | None = None, time_limit: float = 10.0,
               workers: int = 1, seed: int = 0) -> tuple[list[int] | None, int | None, bool]:
    """Exact CP-SAT no-overlap model. Returns (offsets, arena, proven_optimal); offsets
    None when no solution was found in the time limit."""
    from ortools.sat.python import cp_model

    if not buffers:
        return [], 0, True
    lb = _peak(buffers)
    ub = sum(b.size for b in buffers)
    if hint is not None:
        ub = min(ub, max(o + b.size for o, b in zip(hint, buffers)))
    m = cp_model.CpModel()
    arena = m.NewIntVar(lb, ub, "arena")
    xs, ys, offs = [], [], []
    for i, b in enumerate(buffers):
        o = m.NewIntVar(0, ub - b.size, f"off{i}")
        offs.append(o)
        ys.append(m.NewIntervalVar(o, b.size, o + b.size, f"y{i}"))
        # time intervals are fixed; shift by 1 so inputs (start -1) are non-negative
        xs.append(m.NewFixedSizeIntervalVar(b.start + 1, b.end - b.start, f"x{i}"))
        m.Add(o + b.size <= arena)
        if hint is not None:
            m.AddHint(o, hint[i])
    m.AddNoOverlap2D(xs, ys)
    m.Minimize(arena)
    run = solve_cpsat(m, time_limit=float(time_limit), workers=workers, seed=seed, name="cpsat-arena")
    if not run.has_solution:
        return None, None, False
    solver = run.solver
    return [int(solver.Value(o)) for o in offs], int(solver.Value(arena)), run.status == "optimal"


def check_plan(buffers: list[Buffer], offsets: list[int]) -> int:
    """Verify that no two conflicting buffers overlap; return the arena size. Raises AssertionError."""
    adj = _conflicts(buffers)
    for i, b in enumerate(buffers):
        assert offsets[i] >= 0, f"buffer {i} has negative offset"
        for a in adj[i]:
            lo1, hi1 = offsets[i], offsets[i] + b.size
            lo2, hi2 = offsets[a], offsets[a] + buffers[a].size
            assert hi1 <= lo2 or hi2 <= lo1, f"buffers {i} and {a} overlap in time and space"
    return max((o + b.size for o, b in zip(offsets, buffers)), default=0)


def plan_arena(graph: Graph, schedule: Schedule, *, method: str = "auto", time_limit: float = 10.0,
               workers: int = 1) -> ArenaPlan:
    """Plan one arena for ``schedule``. ``method``: "best-fit" (greedy only), "cpsat", or "auto"
    (:func:`memsched.solvers.arena.solve_arena`: greedy, exact canonical search, CP-SAT backstop)."""
    t0 = time.perf_counter()
    bufs = buffers_of(graph, schedule)
    peak = evaluate(graph, schedule).peak
    lb = _peak(bufs)
    assert lb == peak, f"arena lower bound {lb} differs from the evaluator's peak {peak}"
    if method not in ("auto", "best-fit", "cpsat"):
        from memsched.formulations import MemschedError

        raise MemschedError(f"arena method must be auto, best-fit or cpsat, got {method!r}")
    # the planner of memsched.solvers.arena: greedy, canonical exact search, CP-SAT backstop
    from memsched.solvers.arena import Buffer as ArenaBuffer, solve_arena

    res = solve_arena([ArenaBuffer(str(k), b.start + 1, b.end + 1, b.size) for k, b in enumerate(bufs)],
                      method={"auto": "auto", "best-fit": "greedy", "cpsat": "cpsat"}[method], time_limit=time_limit)
    off, size, status = res.offsets, res.arena_size, res.status
    used = {"auto": "arena-search", "best-fit": "best-fit", "cpsat": "cpsat"}[method]
    extra = {"best_fit_size": res.greedy_size, "proven_bound": res.lower_bound, "nodes": res.nodes}
    check_plan(bufs, off)
    return ArenaPlan(bufs, off, size, lb, used, status, time.perf_counter() - t0, extra)
