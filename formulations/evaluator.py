"""The evaluator: the single judge of validity, memory and compute.

Semantics (docs/semantics.md):

* Before the first event every graph input is resident.
* ``compute(v)``: all of v's inputs must be resident and none of its outputs may
  be resident (recompute only after freeing). While v runs, memory is
  ``resident + sum(sizes of v's outputs) + workspace(v)``; afterwards its
  outputs are resident.
* ``free(t)``: t must be resident and not pinned; its bytes are released.
* At the end every operator has run at least once and every required output
  is resident.
* ``peak`` is the maximum memory over the initial state and every compute;
  ``compute`` is the sum of the costs of all compute events.

Runs in O(len(schedule) + edges).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import MemschedError
from .graph import Graph
from .schedule import COMPUTE, FREE, Schedule

__all__ = ["ScheduleError", "Evaluation", "evaluate", "order_peak"]


class ScheduleError(MemschedError):
    """The schedule is invalid for the graph; ``event`` is the offending event index
    (or -1 for end-of-schedule conditions)."""

    def __init__(self, message: str, event: int = -1):
        super().__init__(message)
        self.event = event


@dataclass
class Evaluation:
    peak: int
    peak_event: int  # index of the compute event attaining the peak, -1 = initial state
    peak_op: str | None
    compute: float
    recomputations: int  # compute events beyond the first of each operator
    timeline: list[int]  # memory at each event: during a compute, after a free
    initial: int  # bytes resident before the first event
    compute_counts: list[int]

    def to_json(self) -> dict:
        return {
            "peak": self.peak,
            "peak_event": self.peak_event,
            "peak_op": self.peak_op,
            "compute": self.compute,
            "recomputations": self.recomputations,
        }


def evaluate(graph: Graph, schedule: Schedule) -> Evaluation:
    """Check ``schedule`` against ``graph`` and compute its memory timeline.

    Raises :class:`ScheduleError` with a precise message on the first violation.
    """
    size = graph.size
    op_in, op_out = graph.op_in, graph.op_out
    cost, workspace = graph.cost, graph.workspace
    ops, tensors = graph.ops, graph.tensors
    resident = bytearray(graph.n_tensors)
    freed_at = {}
    mem = 0
    for j in graph.input_idx:
        resident[j] = 1
        mem += size[j]
    initial = mem
    peak, peak_event = mem, -1
    counts = [0] * graph.n_ops
    total = 0.0
    timeline: list[int] = []
    n_ops, n_t = graph.n_ops, graph.n_tensors
    pinned = graph.pinned_idx
    for k, (kind, x) in enumerate(schedule.events):
        if kind == COMPUTE:
            if not 0 <= x < n_ops:
                raise ScheduleError(f"event {k}: compute of unknown operator index {x}", k)
            for j in op_in[x]:
                if not resident[j]:
                    why = f"freed at event {freed_at[j]}" if j in freed_at else "never computed"
                    raise ScheduleError(
                        f"event {k}: compute({ops[x].name}) needs input tensor {tensors[j].name!r}, which is not resident ({why})", k)
            out_bytes = 0
            for j in op_out[x]:
                if resident[j]:
                    raise ScheduleError(
                        f"event {k}: compute({ops[x].name}) while its output {tensors[j].name!r} is still resident (free it before recomputing)", k)
                out_bytes += size[j]
            during = mem + out_bytes + workspace[x]
            timeline.append(during)
            if during > peak:
                peak, peak_event = during, k
            for j in op_out[x]:
                resident[j] = 1
            mem += out_bytes
            counts[x] += 1
            total += cost[x]
        elif kind == FREE:
            if not 0 <= x < n_t:
                raise ScheduleError(f"event {k}: free of unknown tensor index {x}", k)
            if not resident[x]:
                raise ScheduleError(f"event {k}: free({tensors[x].name}) but it is not resident", k)
            if x in pinned:
                raise ScheduleError(f"event {k}: free({tensors[x].name}) but it is pinned", k)
            resident[x] = 0
            freed_at[x] = k
            mem -= size[x]
            timeline.append(mem)
        else:
            raise ScheduleError(f"event {k}: unknown event kind {kind!r}", k)
    for i, c in enumerate(counts):
        if c == 0:
            raise ScheduleError(f"operator {ops[i].name!r} is never computed", -1)
    for j in graph.output_idx:
        if not resident[j]:
            raise ScheduleError(f"required output {tensors[j].name!r} is not resident at the end", -1)
    return Evaluation(
        peak=peak,
        peak_event=peak_event,
        peak_op=ops[schedule.events[peak_event][1]].name if peak_event >= 0 else None,
        compute=total,
        recomputations=sum(counts) - graph.n_ops,
        timeline=timeline,
        initial=initial,
        compute_counts=counts,
    )


def order_peak(graph: Graph, order) -> int:
    """Peak of a plain order of operator indices (frees after last use)."""
    return evaluate(graph, Schedule.from_order(graph, order)).peak
