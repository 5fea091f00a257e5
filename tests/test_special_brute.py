"""Independent brute-force referees for the special-class solvers (used by the
other tests/test_special_*.py files), plus their own sanity checks.

``brute_remat`` is Dijkstra over evaluator states (resident set, operators done,
recompute counts[, stage]) with events compute/free; it shares no code with
memsched.solvers.special.sp_knapsack or memsched.solvers.special.width_dp. ``fixed_order=True`` restricts it to
the given-order stage class (first computations in the given order; in each
stage, recomputations of earlier operators in increasing position, before the
stage's first computation; nothing after the last operator's first computation).
"""
from __future__ import annotations

import heapq
import itertools
import random

from memsched.formulations import Graph, Operator, Tensor, evaluate, Schedule


def brute_remat(g: Graph, B: int, caps=None, fixed_order: bool = False, max_states: int = 3_000_000):
    """Least total compute of a schedule with peak <= B (None if none exists)."""
    n = g.n_ops
    caps = caps if isinstance(caps, list) else [caps] * n
    order = g.given_order()
    pos = {v: k for k, v in enumerate(order)}
    pinned = g.pinned_idx
    size = g.size
    start_res = frozenset(g.input_idx)
    if sum(size[j] for j in start_res) > B:
        return None
    need_out = g.output_idx
    start = (start_res, frozenset(), tuple([0] * n), 0, -1)
    dist = {start: 0.0}
    heap = [(0.0, 0, start)]
    tie = itertools.count(1)
    while heap:
        d, _, st = heapq.heappop(heap)
        if dist.get(st, float("inf")) < d:
            continue
        res, done, cnt, k, last = st
        if len(done) == n and need_out <= res:
            return d
        if len(dist) > max_states:
            raise RuntimeError("brute force: too many states")
        succ = []
        for j in res:
            if j not in pinned:
                succ.append((0.0, (res - {j}, done, cnt, k, last)))
        mem = sum(size[j] for j in res)
        for v in range(n):
            if any(j not in res for j in g.op_in[v]) or any(j in res for j in g.op_out[v]):
                continue
            if mem + sum(size[j] for j in g.op_out[v]) + g.workspace[v] > B:
                continue
            first = v not in done
            if first:
                if fixed_order and pos[v] != k:
                    continue
                nk, nl, ncnt = (k + 1, -1, cnt) if fixed_order else (k, last, cnt)
            else:
                if caps[v] is not None and cnt[v] >= caps[v]:
                    continue
                if fixed_order and not (last < pos[v] < k < n):  # no stage after the last operator
                    continue
                ncnt = cnt[:v] + (cnt[v] + 1,) + cnt[v + 1:]
                nk, nl = k, (pos[v] if fixed_order else last)
            succ.append((g.cost[v], (res | frozenset(g.op_out[v]), done | {v}, ncnt, nk, nl)))
        for c, s2 in succ:
            nd = d + c
            if nd < dist.get(s2, float("inf")) - 1e-12:
                dist[s2] = nd
                heapq.heappush(heap, (nd, next(tie), s2))
    return None


def brute_min_peak(g: Graph, allow: float, caps=None, fixed_order: bool = False):
    """Least peak of a schedule with compute <= allow (binary search over brute_remat)."""
    hi = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    lo = g.resident_at_start()
    while lo < hi:
        mid = (lo + hi) // 2
        c = brute_remat(g, mid, caps, fixed_order)
        if c is not None and c <= allow + 1e-9:
            hi = mid
        else:
            lo = mid + 1
    return lo


def brute_knapsack(weights, values, capacity):
    """max sum(values) over subsets with sum(weights) <= capacity, by enumeration."""
    best = 0
    n = len(weights)
    for mask in range(1 << n):
        w = sum(weights[i] for i in range(n) if mask >> i & 1)
        if w <= capacity:
            best = max(best, sum(values[i] for i in range(n) if mask >> i & 1))
    return best


