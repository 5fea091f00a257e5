"""Lower bounds on the arena size (proofs in docs/arena.md).

* :func:`max_live`: the largest total size of buffers live at one instant. Buffers live
  at a common instant pairwise conflict, so they occupy disjoint address ranges.
The exact search proves larger bounds (an exhausted capacity ``C - 1`` proves ``C``);
those are reported by :func:`memsched.solvers.arena.exact.solve_arena`.
"""
from __future__ import annotations

from .buffers import Buffer

__all__ = ["max_live", "live_profile", "lower_bound"]


def live_profile(buffers: list[Buffer]) -> list[tuple[int, int]]:
    """(time, live total from that time on) at every endpoint, in time order."""
    delta: dict[int, int] = {}
    for b in buffers:
        delta[b.lower] = delta.get(b.lower, 0) + b.size
        delta[b.upper] = delta.get(b.upper, 0) - b.size
    cur = 0
    out = []
    for t in sorted(delta):
        cur += delta[t]
        out.append((t, cur))
    return out


def max_live(buffers: list[Buffer]) -> int:
    """The largest total size of buffers live at one instant (0 for no buffers)."""
    return max((v for _, v in live_profile(buffers)), default=0)


def lower_bound(buffers: list[Buffer]) -> int:
    """The closed-form lower bound used by the planners (today: :func:`max_live`)."""
    return max_live(buffers)
