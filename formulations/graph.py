"""The computation-graph model.

A :class:`Graph` has *operators* that read and produce *tensors*.

* A tensor has an integer byte size and at most one producing operator.
  Tensors without a producer are graph inputs: they are resident when the
  program starts. Inputs listed in ``pinned`` (parameters, data) can never be
  freed; other inputs may be freed after their last use but never recomputed.
* An operator has a compute cost (a finite float >= 0), optional transient
  ``workspace`` bytes held only while it runs, input tensors and one or more
  output tensors.
* ``outputs`` lists the required outputs: they must be resident when the
  schedule ends.
* ``order`` is the program's given order of operators (a topological order);
  when absent, a topological order is derived.

Internally everything is indexed by integers (operator ``i`` is
``graph.ops[i]``, tensor ``j`` is ``graph.tensors[j]``) and the adjacency is
kept in plain lists so that the evaluator and the heuristics run in linear
time. Construction validates everything and raises :class:`GraphError`
naming the offending node.
"""
from __future__ import annotations

import math
from functools import reduce
from math import gcd
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .errors import MemschedError

__all__ = ["GraphError", "Operator", "Tensor", "Graph"]


class GraphError(MemschedError):
    """A graph is malformed: cycle, dangling reference, bad size or cost, duplicate name."""


@dataclass(frozen=True)
class Tensor:
    name: str
    size: int


@dataclass(frozen=True)
class Operator:
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    cost: float = 1.0
    workspace: int = 0


