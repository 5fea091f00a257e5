"""Seeded generators of small and large synthetic graphs.

Every generator is deterministic in its arguments (``seed`` included) and
returns a validated :class:`formulations.Graph` of single-output operators
unless stated otherwise.
"""
from __future__ import annotations

import math
import random

from memsched.formulations import Graph, MemschedError, Operator, Tensor

__all__ = ["chain", "tree", "unet", "random_dag", "random_multi_output", "random_layered"]


class GeneratorError(MemschedError, ValueError):
    """A generator parameter out of range (e.g. no operators)."""


def _count(value, what: str = "n", least: int = 1) -> int:
    """An integer parameter >= ``least`` (n = 0 would be an empty graph, a negative n too)."""
    import operator

    try:
        v = None if isinstance(value, bool) else operator.index(value)  # numpy integers too
    except TypeError:
        v = None
    if v is None or v < least:
        raise GeneratorError(f"{what} must be an integer >= {least}, got {value!r}")
    return v


def chain(n: int, size: int = 100, cost: float = 1.0, *, name: str | None = None) -> Graph:
    """A chain of ``n`` operators v0 -> v1 -> ... each producing ``size`` bytes."""
    _count(n)
    nodes = [(f"v{i}", size, cost) for i in range(n)]
    edges = [(f"v{i}", f"v{i + 1}") for i in range(n - 1)]
    return Graph.from_single_output(nodes, edges, name=name or f"chain{n}")


def tree(n: int, seed: int = 0, max_size: int = 100, *, name: str | None = None) -> Graph:
    """A random in-tree (every operator has at most one consumer) with ``n`` operators;
    the root is the last one. Sizes uniform in [1, max_size]."""
    _count(n)
    rng = random.Random(seed)
    nodes = [(f"t{i}", rng.randint(1, max_size), float(rng.randint(1, 10))) for i in range(n)]
    # node i (i < n-1) feeds a node with larger index: reversing a random recursive tree
    edges = [(f"t{i}", f"t{rng.randint(i + 1, n - 1)}") for i in range(n - 1)]
    return Graph.from_single_output(nodes, edges, name=name or f"tree{n}_s{seed}")


