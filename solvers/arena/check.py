"""An independent placement checker: it shares no code with the planners.

A placement is valid for capacity ``C`` when every offset is a non-negative integer,
every buffer lies inside ``[0, C)``, and any two buffers whose half-open lifetimes
intersect occupy disjoint address ranges.
"""
from __future__ import annotations

from memsched.formulations import MemschedError

__all__ = ["PlacementError", "check_placement"]


class PlacementError(MemschedError):
    """A placement breaks a rule; the message names the buffers."""


def check_placement(buffers, offsets, capacity: int | None = None) -> int:
    """Verify the placement and return its arena size (the highest end address).
    Raises :class:`PlacementError` on the first violation."""
    bufs = list(buffers)
    offs = list(offsets)
    if len(bufs) != len(offs):
        raise PlacementError(f"{len(offs)} offsets for {len(bufs)} buffers")
    top = 0
    for b, o in zip(bufs, offs):
        if not isinstance(o, int) or isinstance(o, bool) or o < 0:
            raise PlacementError(f"buffer {b.id!r}: offset {o!r} is not a non-negative integer")
        top = max(top, o + b.size)
        if capacity is not None and o + b.size > capacity:
            raise PlacementError(f"buffer {b.id!r}: [{o}, {o + b.size}) exceeds capacity {capacity}")
    # sweep in time: at each start, compare with every buffer still live
    events = sorted(range(len(bufs)), key=lambda i: bufs[i].lower)
    live: list[int] = []
    for i in events:
        b = bufs[i]
        live = [j for j in live if bufs[j].upper > b.lower]
        if b.size > 0:
            lo, hi = offs[i], offs[i] + b.size
            for j in live:
                c = bufs[j]
                if c.size > 0 and lo < offs[j] + c.size and offs[j] < hi:
                    raise PlacementError(
                        f"buffers {c.id!r} [{offs[j]}, {offs[j] + c.size}) and {b.id!r} [{lo}, {hi}) "
                        f"overlap in address while both live at time {b.lower}")
        live.append(i)
    return top