def _check_bytes(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and value >= 0:
            return int(value)
        raise GraphError(f"{what}: size must be a non-negative integer number of bytes, got {value!r}")
    if value < 0:
        raise GraphError(f"{what}: size must be non-negative, got {value}")
    return value


def _check_cost(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GraphError(f"{what}: cost must be a number, got {value!r}")
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise GraphError(f"{what}: cost must be finite and non-negative, got {value!r}")
    return value


@dataclass
class Graph:
    """A validated computation graph. See the module docstring."""

    ops: list[Operator]
    tensors: list[Tensor]
    pinned: frozenset[str] = frozenset()
    outputs: tuple[str, ...] = ()
    order: tuple[str, ...] | None = None
    name: str = "graph"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ops = list(self.ops)
        self.tensors = list(self.tensors)
        self.pinned = frozenset(self.pinned)
        self.outputs = tuple(self.outputs)
        self._index()
        self._validate_acyclic()
        if self.order is None:
            self.order = tuple(self.ops[i].name for i in self.topological_order())
        else:
            self.order = tuple(self.order)
            self._validate_order()

    # ------------------------------------------------------------------ build
    def _index(self) -> None:
        self.tensor_index: dict[str, int] = {}
        for j, t in enumerate(self.tensors):
            if not isinstance(t.name, str) or not t.name:
                raise GraphError(f"tensor #{j}: name must be a non-empty string, got {t.name!r}")
            if t.name in self.tensor_index:
                raise GraphError(f"tensor {t.name!r}: duplicate name")
            self.tensor_index[t.name] = j
            _check_bytes(t.size, f"tensor {t.name!r}")
        self.op_index: dict[str, int] = {}
        n_t = len(self.tensors)
        self.size: list[int] = [int(t.size) for t in self.tensors]
        self.producer: list[int] = [-1] * n_t
        self.consumers: list[list[int]] = [[] for _ in range(n_t)]
        self.op_in: list[list[int]] = []
        self.op_out: list[list[int]] = []
        self.cost: list[float] = []
        self.workspace: list[int] = []
        for i, op in enumerate(self.ops):
            if not isinstance(op.name, str) or not op.name:
                raise GraphError(f"operator #{i}: name must be a non-empty string, got {op.name!r}")
            if op.name in self.op_index:
                raise GraphError(f"operator {op.name!r}: duplicate name")
            self.op_index[op.name] = i
            self.cost.append(_check_cost(op.cost, f"operator {op.name!r}"))
            self.workspace.append(_check_bytes(op.workspace, f"operator {op.name!r} workspace"))
            ins: list[int] = []
            for tn in op.inputs:
                j = self.tensor_index.get(tn)
                if j is None:
                    raise GraphError(f"operator {op.name!r}: input tensor {tn!r} does not exist")
                if j in ins:
                    raise GraphError(f"operator {op.name!r}: input tensor {tn!r} listed twice")
                ins.append(j)
                self.consumers[j].append(i)
            outs: list[int] = []
            if not op.outputs:
                raise GraphError(f"operator {op.name!r}: has no output tensor")
            for tn in op.outputs:
                j = self.tensor_index.get(tn)
                if j is None:
                    raise GraphError(f"operator {op.name!r}: output tensor {tn!r} does not exist")
                if self.producer[j] != -1:
                    other = self.ops[self.producer[j]].name
                    raise GraphError(f"tensor {tn!r}: produced by both {other!r} and {op.name!r}")
                if j in ins:
                    raise GraphError(f"operator {op.name!r}: tensor {tn!r} is both input and output")
                self.producer[j] = i
                outs.append(j)
            self.op_in.append(ins)
            self.op_out.append(outs)
        for tn in self.pinned:
            j = self.tensor_index.get(tn)
            if j is None:
                raise GraphError(f"pinned tensor {tn!r} does not exist")
            if self.producer[j] != -1:
                raise GraphError(f"pinned tensor {tn!r} has a producer ({self.ops[self.producer[j]].name!r}); only graph inputs can be pinned")
        seen = set()
        for tn in self.outputs:
            if tn not in self.tensor_index:
                raise GraphError(f"required output {tn!r} does not exist")
            if tn in seen:
                raise GraphError(f"required output {tn!r} listed twice")
            seen.add(tn)
        self.pinned_idx: frozenset[int] = frozenset(self.tensor_index[t] for t in self.pinned)
        self.output_idx: frozenset[int] = frozenset(self.tensor_index[t] for t in self.outputs)
        self.input_idx: list[int] = [j for j in range(n_t) if self.producer[j] == -1]

    def _validate_acyclic(self) -> None:
        order = self._kahn()
        if len(order) < len(self.ops):
            placed = set(order)
            # find one cycle to name it
            import networkx as nx

            g = self.op_digraph()
            g.remove_nodes_from(placed)
            cyc = nx.find_cycle(g)
            names = [self.ops[u].name for u, _ in cyc]
            raise GraphError(f"operator {names[0]!r}: lies on a cycle ({' -> '.join(names + [names[0]])})")

    def _validate_order(self) -> None:
        if len(self.order) != len(self.ops) or set(self.order) != set(self.op_index):
            missing = set(self.op_index) - set(self.order)
            extra = set(self.order) - set(self.op_index)
            if extra:
                raise GraphError(f"given order names unknown operator {sorted(extra)[0]!r}")
            if missing:
                raise GraphError(f"given order misses operator {sorted(missing)[0]!r}")
            raise GraphError("given order lists an operator twice")
        pos = {n: k for k, n in enumerate(self.order)}
        for i, op in enumerate(self.ops):
            for j in self.op_in[i]:
                p = self.producer[j]
                if p != -1 and pos[self.ops[p].name] > pos[op.name]:
                    raise GraphError(f"given order runs operator {op.name!r} before its input producer {self.ops[p].name!r}")

    def _kahn(self) -> list[int]:
        n = len(self.ops)
        indeg = [0] * n
        succ = self.op_succ()
        for i in range(n):
            for s in succ[i]:
                indeg[s] += 1
        stack = [i for i in range(n - 1, -1, -1) if indeg[i] == 0]
        out = []
        while stack:
            i = stack.pop()
            out.append(i)
            for s in reversed(succ[i]):
                indeg[s] -= 1
                if indeg[s] == 0:
                    stack.append(s)
        return out

    # -------------------------------------------------------------- queries
    @property
    def n_ops(self) -> int:
        return len(self.ops)

    @property
    def n_tensors(self) -> int:
        return len(self.tensors)

    def op_succ(self) -> list[list[int]]:
        """Successor operators of each operator (deduplicated, deterministic order)."""
        if getattr(self, "_succ", None) is None:
            succ: list[list[int]] = []
            for i in range(len(self.ops)):
                seen: dict[int, None] = {}
                for j in self.op_out[i]:
                    for c in self.consumers[j]:
                        seen[c] = None
                succ.append(list(seen))
            self._succ = succ
        return self._succ

    def op_pred(self) -> list[list[int]]:
        """Predecessor operators of each operator (deduplicated, deterministic order)."""
        if getattr(self, "_pred", None) is None:
            pred: list[list[int]] = []
            for i in range(len(self.ops)):
                seen: dict[int, None] = {}
                for j in self.op_in[i]:
                    p = self.producer[j]
                    if p != -1:
                        seen[p] = None
                pred.append(list(seen))
            self._pred = pred
        return self._pred

    def reach_masks(self) -> tuple[list[int], list[int]]:
        """Ancestor and descendant sets of every operator as int bitmasks
        (bit u of ``anc[v]`` set iff u reaches v), O(n * edges / 64); cached."""
        if getattr(self, "_reach", None) is None:
            topo = self.topological_order()
            pred, succ = self.op_pred(), self.op_succ()
            anc = [0] * len(self.ops)
            for v in topo:
                a = 0
                for p in pred[v]:
                    a |= anc[p] | (1 << p)
                anc[v] = a
            desc = [0] * len(self.ops)
            for v in reversed(topo):
                d = 0
                for w in succ[v]:
                    d |= desc[w] | (1 << w)
                desc[v] = d
            self._reach = (anc, desc)
        return self._reach

    def topological_order(self) -> list[int]:
        """A deterministic topological order of operator indices."""
        return self._kahn()

    def given_order(self) -> list[int]:
        """The program's given order as operator indices."""
        return [self.op_index[n] for n in self.order]

    def op_digraph(self):
        """networkx DiGraph over operator indices (edges producer -> consumer)."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(range(len(self.ops)))
        for i, ss in enumerate(self.op_succ()):
            for s in ss:
                g.add_edge(i, s)
        return g

    def resident_at_start(self) -> int:
        """Bytes resident before the first operator runs: all graph inputs."""
        return sum(self.size[j] for j in self.input_idx)

    def kept_idx(self) -> frozenset[int]:
        """Pinned inputs and required outputs: a plain order (frees right after last use)
        never frees them. (A schedule may free a required output that an operator produces
        and compute it again; only :meth:`always_resident_idx` is never freed.)"""
        return frozenset(self.pinned_idx) | frozenset(self.output_idx)

    def always_resident_idx(self) -> frozenset[int]:
        """Graph inputs that no schedule may free (pinned or required outputs): resident at
        every moment of every schedule."""
        return frozenset(j for j in self.input_idx if j in self.pinned_idx or j in self.output_idx)

    def always_resident(self) -> int:
        """Bytes of :meth:`always_resident_idx`: a floor under every moment's memory."""
        if getattr(self, "_always", None) is None:
            self._always = sum(self.size[j] for j in self.always_resident_idx())
        return self._always

    def memory_unit(self) -> int:
        """gcd of every positive tensor size and workspace (1 if none): every memory figure
        of every schedule is a multiple of it, so models may count in these units."""
        if getattr(self, "_unit", None) is None:
            self._unit = reduce(gcd, [s for s in list(self.size) + list(self.workspace) if s > 0], 0) or 1
        return self._unit

    def total_cost(self) -> float:
        """Compute cost of running every operator once (the no-recompute baseline)."""
        return float(sum(self.cost))

    def is_tree(self) -> bool:
        """True if every operator has at most one successor (an in-tree / forest)."""
        return all(len(s) <= 1 for s in self.op_succ())

    def summary(self) -> dict:
        return {
            "name": self.name,
            "operators": self.n_ops,
            "tensors": self.n_tensors,
            "edges": sum(len(c) for c in self.consumers),
            "inputs": len(self.input_idx),
            "pinned": len(self.pinned),
            "required_outputs": len(self.outputs),
            "total_bytes": sum(self.size),
            "total_cost": self.total_cost(),
            "multi_output_ops": sum(1 for o in self.op_out if len(o) > 1),
        }

    # ---------------------------------------------------------- convenience
    @classmethod
    def from_single_output(
        cls,
        nodes: Sequence[tuple[str, int, float]],
        edges: Iterable[tuple[str, str]],
        *,
        name: str = "graph",
        order: Sequence[str] | None = None,
        outputs: Sequence[str] = (),
        workspace: dict[str, int] | None = None,
        meta: dict | None = None,
    ) -> "Graph":
        """Build a graph in which each node is an operator with one output tensor.

        ``nodes`` are ``(name, output_bytes, cost)``; ``edges`` are ``(u, v)``
        meaning v consumes u's output. The output tensor of node ``u`` is named
        ``u`` as well. ``outputs`` names nodes whose output must be resident at the end.
        """
        preds: dict[str, list[str]] = {n: [] for n, _, _ in nodes}
        for u, v in edges:
            if u not in preds:
                raise GraphError(f"edge ({u!r}, {v!r}): source node {u!r} does not exist")
            if v not in preds:
                raise GraphError(f"edge ({u!r}, {v!r}): target node {v!r} does not exist")
            if u not in preds[v]:
                preds[v].append(u)
        ws = workspace or {}
        ops = [Operator(n, tuple(preds[n]), (n,), c, ws.get(n, 0)) for n, _, c in nodes]
        tensors = [Tensor(n, s) for n, s, _ in nodes]
        return cls(ops, tensors, outputs=tuple(outputs), order=tuple(order) if order else None, name=name, meta=meta or {})
