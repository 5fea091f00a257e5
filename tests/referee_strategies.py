"""Hypothesis strategies (and a seeded generator for the slow benchmark) of tiny graphs for
the brute-force referee (tests/referee.py).

Every feature of the model appears with a fair probability: multi-output operators,
workspace, pinned and unpinned graph inputs, graph inputs nothing reads, required outputs
(produced tensors and graph inputs), zero-byte tensors, zero and fractional costs, a random
given order. At most 8 operators (``max_ops``).
"""
from __future__ import annotations

import random

from hypothesis import strategies as st

from memsched.formulations import Graph, Operator, Schedule, Tensor, evaluate

__all__ = ["tiny_graphs", "tiny_instances", "random_tiny_graph", "random_budget", "budget_range"]

COSTS = (0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 5.0)


def _build(n, ins, outs_n, sizes_in, sizes_out, edges_in, costs, wss, pinned_flags, req_flags, unread, order_keys,
           name="tiny"):
    tensors = [Tensor(f"in{k}", sizes_in[k]) for k in range(ins)]
    ops = []
    produced = []  # (tensor name, producer index)
    for i in range(n):
        outs = tuple(f"t{i}" if outs_n[i] == 1 else f"t{i}_{m}" for m in range(outs_n[i]))
        for m, t in enumerate(outs):
            tensors.append(Tensor(t, sizes_out[i][m]))
        ops.append((f"op{i}", tuple(edges_in[i]), outs, costs[i], wss[i]))
        produced += [(t, i) for t in outs]
    if unread:
        tensors.append(Tensor("unread", unread[0]))
    ops = [Operator(*o) for o in ops]
    pins = frozenset(f"in{k}" for k in range(ins) if pinned_flags[k])
    if unread and unread[1]:
        pins = pins | {"unread"}
    names = [t.name for t in tensors]
    req = tuple(t for t, f in zip(names, req_flags) if f)
    g = Graph(ops, tensors, pinned=pins, outputs=req, name=name)
    # a random topological order as the given order: Kahn with priority keys
    pred, succ = g.op_pred(), g.op_succ()
    indeg = [len(p) for p in pred]
    ready = [v for v in range(n) if indeg[v] == 0]
    order = []
    while ready:
        ready.sort(key=lambda v: order_keys[v])
        v = ready.pop(0)
        order.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    return Graph(ops, tensors, pinned=pins, outputs=req, order=tuple(g.ops[v].name for v in order), name=name)


def _draw_graph(pick, max_ops: int, min_ops: int = 1, max_size: int = 12, name: str = "tiny") -> Graph:
    """``pick(kind, *args)`` draws: ('int', lo, hi), ('choice', seq), ('bool', p)."""
    n = pick("int", min_ops, max_ops)
    ins = pick("int", 0, 2)
    sizes_in = [pick("int", 0, max_size) for _ in range(ins)]
    pinned_flags = [pick("bool", 0.5) for _ in range(ins)]
    outs_n = [2 if pick("bool", 0.25) else 1 for _ in range(n)]
    sizes_out = [[pick("int", 0, max_size) if not pick("bool", 0.08) else 0 for _ in range(outs_n[i])] for i in range(n)]
    avail = [f"in{k}" for k in range(ins)]
    edges_in = []
    for i in range(n):
        k = pick("int", 0, min(3, len(avail)))
        chosen = []
        pool = list(avail)
        # prefer recent tensors (chains, where recomputation matters) but allow any
        for _ in range(k):
            if not pool:
                break
            if pick("bool", 0.5):
                t = pool[-1 - pick("int", 0, min(2, len(pool) - 1))]
            else:
                t = pool[pick("int", 0, len(pool) - 1)]
            pool.remove(t)
            chosen.append(t)
        edges_in.append(chosen)
        avail += [f"t{i}" if outs_n[i] == 1 else f"t{i}_{m}" for m in range(outs_n[i])]
    costs = [pick("choice", COSTS) for _ in range(n)]
    wss = [pick("int", 1, max_size) if pick("bool", 0.25) else 0 for _ in range(n)]
    unread = (pick("int", 0, max_size), pick("bool", 0.5)) if pick("bool", 0.2) else None
    n_t = ins + sum(outs_n) + (1 if unread else 0)
    req_flags = [pick("bool", 0.15) for _ in range(n_t)]
    order_keys = [pick("int", 0, 1000) for _ in range(n)]
    return _build(n, ins, outs_n, sizes_in, sizes_out, edges_in, costs, wss, pinned_flags, req_flags, unread,
                  order_keys, name=name)


def budget_range(g: Graph) -> tuple[int, int]:
    """(lo, hi): lo = the least budget no local fact rules out (the inputs, and each
    operator's inputs + outputs + workspace + always-resident inputs); hi = the given
    order's peak. Budgets in [lo - 1, hi] are where order and recomputation matter."""
    init = sum(g.size[j] for j in g.input_idx)
    keep = g.pinned_idx | g.output_idx
    const = sum(g.size[j] for j in g.input_idx if j in keep)
    lo = init
    for v in range(g.n_ops):
        need = (sum(g.size[j] for j in g.op_in[v] if j not in keep) + sum(g.size[j] for j in g.op_out[v])
                + g.workspace[v] + const)
        lo = max(lo, need)
    hi = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    return lo, max(lo, hi)


def random_budget(pick, g: Graph) -> int:
    """A budget in bytes, >= 2 (the remat API reads a budget <= 1 as a ratio of the given
    order's peak)."""
    lo, hi = budget_range(g)
    r = pick("int", 0, 9)
    if r == 0:
        b = lo - 1
    elif r == 1:
        b = hi
    else:
        b = lo + (pick("int", 0, 1000) * (hi - lo)) // 1000
    return max(2, b)


def _hyp_pick(draw):
    def pick(kind, *a):
        if kind == "int":
            return draw(st.integers(a[0], a[1]))
        if kind == "choice":
            return draw(st.sampled_from(a[0]))
        return draw(st.integers(0, 999)) < int(a[0] * 1000)
    return pick


def _rng_pick(rng: random.Random):
    def pick(kind, *a):
        if kind == "int":
            return rng.randint(a[0], a[1])
        if kind == "choice":
            return rng.choice(a[0])
        return rng.random() < a[0]
    return pick


@st.composite
def tiny_graphs(draw, max_ops: int = 8, min_ops: int = 1, max_size: int = 12) -> Graph:
    return _draw_graph(_hyp_pick(draw), max_ops, min_ops, max_size)


@st.composite
def tiny_instances(draw, max_ops: int = 8, min_ops: int = 1, max_size: int = 12) -> tuple[Graph, int]:
    """(graph, budget in bytes) with the budget mostly where order and recomputation matter."""
    pick = _hyp_pick(draw)
    g = _draw_graph(pick, max_ops, min_ops, max_size)
    return g, random_budget(pick, g)


def random_tiny_graph(seed: int, max_ops: int = 8, min_ops: int = 1, max_size: int = 12) -> tuple[Graph, int]:
    """The seeded (graph, budget) used by benchmarks/bench_referee.py."""
    rng = random.Random(seed)
    pick = _rng_pick(rng)
    g = _draw_graph(pick, max_ops, min_ops, max_size, name=f"tiny{seed}")
    return g, random_budget(pick, g)