def unet(depth: int = 3, width: int = 1, base: int = 1024, *, name: str | None = None,
         halving: bool = True) -> Graph:
    """A U-Net-like skip graph: an encoder of ``depth`` levels (each ``width`` conv ops,
    activation size halving per level), a bottleneck, and a decoder whose level k
    concatenates the encoder's level-k skip tensor. ``halving=False`` keeps every
    level at ``base`` (channels growing as resolution shrinks): the held skip tensors
    then dominate the peak and rematerialization pays off."""
    _count(depth, "depth", 0), _count(width, "width"), _count(base, "base")
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
        sz = max(1, base >> lvl) if halving else base
        for w in range(width):
            prev = add(f"enc{lvl}_conv{w}", sz * 2, float(2 * sz), prev)
        skips.append(prev)
        prev = add(f"enc{lvl}_pool", max(1, sz // 2), float(sz), prev)
    bsz = max(1, base >> depth) if halving else base
    prev = add("bottleneck", bsz * 4, float(bsz) * 4, prev)
    for lvl in reversed(range(depth)):
        sz = max(1, base >> lvl) if halving else base
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
    _count(n)
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
    _count(n)
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


def random_layered(n: int, seed: int = 0, *, width: float | None = None, node_level_variance: float = 0.75,
                   edge_density: float = 0.2, skip_connection_density: float = 0.14, mean_size: int = 2000,
                   max_duration: int = 1000, name: str | None = None) -> Graph:
    """A random layered graph after Gagrani et al., "Neural Topological Ordering for
    Computation Graphs" (NeurIPS 2022), Appendix A, the generator of Moccasin's
    ``random_layered_*`` instances. ``n`` operators in total, one output tensor each.

    1. Layers: ``width`` W (default uniform in [0.25, 0.5]) sets the number of layers
       L = ceil(sqrt(n (1/W - 1))). Layer 0 is a single source; every further layer
       gets uniform(ceil(n/L (1-s)), floor(n/L (1+s))) nodes (s = node_level_variance,
       at least 1) until n - 1 nodes are placed; a single sink closes the graph.
    2. Consecutive layers a, b get E = int(|a||b| d + (1-d) max(|a|,|b|)) edges
       (d = edge_density): the E edges are spread as evenly as possible (random
       choice among the least loaded) over the nodes of the larger layer, and a node
       with k edges connects to the k nodes of the other layer centred at its
       proportional position. Every node but the source has a predecessor and every
       node but the sink a successor.
    3. Skip connections: ceil(E_total c / (1 - c)) extra edges (c =
       skip_connection_density) from a random layer l to a random layer >= l + 2 (the
       sink excluded), at proportional positions x and min(x + 0.2 u, 0.999) with x, u
       uniform; duplicates are dropped.

    Output sizes are drawn from an exponential distribution with mean ``mean_size``
    bytes (at least 1; the paper's exact size law is not published, this matches the
    spread of Moccasin's n=100/250 files: median ~1.4k, mean ~2k bytes), compute costs
    uniform integers in [1, max_duration] (0 for source and sink). The given order is
    a seeded random topological order; the sink's output is the required output."""
    _count(n, "n (random_layered: a source and a sink at least)", 2)
    rng = random.Random(seed)
    w = rng.uniform(0.25, 0.5) if width is None else width
    n_layers = max(1, math.ceil(math.sqrt(n * (1.0 / w - 1.0))))
    s = node_level_variance
    layers: list[list[int]] = [[0]]
    placed = 1
    while placed < n - 1:
        lo = max(1, math.ceil(n / n_layers * (1 - s)))
        hi = max(lo, math.floor(n / n_layers * (1 + s)))
        k = min(rng.randint(lo, hi), n - 1 - placed)
        layers.append(list(range(placed, placed + k)))
        placed += k
    layers.append([n - 1])
    edges: set[tuple[int, int]] = set()
    for a_nodes, b_nodes in zip(layers, layers[1:]):
        a, b = len(a_nodes), len(b_nodes)
        e = int(a * b * edge_density + (1 - edge_density) * max(a, b))
        big, small, big_is_src = (a_nodes, b_nodes, True) if a >= b else (b_nodes, a_nodes, False)
        # spreading e edges one by one onto a random least-loaded node gives every node
        # e // |big| edges and a uniformly random set of e % |big| nodes one more
        load = [e // len(big)] * len(big)
        for i in rng.sample(range(len(big)), e % len(big)):
            load[i] += 1
        for i, cnt in enumerate(load):
            centre = 0 if len(big) == 1 else math.ceil(i * (len(small) - 1) / (len(big) - 1))
            for t in range(centre - (cnt - 1) // 2, centre - (cnt - 1) // 2 + cnt):
                if 0 <= t < len(small):
                    u, v = (big[i], small[t]) if big_is_src else (small[t], big[i])
                    edges.add((u, v))
    inner = len(layers) - 1  # the sink layer takes no skip connections
    if inner >= 3:
        for _ in range(math.ceil(len(edges) * skip_connection_density / (1 - skip_connection_density))):
            ls = rng.randint(0, inner - 3)
            lt = rng.randint(ls + 2, inner - 1)
            xs = rng.random()
            xt = min(xs + 0.2 * rng.random(), 0.999)
            edges.add((layers[ls][math.floor(xs * len(layers[ls]))], layers[lt][math.floor(xt * len(layers[lt]))]))
    names = [f"n{i}" for i in range(n)]
    sizes = [max(1, round(rng.expovariate(1.0 / mean_size))) for _ in range(n)]
    costs = [0.0 if i in (0, n - 1) else float(rng.randint(1, max_duration)) for i in range(n)]
    # seeded random topological order
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v in sorted(edges):
        succ[u].append(v)
        indeg[v] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    order = []
    while ready:
        k = rng.randrange(len(ready))
        ready[k], ready[-1] = ready[-1], ready[k]
        v = ready.pop()
        order.append(v)
        for x in succ[v]:
            indeg[x] -= 1
            if indeg[x] == 0:
                ready.append(x)
    return Graph.from_single_output(
        [(names[i], sizes[i], costs[i]) for i in range(n)], [(names[u], names[v]) for u, v in sorted(edges)],
        name=name or f"random_layered_n{n}_s{seed}", order=[names[i] for i in order], outputs=[names[n - 1]],
        meta={"generator": "random_layered", "n": n, "seed": seed, "width": w, "layers": len(layers),
              "node_level_variance": s, "edge_density": edge_density,
              "skip_connection_density": skip_connection_density})
