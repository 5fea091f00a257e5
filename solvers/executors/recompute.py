"""Recomputing schedules from compute sequences (used by the tests and the benchmark).

:func:`schedule_from_computes` turns a sequence of operator computations, with
repeats, into a valid schedule: between two computations of an operator its
outputs live from the computation to their last use before the next computation
of the same operator (then are freed); required outputs and pinned inputs are
kept at the end. :func:`recompute_schedule` takes a plain order and adds
recomputations: for up to ``k`` of the largest tensors with consumers far apart,
it recomputes the producer right before the last consumer, so the tensor is
freed in between.
"""
from __future__ import annotations

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.schedule import COMPUTE, FREE

__all__ = ["schedule_from_computes", "recompute_schedule"]


def schedule_from_computes(graph: Graph, computes: list[int]) -> Schedule:
    """Schedule for a compute sequence with repeats, freeing every tensor right after its
    last use within each production segment. O(len(computes) + edges)."""
    n_t = graph.n_tensors
    keep = graph.pinned_idx | graph.output_idx
    # per tensor, positions of its productions and uses in `computes`
    prod: list[list[int]] = [[] for _ in range(n_t)]
    uses: list[list[int]] = [[] for _ in range(n_t)]
    for k, i in enumerate(computes):
        for j in graph.op_in[i]:
            uses[j].append(k)
        for j in graph.op_out[i]:
            prod[j].append(k)
    free_after: list[list[int]] = [[] for _ in computes]
    head: list[int] = []
    for j in range(n_t):
        starts = prod[j] if graph.producer[j] != -1 else [-1]
        for s_idx, s in enumerate(starts):
            nxt = starts[s_idx + 1] if s_idx + 1 < len(starts) else None
            seg = [u for u in uses[j] if u > s and (nxt is None or u < nxt)]
            if nxt is None and j in keep:
                continue
            last = seg[-1] if seg else s
            if last == -1:
                head.append(j)
            else:
                free_after[last].append(j)
    events = [(FREE, j) for j in head]
    for k, i in enumerate(computes):
        events.append((COMPUTE, i))
        events.extend((FREE, j) for j in sorted(free_after[k]))
    sched = Schedule(tuple(events))
    evaluate(graph, sched)
    return sched


def recompute_schedule(graph: Graph, order: list[int], k: int = 3) -> Schedule | None:
    """A schedule that recomputes the producers of up to ``k`` tensors (largest first) whose
    consumers are at least two positions apart; None when the graph has no such tensor."""
    pos = {i: p for p, i in enumerate(order)}
    cands = []
    for j in range(graph.n_tensors):
        p = graph.producer[j]
        if p == -1 or len(graph.consumers[j]) < 2:
            continue
        cs = sorted(pos[c] for c in graph.consumers[j])
        if cs[-1] - cs[0] >= 2:
            cands.append((-graph.size[j], j, p, cs[-1]))
    if not cands:
        return None
    cands.sort()
    inserts: dict[int, list[int]] = {}
    used_ops = set()
    for _, j, p, before in cands:
        if p in used_ops:
            continue
        used_ops.add(p)
        inserts.setdefault(before, []).append(p)
        if len(used_ops) >= k:
            break
    computes = []
    for q, i in enumerate(order):
        computes.extend(inserts.get(q, []))
        computes.append(i)
    return schedule_from_computes(graph, computes)
