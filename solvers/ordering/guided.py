"""Orders guided by learned precedences (docs/bounds.md, section 4b).

:func:`bounds.learn_precedences` at a threshold theta returns, for every operator v, the
operators that run before v in every order of peak <= theta. :func:`precedence_graph`
adds them to the graph as zero-byte tensors: its orders are exactly the orders of the
graph that obey them, each with the same memory at every step. So

* every order of the precedence graph is an order of the graph with the same peak (an
  upper bound found there is one of the graph), and
* every order of the graph of peak <= theta is an order of the precedence graph, hence
  ``optimum(graph) >= min(optimum(precedence graph), theta + 1)``: a lower bound L of the
  precedence graph gives the graph the bound ``min(L, theta + 1)``.

The exact driver searches the precedence graph (a much smaller space of orders) with
its own heuristics and bounds (``exact._stage_guided``).
"""
from __future__ import annotations

from memsched.formulations import Graph
from memsched.formulations.graph import Operator, Tensor

__all__ = ["precedence_graph", "learned_covering_pairs"]

#: name prefix of the zero-byte tensors that carry the learned precedences
PREC_PREFIX = "__learned_"


def learned_covering_pairs(g: Graph, before: list[int]) -> list[tuple[int, int]]:
    """The pairs (a, v) of the transitive reduction of ``before`` (bitmasks: ``before[v]``
    holds the operators that run before v, closed under transitivity) that are not already
    ancestor relations of ``g``: a is in ``before[v]``, a is not an ancestor of v, and no w in
    ``before[v]`` has a in ``before[w]``. O(n^2 / wordsize) per operator."""
    anc, _ = g.reach_masks()
    pairs: list[tuple[int, int]] = []
    for v in range(g.n_ops):
        learned = before[v] & ~anc[v]
        if not learned:
            continue
        implied, m = 0, before[v]
        while m:
            low = m & -m
            implied |= before[low.bit_length() - 1]
            m ^= low
        cov = learned & ~implied
        while cov:
            low = cov & -cov
            pairs.append((low.bit_length() - 1, v))
            cov ^= low
    return pairs


def precedence_graph(g: Graph, before: list[int]) -> Graph:
    """``g`` with each learned covering precedence (a before v) as a zero-byte tensor
    produced by a and read by v. Operators keep their indices; the memory of every order
    at every step is unchanged (the new tensors have no bytes)."""
    pairs = learned_covering_pairs(g, before)
    names = set(g.tensor_index)
    extra_in: dict[int, list[str]] = {}
    extra_out: dict[int, list[str]] = {}
    tensors = list(g.tensors)
    for a, v in pairs:
        name = f"{PREC_PREFIX}{a}_{v}"
        while name in names:
            name += "_"
        names.add(name)
        tensors.append(Tensor(name, 0))
        extra_out.setdefault(a, []).append(name)
        extra_in.setdefault(v, []).append(name)
    ops = [Operator(o.name, tuple(o.inputs) + tuple(extra_in.get(i, ())), tuple(o.outputs) + tuple(extra_out.get(i, ())),
                    o.cost, o.workspace) for i, o in enumerate(g.ops)]
    return Graph(ops, tensors, pinned=g.pinned, outputs=g.outputs, name=g.name, meta=dict(g.meta))
