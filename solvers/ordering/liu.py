"""Liu's optimal ordering for in-trees (J. W. H. Liu, "An application of generalized
tree pebbling to sparse matrix factorization", SIAM J. Algebraic Discrete Methods
8(3), 1987).

Problem. In an in-tree every operator's outputs are consumed by at most one
operator (its parent; forests and multi-input operators allowed). Find a
topological order whose peak memory (docs/semantics.md) is minimum.

Algorithm. Process operators children-first. The optimal order of a subtree
is summarized by its *hill-valley segments*: cut its memory profile (memory
held by the subtree, 0 at its start) at H1 = the last maximum of the "during"
values, V1 = the last minimum of the "after" values at or after H1, H2 = the
last maximum after V1, and so on; then H1 > H2 > ... and V1 < V2 < ... and the
last valley is what the subtree leaves resident. Liu's theorem: interleaving
the children's segments in non-increasing order of H - V (each child's own
segments stay in order because their H - V strictly decreases) and then
running the parent is optimal. A forest is merged the same way without a
parent.

The segment list of the merged sequence is rebuilt with a stack: appending an
element (peak P, valley Q) pops every trailing segment with H <= P or V >= Q
and pushes one segment (max(P, H of the deepest popped), Q); each segment is
pushed and popped once per merge. The longest child's stack is reused in
place up to the first point where another child's segment is interleaved
(before it the other children hold nothing, so its values are unchanged);
the rest is merged with a heap in O(s log k) for s segments from k children.
A chain therefore costs amortized O(1) per node. Measured near-linear on
random trees and caterpillars (benchmarks/sections/20-orderings.md); the
worst case remains O(n^2) (deeply nested interleavings).

Exactness. Memory outside the tree structure must not depend on the order:
the result is optimal when every graph input that some operator consumes is
pinned or a required output (so it is resident throughout). Otherwise such an
input is treated as if it were pinned and the order is a heuristic
(:func:`liu_is_exact` says which). Required outputs, workspace and
multi-output operators are exact.
"""
from __future__ import annotations

import heapq

from memsched.formulations import Graph, MemschedError

__all__ = ["NotATreeError", "liu_order", "liu_is_exact", "liu_peak_claim"]


class NotATreeError(MemschedError):
    """Liu's algorithm was asked to order a graph that is not an in-tree."""


def _check_tree(g: Graph) -> None:
    for i, s in enumerate(g.op_succ()):
        if len(s) > 1:
            names = ", ".join(repr(g.ops[x].name) for x in s[:3])
            raise NotATreeError(
                f"liu: operator {g.ops[i].name!r} feeds {len(s)} operators ({names}); "
                "Liu's algorithm needs an in-tree (every operator consumed by at most one operator)")


def liu_is_exact(g: Graph) -> bool:
    """True if ``g`` is an in-tree whose consumed graph inputs are all pinned or required,
    i.e. when :func:`liu_order` is provably optimal."""
    if not g.is_tree():
        return False
    keep = g.pinned_idx | g.output_idx
    return all(j in keep or not g.consumers[j] for j in g.input_idx)


class _Seg:
    __slots__ = ("h", "v", "nodes")

    def __init__(self, h: int, v: int, nodes):
        self.h, self.v, self.nodes = h, v, nodes


def _push(stack: list[_Seg], p: int, q: int, nodes) -> None:
    """Append an element (peak p, valley q, node rope) to a hill-valley stack."""
    h = p
    while stack and (stack[-1].h <= p or stack[-1].v >= q):
        top = stack.pop()
        if top.h > h:
            h = top.h
        nodes = (top.nodes, nodes)
    stack.append(_Seg(h, q, nodes))


def _flatten(rope, out: list[int]) -> None:
    stack = [rope]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.append(x[1])
            stack.append(x[0])
        elif x is not None:
            out.append(x)


