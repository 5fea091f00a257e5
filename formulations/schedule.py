"""Schedules: sequences of ``compute(op)`` and ``free(tensor)`` events.

A plain operator order becomes a schedule with :meth:`Schedule.from_order`,
which frees every tensor right after its last use (never a pinned input or a
required output). Recomputation is simply a second ``compute`` of the same
operator, after its outputs were freed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from .errors import MemschedError
from .graph import Graph

__all__ = ["COMPUTE", "FREE", "Schedule", "ScheduleFormatError"]

COMPUTE = 0
FREE = 1
_KIND_NAMES = ("compute", "free")


class ScheduleFormatError(MemschedError):
    """A schedule file or event list names unknown operators/tensors or is malformed."""


def _need_list(x, what: str) -> None:
    """A string (or a mapping) iterates over its characters (keys): "v0" is not ["v0"]."""
    if isinstance(x, (str, bytes, dict)) or x is None:
        raise ScheduleFormatError(f"{what} must be a list, got {type(x).__name__} {x!r:.60}")


@dataclass(frozen=True)
class Schedule:
    """An immutable event list; ``events[k] = (kind, index)`` with kind COMPUTE (operator
    index) or FREE (tensor index)."""

    events: tuple[tuple[int, int], ...]

    def __len__(self) -> int:
        return len(self.events)

    # ------------------------------------------------------------ builders
    @classmethod
    def from_order(cls, graph: Graph, order: Sequence[int]) -> "Schedule":
        """Schedule for a plain order (operator indices), freeing each tensor after its
        last use. Frees of a step come right after that step's compute, in tensor order.
        Inputs that nothing consumes (and are neither pinned nor required) are freed first.
        Runs in O(n + edges)."""
        n = graph.n_ops
        pos = [-1] * n
        for k, i in enumerate(order):
            pos[i] = k
        free_after: list[list[int]] = [[] for _ in range(len(order))]
        head: list[tuple[int, int]] = []
        keep = graph.pinned_idx | graph.output_idx
        for j in range(graph.n_tensors):
            if j in keep:
                continue
            last = -1
            for c in graph.consumers[j]:
                if pos[c] > last:
                    last = pos[c]
            p = graph.producer[j]
            if p != -1 and pos[p] > last:
                last = pos[p]
            if last == -1:
                if p == -1:
                    head.append((FREE, j))
                continue  # producer not in order: the evaluator will complain
            free_after[last].append(j)
        events = head[:]
        for k, i in enumerate(order):
            events.append((COMPUTE, i))
            for j in free_after[k]:
                events.append((FREE, j))
        return cls(tuple(events))

    @classmethod
    def from_names(cls, graph: Graph, events: Iterable[Sequence[str]]) -> "Schedule":
        """From ``[("compute", op_name) | ("free", tensor_name), ...]``."""
        _need_list(events, "events")
        out = []
        for k, ev in enumerate(events):
            if not isinstance(ev, (list, tuple)) or len(ev) != 2:
                raise ScheduleFormatError(f"event #{k}: expected [kind, name], got {ev!r}")
            kind, name = ev
            if kind == "compute":
                if name not in graph.op_index:
                    raise ScheduleFormatError(f"event #{k}: unknown operator {name!r}")
                out.append((COMPUTE, graph.op_index[name]))
            elif kind == "free":
                if name not in graph.tensor_index:
                    raise ScheduleFormatError(f"event #{k}: unknown tensor {name!r}")
                out.append((FREE, graph.tensor_index[name]))
            else:
                raise ScheduleFormatError(f"event #{k}: kind must be 'compute' or 'free', got {kind!r}")
        return cls(tuple(out))

    @classmethod
    def from_order_names(cls, graph: Graph, names: Iterable[str]) -> "Schedule":
        _need_list(names, "order")
        order = []
        for k, name in enumerate(names):
            if name not in graph.op_index:
                raise ScheduleFormatError(f"order position {k}: unknown operator {name!r}")
            order.append(graph.op_index[name])
        return cls.from_order(graph, order)

    # ------------------------------------------------------------ views
    def computes(self) -> list[int]:
        """Operator indices in compute order (with repeats for recomputation)."""
        return [i for kind, i in self.events if kind == COMPUTE]

    def is_plain_order(self) -> bool:
        c = self.computes()
        return len(c) == len(set(c))

    def to_names(self, graph: Graph) -> list[list[str]]:
        return [
            ["compute", graph.ops[i].name] if kind == COMPUTE else ["free", graph.tensors[i].name]
            for kind, i in self.events
        ]

    def order_names(self, graph: Graph) -> list[str]:
        return [graph.ops[i].name for i in self.computes()]

    def to_json(self, graph: Graph) -> dict:
        return {"format": "memsched-schedule", "version": 1, "graph": graph.name, "events": self.to_names(graph)}

    @staticmethod
    def kind_name(kind: int) -> str:
        return _KIND_NAMES[kind]
