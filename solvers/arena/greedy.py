"""Fast greedy placements (the anytime first answer of the exact search).

:func:`best_fit` places buffers one at a time, in a given priority order, into the
smallest address gap left by the already placed *conflicting* buffers that fits it
(on top of them when no gap fits). This is the deployed-planner family: XLA's heap
simulator and TFLite use decreasing size. :func:`greedy_plans` runs several priority
orders and :func:`best_greedy` keeps the smallest arena. O(B * conflicts log) each.
"""
from __future__ import annotations

from .buffers import Buffer, conflicts

__all__ = ["ORDERS", "best_fit", "greedy_plans", "best_greedy"]


def _orders(buffers: list[Buffer]) -> dict[str, list[int]]:
    n = len(buffers)
    w = [b.upper - b.lower for b in buffers]
    return {
        "size": sorted(range(n), key=lambda i: (-buffers[i].size, -w[i], buffers[i].lower, i)),
        "width": sorted(range(n), key=lambda i: (-w[i], -buffers[i].size, buffers[i].lower, i)),
        "area": sorted(range(n), key=lambda i: (-buffers[i].size * w[i], i)),
        "start": sorted(range(n), key=lambda i: (buffers[i].lower, -buffers[i].size, i)),
    }


ORDERS = ("size", "width", "area", "start")


def best_fit(buffers: list[Buffer], order: list[int], adj: list[list[int]] | None = None) -> list[int]:
    """Best-fit placement of ``buffers`` taken in ``order``; returns the offsets."""
    if adj is None:
        adj = conflicts(buffers)
    off = [-1] * len(buffers)
    for i in order:
        size = buffers[i].size
        busy = sorted((off[a], off[a] + buffers[a].size) for a in adj[i] if off[a] >= 0 and buffers[a].size > 0)
        best = best_gap = None
        cur = 0
        for lo, hi in busy:
            gap = lo - cur
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cur, gap
            cur = max(cur, hi)
        off[i] = best if best is not None else cur
    return off


def greedy_plans(buffers: list[Buffer]):
    """Yield (name, offsets, arena) for each greedy order."""
    adj = conflicts(buffers)
    orders = _orders(buffers)
    for name in ORDERS:
        off = best_fit(buffers, orders[name], adj)
        yield name, off, max((o + b.size for o, b in zip(off, buffers)), default=0)


def best_greedy(buffers: list[Buffer], stop_at: int | None = None) -> tuple[str, list[int], int]:
    """The smallest-arena greedy plan (stops early once it reaches ``stop_at``)."""
    best = None
    for name, off, top in greedy_plans(buffers):
        if best is None or top < best[2]:
            best = (name, off, top)
        if stop_at is not None and top <= stop_at:
            break
    if best is None:
        return "size", [], 0
    return best
