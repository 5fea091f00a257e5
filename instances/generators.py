"""Seeded generators of small and large synthetic graphs.

Every generator is deterministic in its arguments (``seed`` included) and
returns a validated :class:`formulations.Graph` of single-output operators
unless stated otherwise.
"""
from __future__ import annotations

import random

from formulations import Graph, Operator, Tensor

__all__ = ["chain", "tree", "unet", "random_dag", "random_multi_output"]


def chain(n: int, size: int = 100, cost: float = 1.0, *, name: str | None = None) -> Graph:
    """A chain of ``n`` operators v0 -> v1 -> ... each producing ``size`` bytes."""
    nodes = [(f"v{i}", size, cost) for i in range(n)]
    edges = [(f"v{i}", f"v{i + 1}") for i in range(n - 1)]
    return Graph.from_single_output(nodes, edges, name=name or f"chain{n}")


def tree(n: int, seed: int = 0, max_size: int = 100, *, name: str | None = None) -> Graph:
    """A random in-tree (every operator has at most one consumer) with ``n`` operators;
    the root is the last one. Sizes uniform in [1, max_size]."""
    rng = random.Random(seed)
    nodes = [(f"t{i}", rng.randint(1, max_size), float(rng.randint(1, 10))) for i in range(n)]
    # node i (i < n-1) feeds a node with larger index: reversing a random recursive tree
    edges = [(f"t{i}", f"t{rng.randint(i + 1, n - 1)}") for i in range(n - 1)]
    return Graph.from_single_output(nodes, edges, name=name or f"tree{n}_s{seed}")


def unet(depth: int = 3, width: int = 1, base: int = 1024, *, name: str | None = None) -> Graph:
    """A U-Net-like skip graph: an encoder of ``depth`` levels (each ``width`` conv ops,
    activation size halving per level), a bottleneck, and a decoder whose level k
    concatenates the encoder's level-k skip tensor."""
    nodes, edges = [], []
    prev = None

    def add(nm, size, cost, *preds):
        nodes.append((nm, size, cost))
        for p in preds:
            if p is not None:
                edges.append((p, nm))
        return nm

    prev = add("input", base, 0.0)
    skips = []
    for lvl in range(depth):
        sz = max(1, base >> lvl)
        for w in range(width):
            prev = add(f"enc{lvl}_conv{w}", sz * 2, float(2 * sz), prev)
        skips.append(prev)
        prev = add(f"enc{lvl}_pool", max(1, sz // 2), float(sz), prev)
    prev = add("bottleneck", max(1, base >> depth) * 4, float(base >> depth) * 4, prev)
    for lvl in reversed(range(depth)):
        sz = max(1, base >> lvl)
        prev = add(f"dec{lvl}_up", sz * 2, float(sz), prev)
        prev = add(f"dec{lvl}_cat", sz * 4, float(sz), prev, skips[lvl])
        for w in range(width):
            prev = add(f"dec{lvl}_conv{w}", sz * 2, float(2 * sz), prev)
    add("output", base, float(base), prev)
    return Graph.from_single_output(nodes, edges, name=name or f"unet_d{depth}_w{width}", outputs=["output"])


def random_dag(n: int, seed: int = 0, *, edge_prob: float = 0.3, max_size: int = 100, max_cost: int = 10,
               name: str | None = None) -> Graph:
    """A random DAG on ``n`` single-output operators: each pair (i<j) is an edge with
    probability ``edge_prob``; every operator but the first gets at least one
    predecessor so the graph is connected. Sizes in [1, max_size], integer costs."""
    rng = random.Random(seed)
    nodes = [(f"n{i}", rng.randint(1, max_size), float(rng.randint(1, max_cost))) for i in range(n)]
    edges = []
    for j in range(1, n):
        preds = [i for i in range(j) if rng.random() < edge_prob] or [rng.randrange(j)]
        edges += [(f"n{i}", f"n{j}") for i in preds]
    return Graph.from_single_output(nodes, edges, name=name or f"dag{n}_s{seed}")


def random_multi_output(n: int, seed: int = 0, *, max_size: int = 100, name: str | None = None) -> Graph:
    """A random DAG with multi-output operators, a pinned parameter, workspace and a
    required output: exercises every feature of the model."""
    rng = random.Random(seed)
    tensors = [Tensor("x", rng.randint(1, max_size)), Tensor("w", rng.randint(1, max_size))]
    ops, avail = [], ["x", "w"]
    for i in range(n):
        k = rng.randint(1, min(3, len(avail)))
        ins = tuple(sorted(rng.sample(avail, k)))
        outs = tuple(f"o{i}_{m}" for m in range(rng.choice((1, 1, 2))))
        tensors += [Tensor(t, rng.randint(0, max_size)) for t in outs]
        ops.append(Operator(f"op{i}", ins, outs, float(rng.randint(1, 10)), rng.choice((0, 0, rng.randint(1, max_size)))))
        avail += list(outs)
    return Graph(ops, tensors, pinned=frozenset({"w"}), outputs=(ops[-1].outputs[0],), name=name or f"multi{n}_s{seed}")
