"""Restriction of a graph to a set of operators: a relaxation of rematerialization.

``operator_subgraph(graph, keep)`` is the graph G_K of the operators ``keep`` (any set):

* the operators of K, and the tensors they make, with their sizes;
* each tensor that K reads and an operator outside K makes, as a pinned graph input of size 0;
* the graph inputs of G that K reads, as they are (pinned where they are pinned);
* no required outputs; the given order is G's restricted to K.

**Lemma** (docs/remat-low-budgets.md, section 16). Delete, from a schedule of G within a
budget B and caps, the computations of the operators outside K and the frees of the tensors
G_K does not have: what is left is a schedule of G_K within B and the same caps, whose first
computations keep their relative order. (A kept computation reads tensors made in K, which
have the same computations and frees as in G, or boundary tensors, pinned and always there;
the memory at a kept event is the resident tensors made in K plus the workspace, a part of G's
memory then.) So G_K's least peak (free or given order, any caps) is at most G's, "G_K has
no schedule within B" refutes B for G, and G's extra compute over its baseline is at least
G_K's (every operator outside K runs at least once). Checked against the brute-force referee
by tests/test_operator_subgraph.py.

When K is ancestor-closed (with an operator, every producer of its inputs) there are no
boundary tensors besides G's own inputs: this is the restriction of section 12 there.
"""
from __future__ import annotations

from typing import Iterable

from .graph import Graph, GraphError, Tensor

__all__ = ["operator_subgraph"]


def operator_subgraph(graph: Graph, keep: Iterable[int]) -> Graph:
    """G_K for the operator indices ``keep`` (module docstring). O(operators + tensors)."""
    keep = sorted(set(keep))
    if not keep:
        raise GraphError("operator_subgraph: the set of operators to keep is empty")
    bad = [v for v in keep if not (isinstance(v, int) and 0 <= v < graph.n_ops)]
    if bad:
        raise GraphError(f"operator_subgraph: no operator with index {bad[0]!r} (the graph has {graph.n_ops})")
    ops = [graph.ops[v] for v in keep]
    made = {t for o in ops for t in o.outputs}
    read = {t for o in ops for t in o.inputs}
    tensors, pinned = [], set()
    for t in graph.tensors:
        if t.name in made:
            tensors.append(t)
        elif t.name in read:
            if graph.producer[graph.tensor_index[t.name]] >= 0:  # made outside K: free and always there
                tensors.append(Tensor(t.name, 0))
                pinned.add(t.name)
            else:
                tensors.append(t)
                if t.name in graph.pinned:
                    pinned.add(t.name)
    names = {o.name for o in ops}
    return Graph(ops, tensors, pinned=frozenset(pinned), outputs=(),
                 order=tuple(x for x in graph.order if x in names), name=f"{graph.name}-restricted")