def _merge(children: list[list[_Seg]]) -> tuple[list[_Seg], int]:
    """Interleave the children's segment stacks by non-increasing H - V (ties: earlier
    child first) into one hill-valley stack; return it and the memory held at the end
    (the sum of the children's residuals). The children's lists are consumed.

    Small-to-large: the longest child's segments that precede every other child's first
    segment keep their values (the other children hold nothing yet), so that prefix of
    its stack is reused in place; only its suffix and the other children's segments are
    pushed."""
    hold = [0] * len(children)
    big = max(range(len(children)), key=lambda c: len(children[c]), default=-1)
    heap = [(-(segs[0].h - segs[0].v), c, 0) for c, segs in enumerate(children) if segs and c != big]
    heapq.heapify(heap)
    stack: list[_Seg] = []
    total = 0
    if big >= 0 and children[big]:
        b = children[big]
        p = len(b)
        if heap:
            while p > 0 and (-(b[p - 1].h - b[p - 1].v), big) > heap[0][:2]:
                p -= 1
        suffix = b[p:]
        del b[p:]
        stack = b
        total = hold[big] = b[-1].v if b else 0
        children[big] = suffix
        if suffix:
            heapq.heappush(heap, (-(suffix[0].h - suffix[0].v), big, 0))
    while heap:
        _, c, k = heapq.heappop(heap)
        seg = children[c][k]
        base = total - hold[c]
        _push(stack, base + seg.h, base + seg.v, seg.nodes)
        total = base + seg.v
        hold[c] = seg.v
        if k + 1 < len(children[c]):
            nxt = children[c][k + 1]
            heapq.heappush(heap, (-(nxt.h - nxt.v), c, k + 1))
    return stack, total


def liu_order(g: Graph) -> list[int]:
    """Liu's optimal order for an in-tree (forest); raises :class:`NotATreeError` otherwise."""
    return _liu(g)[0]


def _liu(g: Graph) -> tuple[list[int], int]:
    _check_tree(g)
    n = g.n_ops
    size = g.size
    keep_out = g.output_idx
    succ = g.op_succ()
    children: list[list[int]] = [[] for _ in range(n)]
    roots = []
    for i in range(n):
        if succ[i]:
            children[succ[i][0]].append(i)
        else:
            roots.append(i)
    # memory a finished subtree of v leaves: v's consumed or required outputs (+ required
    # outputs of descendants, carried in the children's residuals)
    stacks: list[list[_Seg] | None] = [None] * n
    for v in g.topological_order():  # children before parents
        kids = children[v]
        stack, total = _merge([stacks[c] for c in kids])
        for c in kids:
            stacks[c] = None
        out = sum(size[j] for j in g.op_out[v])
        kept = sum(size[j] for j in g.op_out[v] if g.consumers[j] or j in keep_out)
        # inputs produced inside the subtree are freed after v unless required
        freed = sum(size[j] for j in g.op_in[v] if g.producer[j] != -1 and j not in keep_out)
        _push(stack, total + out + g.workspace[v], total - freed + kept, v)
        stacks[v] = stack
    final, _ = _merge([stacks[r] for r in roots])
    order: list[int] = []
    for seg in final:
        _flatten(seg.nodes, order)
    return order, (final[0].h if final else 0)


def liu_peak_claim(g: Graph) -> int | None:
    """The peak of Liu's order as computed by the segment algebra alone (not by the
    evaluator): max(inputs resident at start, kept inputs + the first hill H1 of the
    merged forest). Returned only when :func:`liu_is_exact` holds, else None. Solvers
    pass it as ``claimed`` to make_result, which cross-checks it with the evaluator."""
    order, h1 = _liu(g)
    if not liu_is_exact(g):
        return None
    keep = g.pinned_idx | g.output_idx
    const = sum(g.size[j] for j in g.input_idx if j in keep)
    return max(g.resident_at_start(), const + h1) if order else g.resident_at_start()