def random_class_instance(seed: int, m: int | None = None):
    """A random graph of the sp-knapsack class: a Hamiltonian path with random
    non-crossing skip edges; inputs of skip sources are zero-byte; returns (graph, caps)."""
    rng = random.Random(seed)
    m = m or rng.randint(3, 8)
    ends: dict[int, int] = {}
    stack: list[int] = []
    for a in range(m - 2):
        while stack and stack[-1] <= a:
            stack.pop()
        limit = min(stack[-1] if stack else m - 1, m - 1)
        if limit >= a + 2 and (a - 1) not in ends and a not in ends.values() and rng.random() < 0.8:
            b = rng.randint(min(a + 3, limit), limit)
            ends[a] = b
            stack.append(b)
    consumers: dict[int, list[int]] = {k: ([k + 1] if k + 1 < m else []) for k in range(m)}
    for a, b in ends.items():
        consumers[a].append(b)
    inputs: dict[int, list[int]] = {k: [] for k in range(m)}
    for k, cs in consumers.items():
        for c in cs:
            inputs[c].append(k)
    sizes = [rng.choice([0, rng.randint(1, 8), rng.randint(1, 8)]) for _ in range(m)]
    tokens = {t for a in ends for t in inputs[a]}  # inputs of a skip source are zero-byte tokens
    for a in ends:
        if a not in tokens and rng.random() < 0.8:
            sizes[a] = rng.randint(5, 30)
    for t in tokens:
        sizes[t] = 0
    tensors = [Tensor("x", rng.randint(0, 5))] + [Tensor(f"t{k}", sizes[k]) for k in range(m)]
    ops = [Operator(f"v{k}", tuple(f"t{i}" for i in inputs[k]) + (("x",) if k == 0 or rng.random() < 0.2 else ()),
                    (f"t{k}",), float(rng.randint(0, 6)), 0 if k in ends else rng.choice([0, 0, rng.randint(10, 40)]))
           for k in range(m)]
    g = Graph(ops, tensors, pinned=frozenset({"x"}), outputs=(f"t{m - 1}",), name=f"spclass{seed}")
    capchoice = rng.choice(["one", "two", "mixed"])
    caps = [1] * m if capchoice == "one" else [2] * m if capchoice == "two" else [rng.choice([0, 1, 2]) for _ in range(m)]
    return g, caps


def random_small_dag(seed: int, n: int | None = None):
    """A random small DAG with multi-output operators, workspace and pinned/unpinned inputs."""
    rng = random.Random(seed)
    n = n or rng.randint(3, 6)
    tensors = [Tensor("w", rng.randint(0, 4)), Tensor("in", rng.randint(1, 10))]
    avail = ["w", "in"]
    ops = []
    for i in range(n):
        k = rng.randint(1, min(3, len(avail)))
        pool = avail if rng.random() < 0.5 else avail[-3:]  # long skips make recomputation pay
        ins = tuple(sorted(set(rng.sample(pool, min(k, len(pool))))))
        outs = [f"o{i}"] + ([f"o{i}b"] if rng.random() < 0.15 else [])
        for o in outs:
            tensors.append(Tensor(o, rng.randint(1, 20)))
        ops.append(Operator(f"op{i}", ins, tuple(outs), float(rng.randint(1, 5)), rng.choice([0, 0, 0, rng.randint(1, 8)])))
        avail += outs
    consumed = {t for o in ops for t in o.inputs}
    outputs = tuple(t for o in ops for t in o.outputs if t not in consumed)[:2]
    caps = rng.choice([0, 1, 2])
    return Graph(ops, tensors, pinned=frozenset({"w"}), outputs=outputs, name=f"small{seed}"), caps


# --------------------------------------------------------------- sanity
def test_brute_chain_without_recompute_needs_two_tensors():
    from memsched.instances.generators import chain

    g = chain(4, size=10)
    assert brute_remat(g, 20, caps=0) == 4.0
    assert brute_remat(g, 19, caps=1) is None


def test_brute_knapsack_small():
    assert brute_knapsack([5, 4, 7], [3, 2, 6], 8) == 6
    assert brute_knapsack([1], [1], 0) == 0


def test_brute_fixed_order_is_never_better_than_free():
    for seed in range(15):
        g, caps = random_small_dag(seed, 4)
        peak = evaluate(g, Schedule.from_order(g, g.given_order())).peak
        for B in (peak, int(peak * 0.8)):
            free = brute_remat(g, B, caps)
            fixed = brute_remat(g, B, caps, fixed_order=True)
            if fixed is not None:
                assert free is not None and free <= fixed + 1e-9
