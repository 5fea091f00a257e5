"""Recognition of two-terminal series-parallel DAGs, with the decomposition tree.

Problem. A directed multigraph is *two-terminal series-parallel* (TTSP) with
source ``s`` and sink ``t`` if it is a single edge ``s -> t``, or the *series*
composition of two TTSP graphs (the sink of the first identified with the
source of the second), or the *parallel* composition of two TTSP graphs with
the same terminals.  A DAG is TTSP iff repeatedly applying

* series reduction: a non-terminal vertex with exactly one in-edge ``u -> w``
  and one out-edge ``w -> v`` is replaced by an edge ``u -> v``;
* parallel reduction: two edges with the same endpoints are merged;

ends in the single edge ``s -> t`` (Duffin 1965; Valdes, Tarjan and Lawler,
"The recognition of series parallel digraphs", SIAM J. Comput. 1982).  The
reductions are confluent, so any order works; recording what each merged edge
stands for yields the decomposition tree.

Complexity: O(n + m) reductions, each O(1) amortized with the hash maps used
here (O((n + m) log) worst case from set operations; linear in practice).

``decompose(G)`` works on any networkx DiGraph; ``decompose_graph(graph)`` on
the operator DAG of a :class:`formulations.Graph` (edges producer -> consumer;
graph inputs are not vertices).  Failure raises :class:`NotSeriesParallel`
(a MemschedError) whose message says why: several sources or sinks, or the
vertex where the reduction got stuck.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import networkx as nx

from memsched.formulations.errors import MemschedError

__all__ = ["NotSeriesParallel", "SPNode", "decompose", "decompose_graph", "is_series_parallel"]


class NotSeriesParallel(MemschedError):
    """The DAG is not two-terminal series-parallel; the message names a witness."""


@dataclass
class SPNode:
    """A node of the decomposition tree.

    ``kind`` is ``"edge"`` (a leaf: the DAG edge ``source -> sink``), ``"series"``
    (children composed in order: child k's sink is child k+1's source) or
    ``"parallel"`` (children share both terminals).  Series and parallel nodes
    have at least two children and never a child of their own kind (flattened).
    """

    kind: str
    source: object
    sink: object
    children: list["SPNode"] = field(default_factory=list)

    def leaves(self) -> list[tuple]:
        """The DAG edges under this node, left to right."""
        if self.kind == "edge":
            return [(self.source, self.sink)]
        out = []
        for c in self.children:
            out.extend(c.leaves())
        return out

    def depth(self) -> int:
        return 0 if self.kind == "edge" else 1 + max(c.depth() for c in self.children)

    def to_json(self):
        if self.kind == "edge":
            return ["edge", self.source, self.sink]
        return [self.kind, [c.to_json() for c in self.children]]


def _compose(kind: str, a: SPNode, b: SPNode) -> SPNode:
    kids = []
    for x in (a, b):
        kids.extend(x.children if x.kind == kind else [x])
    return SPNode(kind, a.source, b.sink if kind == "series" else a.sink, kids)


def decompose(G: nx.DiGraph, source=None, sink=None, *, name=str) -> SPNode:
    """Decomposition tree of the DAG ``G`` as a two-terminal series-parallel graph.

    ``source``/``sink`` default to the unique vertex without in-/out-edges.
    ``name`` renders a vertex in error messages.  Raises :class:`NotSeriesParallel`.
    """
    if G.number_of_nodes() == 0:
        raise NotSeriesParallel("graph is empty")
    if not nx.is_directed_acyclic_graph(G):
        raise NotSeriesParallel("graph has a cycle")
    if source is None:
        srcs = [v for v in G.nodes if G.in_degree(v) == 0]
        if len(srcs) != 1:
            raise NotSeriesParallel(f"not two-terminal: {len(srcs)} sources ({', '.join(name(v) for v in srcs[:4])}"
                                    f"{', ...' if len(srcs) > 4 else ''})")
        source = srcs[0]
    if sink is None:
        snks = [v for v in G.nodes if G.out_degree(v) == 0]
        if len(snks) != 1:
            raise NotSeriesParallel(f"not two-terminal: {len(snks)} sinks ({', '.join(name(v) for v in snks[:4])}"
                                    f"{', ...' if len(snks) > 4 else ''})")
        sink = snks[0]
    if G.number_of_nodes() == 1:
        raise NotSeriesParallel(f"single vertex {name(source)} has no edge (a TTSP graph has at least one edge)")
    for v in G.nodes:
        if v != source and G.in_degree(v) == 0:
            raise NotSeriesParallel(f"not two-terminal: {name(v)} is a second source besides {name(source)}")
        if v != sink and G.out_degree(v) == 0:
            raise NotSeriesParallel(f"not two-terminal: {name(v)} is a second sink besides {name(sink)}")

    # multigraph of labelled edges: edge id -> (u, v, SPNode); one id per endpoint pair
    between: dict[tuple, int] = {}
    ends: dict[int, tuple] = {}
    label: dict[int, SPNode] = {}
    out_e: dict = {v: set() for v in G.nodes}
    in_e: dict = {v: set() for v in G.nodes}
    next_id = 0

    def add(u, v, node: SPNode) -> None:
        nonlocal next_id
        eid = between.get((u, v))
        if eid is not None:  # parallel reduction on arrival
            label[eid] = _compose("parallel", label[eid], node)
            return
        eid = next_id
        next_id += 1
        between[(u, v)] = eid
        ends[eid] = (u, v)
        label[eid] = node
        out_e[u].add(eid)
        in_e[v].add(eid)

    def remove(eid: int) -> None:
        u, v = ends.pop(eid)
        del between[(u, v)]
        out_e[u].discard(eid)
        in_e[v].discard(eid)
        del label[eid]

    for u, v in G.edges:
        add(u, v, SPNode("edge", u, v))
    queue = deque(v for v in G.nodes if v not in (source, sink))
    alive = set(G.nodes)
    while queue:
        w = queue.popleft()
        if w not in alive or len(in_e[w]) != 1 or len(out_e[w]) != 1:
            continue
        (ei,), (eo,) = tuple(in_e[w]), tuple(out_e[w])
        u, v = ends[ei][0], ends[eo][1]
        node = _compose("series", label[ei], label[eo])
        remove(ei)
        remove(eo)
        alive.discard(w)
        add(u, v, node)
        for x in (u, v):
            if x not in (source, sink):
                queue.append(x)
    if len(ends) == 1 and (source, sink) in between:
        return label[between[(source, sink)]]
    # stuck: name a vertex that could not be reduced
    stuck = sorted((v for v in alive if v not in (source, sink)), key=lambda v: (-(len(in_e[v]) + len(out_e[v])), str(v)))
    if stuck:
        w = stuck[0]
        ins = sorted({name(ends[e][0]) for e in in_e[w]})
        outs = sorted({name(ends[e][1]) for e in out_e[w]})
        raise NotSeriesParallel(
            f"not series-parallel: the reduction gets stuck at {name(w)} (reduced in-neighbours {ins[:4]}, "
            f"out-neighbours {outs[:4]}); the graph contains a Wheatstone-bridge (N-shaped) subgraph")
    raise NotSeriesParallel(f"not series-parallel: {len(ends)} edges remain between the terminals")


def decompose_graph(graph) -> SPNode:
    """Decomposition tree of the operator DAG of a :class:`formulations.Graph`
    (vertices = operator indices; edge u -> v when v reads an output of u).
    A graph with one operator is accepted as the trivial case (a leaf edge from
    the operator to itself is not meaningful, so a ``"series"`` node with no
    children is returned)."""
    if graph.n_ops == 1:
        return SPNode("series", 0, 0, [])
    return decompose(graph.op_digraph(), name=lambda i: repr(graph.ops[i].name))


def is_series_parallel(G) -> bool:
    """True iff ``G`` (a networkx DiGraph or a formulations.Graph) is two-terminal series-parallel."""
    try:
        if hasattr(G, "op_digraph"):
            decompose_graph(G)
        else:
            decompose(G)
        return True
    except NotSeriesParallel:
        return False
