"""Buffers and their time structure.

A buffer ``b`` is live on the half-open interval ``[b.lower, b.upper)``. The distinct
endpoints cut time into *sections* (elementary intervals between consecutive
endpoints); buffer ``b`` covers the sections ``[first[b], last[b])``. Two buffers
conflict (must not share an address) exactly when they cover a common section.
A boundary between two sections that no buffer crosses splits the instance into
independent *components*: the arena of the whole is the largest component arena.
"""
from __future__ import annotations

from dataclasses import dataclass

from memsched.instances.arena_csv import ArenaInputError, Buffer, check_buffers

__all__ = ["Buffer", "ArenaInputError", "Sections", "sections_of", "conflicts", "components", "check_buffers"]


@dataclass
class Sections:
    """Time compressed to sections. ``first[i]``/``last[i]``: the section range of buffer i;
    ``members[s]``: buffers live in section s; ``points``: the endpoint times."""

    points: list[int]
    first: list[int]
    last: list[int]
    members: list[list[int]]

    @property
    def count(self) -> int:
        return len(self.members)


def sections_of(buffers: list[Buffer]) -> Sections:
    pts = sorted({b.lower for b in buffers} | {b.upper for b in buffers})
    where = {t: k for k, t in enumerate(pts)}
    first = [where[b.lower] for b in buffers]
    last = [where[b.upper] for b in buffers]
    members: list[list[int]] = [[] for _ in range(max(len(pts) - 1, 0))]
    for i in range(len(buffers)):
        for s in range(first[i], last[i]):
            members[s].append(i)
    return Sections(pts, first, last, members)


def conflicts(buffers: list[Buffer]) -> list[list[int]]:
    """Adjacency lists of the interval conflict graph, by a sweep. O(B log B + conflicts)."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].lower, i))
    adj: list[list[int]] = [[] for _ in buffers]
    active: list[int] = []
    for i in order:
        lo = buffers[i].lower
        active = [a for a in active if buffers[a].upper > lo]
        for a in active:
            adj[a].append(i)
            adj[i].append(a)
        active.append(i)
    return adj


def components(buffers: list[Buffer]) -> list[list[int]]:
    """Indices of the buffers of each independent component (time-connected groups), in time order."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].lower, i))
    out: list[list[int]] = []
    reach = None
    for i in order:
        b = buffers[i]
        if reach is None or b.lower >= reach:
            out.append([])
            reach = b.upper
        out[-1].append(i)
        reach = max(reach, b.upper)
    return out
