"""Static arena planning: one buffer for a whole schedule, every tensor a view at a fixed offset.

A schedule defines *buffers*: each compute of an operator creates one buffer per output
tensor, live from that compute event until the tensor's free event (or the end), plus one
workspace buffer live only during the compute; graph inputs are buffers live from the start
(:func:`buffers_of`). Placing them is the problem of :mod:`memsched.solvers.arena` (offline
dynamic storage allocation, docs/arena.md), and this module only adapts a schedule to it:

* :func:`arena_buffers`: the schedule's buffers as the planner's buffers (times shifted by one
  so that graph inputs live from 0; ids are the buffer indices).
* :func:`plan_arena`: :func:`memsched.solvers.arena.solve_arena` on them (greedy plans, exact
  canonical search, CP-SAT backstop), re-checked by the planner's independent checker.
* :func:`best_fit`, :func:`cpsat_plan`, :func:`check_plan`: the planner's greedy plans, its
  CP-SAT model and its checker on a schedule's buffers (no second implementation here).

Lower bound: the arena is at least the maximum total size of buffers live at one compute
event, which is exactly the schedule's peak as the evaluator computes it (the live set at
compute event k is "resident + outputs + workspace"). So a plan whose arena equals the peak
is optimal.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.schedule import COMPUTE, FREE

__all__ = ["Buffer", "ArenaPlan", "buffers_of", "arena_buffers", "best_fit", "cpsat_plan", "plan_arena", "check_plan"]


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


def arena_buffers(buffers: list[Buffer]):
    """The schedule's buffers as :class:`memsched.solvers.arena.Buffer` (id: the index; lifetimes
    shifted by one so that graph inputs, which start at -1, live from 0)."""
    from memsched.solvers.arena import Buffer as ArenaBuffer

    return [ArenaBuffer(str(k), b.start + 1, b.end + 1, b.size) for k, b in enumerate(buffers)]


def _peak(buffers: list[Buffer]) -> int:
    """The largest total size live at one event (the planner's max-live bound)."""
    from memsched.solvers.arena.bounds import max_live

    return max_live(arena_buffers(buffers))


def best_fit(buffers: list[Buffer]) -> tuple[list[int], int]:
    """The planner's greedy plans (:func:`memsched.solvers.arena.greedy.best_greedy`: best fit over
    decreasing size, lifetime, area and start); returns (offsets, arena size) of the smallest."""
    from memsched.solvers.arena.greedy import best_greedy

    if not buffers:
        return [], 0
    bufs = arena_buffers(buffers)
    _, off, top = best_greedy(bufs, stop_at=_peak(buffers))
    return list(off), top


def cpsat_plan(buffers: list[Buffer], *, time_limit: float = 10.0) -> tuple[list[int] | None, int | None, bool]:
    """The planner's CP-SAT model (``solve_arena(method="cpsat")``: no-overlap 2D with a redundant
    cumulative, hinted with the greedy plan, bounded below by the peak). Returns (offsets, arena,
    proven_optimal); offsets None when no solution was found in the time limit."""
    from memsched.solvers.arena import solve_arena

    if not buffers:
        return [], 0, True
    res = solve_arena(arena_buffers(buffers), method="cpsat", time_limit=time_limit)
    if res.offsets is None:
        return None, None, False
    return list(res.offsets), res.arena_size, res.status == "optimal"


def check_plan(buffers: list[Buffer], offsets: list[int]) -> int:
    """Verify with the planner's independent checker that no two conflicting buffers overlap;
    return the arena size. Raises :class:`memsched.solvers.arena.PlacementError`."""
    from memsched.solvers.arena import check_placement

    return check_placement(arena_buffers(buffers), [int(o) for o in offsets])


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
    from memsched.solvers.arena import solve_arena

    res = solve_arena(arena_buffers(bufs), method={"auto": "auto", "best-fit": "greedy", "cpsat": "cpsat"}[method],
                      time_limit=time_limit)
    off, size, status = res.offsets, res.arena_size, res.status
    used = {"auto": "arena-search", "best-fit": "best-fit", "cpsat": "cpsat"}[method]
    extra = {"best_fit_size": res.greedy_size, "proven_bound": res.lower_bound, "nodes": res.nodes}
    check_plan(bufs, off)
    return ArenaPlan(bufs, off, size, lb, used, status, time.perf_counter() - t0, extra)
