"""NP-hardness gadgets with known optima (docs/reductions.md has the proofs).

* :func:`knapsack_gadget`: a 0/1 knapsack instance (items with ``size`` s_i and
  ``cost`` w_i, capacity W) becomes a series-parallel graph whose optimal
  selective recomputation equals the knapsack optimum, in both objective forms:

  - ``objective="compute"`` (least compute with peak <= B): knapsack with
    weights s_i, values w_i, capacity W bytes; ``B = H + W``; the optimum compute
    is ``baseline + sum(w) - OPT``.
  - ``objective="peak"`` (least peak with extra compute <= W): knapsack with
    weights w_i, values s_i, capacity W compute units; the optimum peak is
    ``H + sum(s) - OPT``.  The baseline compute is a power of two so that
    ``eps = W / baseline`` is exact in floating point.

  Shape (a Hamiltonian path with nested skip edges, so the order is forced and
  free-order and fixed-order solvers agree): ``src -> b1 -> a1 -> b2 -> a2 ->
  ... -> bn -> an -> P -> Q -> Jn -> ... -> J1`` plus skip edges ``bi -> Ji``.
  ``bi`` produces the item tensor ``ti`` (s_i bytes, cost w_i) from a
  zero-byte token; ``ai`` reads it early, ``Ji`` reads it again after the peak
  at ``P`` (H bytes). Recomputing ``bi`` before ``Ji`` costs w_i and removes
  s_i from the peak.

* :func:`three_partition_gadget`: 3q numbers a_i with sum qT and a recompute
  cap c >= 1 become a treewidth-2 (two-terminal series-parallel) graph with a
  given order; selective recomputation *on that order* (first computations in
  the given order, recomputations inserted anywhere: the class of Checkmate's
  MILP and of memsched.solvers.special.width_dp) fits the budget B iff the numbers split into q
  groups of sum T.  The YES answer comes with a witness schedule.

``cli_gadget(args)`` is ``memsched gadget``.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from memsched.formulations import Graph, MemschedError, Operator, Schedule, Tensor
from memsched.formulations.schedule import COMPUTE, FREE

__all__ = ["GadgetError", "knapsack_gadget", "three_partition_gadget", "knapsack_optimum", "three_partition_solve",
           "random_knapsack", "random_three_partition", "load_items", "knapsack_witness",
           "three_partition_witness"]


class GadgetError(MemschedError):
    """Bad source problem for a gadget (negative size, negative capacity, ...)."""


# ------------------------------------------------------------------ helpers
def _as_int(v, what: str, *, positive: bool = False) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise GadgetError(f"{what} must be an integer, got {v!r}")
    v = int(v)
    if v < 0 or (positive and v == 0):
        raise GadgetError(f"{what} must be {'positive' if positive else 'non-negative'}, got {v}")
    return v


def _check_items(items, capacity) -> tuple[list[tuple[int, int]], int]:
    if not isinstance(items, (list, tuple)) or not items:
        raise GadgetError("knapsack: 'items' must be a non-empty list")
    out = []
    for k, it in enumerate(items):
        if isinstance(it, dict):
            if "size" not in it or "cost" not in it:
                raise GadgetError(f"knapsack item #{k}: needs 'size' and 'cost'")
            s, w = it["size"], it["cost"]
        elif isinstance(it, (list, tuple)) and len(it) == 2:
            s, w = it
        else:
            raise GadgetError(f"knapsack item #{k}: expected {{'size': s, 'cost': w}}, got {it!r}")
        out.append((_as_int(s, f"knapsack item #{k} size"), _as_int(w, f"knapsack item #{k} cost")))
    return out, _as_int(capacity, "knapsack capacity W")


def _pow2_at_least(x: int) -> int:
    p = 1
    while p < x:
        p *= 2
    return p


def knapsack_optimum(weights, values, capacity: int) -> tuple[int, list[int]]:
    """Exact 0/1 knapsack (maximize value, total weight <= capacity): the classic
    capacity-indexed DP in numpy when ``n * capacity`` is moderate (O(n * capacity)),
    else a sparse Pareto DP over (weight, value) pairs (O(n * min(capacity, 2^n))).
    Returns (OPT, chosen item indices)."""
    n = len(weights)
    cap_eff = min(capacity, sum(weights))
    if n * (cap_eff + 1) <= 2 * 10 ** 8 and sum(values) < 2 ** 62:
        import numpy as np

        best = np.zeros(cap_eff + 1, dtype=np.int64)
        take = np.zeros((n, cap_eff + 1), dtype=bool)
        for i, (wt, val) in enumerate(zip(weights, values)):
            if wt > cap_eff:
                continue
            cand = best[:cap_eff + 1 - wt] + val
            better = cand > best[wt:]
            take[i, wt:] = better
            best[wt:] = np.where(better, cand, best[wt:])
        chosen, c = [], cap_eff
        for i in range(n - 1, -1, -1):
            if take[i, c]:
                chosen.append(i)
                c -= weights[i]
        return int(best[cap_eff]), sorted(chosen)
    # frontier: list of (weight, value, chosen-bitset as int), weights ascending, values strictly ascending
    front = [(0, 0, 0)]
    for i, (wt, val) in enumerate(zip(weights, values)):
        cand = [(w + wt, v + val, m | (1 << i)) for (w, v, m) in front if w + wt <= capacity]
        merged = sorted(front + cand, key=lambda x: (x[0], -x[1]))
        front = []
        for w, v, m in merged:
            if not front or v > front[-1][1]:
                front.append((w, v, m))
    w, v, m = front[-1]
    return v, [i for i in range(len(weights)) if m >> i & 1]


# --------------------------------------------------------------- knapsack
def knapsack_gadget(items, capacity, objective: str = "compute", *, name: str | None = None) -> tuple[Graph, dict]:
    """Build the knapsack gadget. Returns ``(graph, answer)``; ``answer`` is the
    sidecar dict (source problem, objective, ``knapsack_optimum``, ``optimum``,
    the budget or compute allowance, and an optimal recompute set)."""
    if objective not in ("compute", "peak"):
        raise GadgetError(f"knapsack: objective must be 'compute' or 'peak', got {objective!r}")
    its, W = _check_items(items, capacity)
    n = len(its)
    S = sum(s for s, _ in its)
    H = max(1, S)
    tensors = [Tensor("x", 0), Tensor("c0", 0)]
    ops = []
    for i, (s, w) in enumerate(its, 1):
        tensors += [Tensor(f"t{i}", s), Tensor(f"c{i}", 0)]
        ops += [Operator(f"b{i}", (f"c{i - 1}",), (f"t{i}",), w), Operator(f"a{i}", (f"t{i}",), (f"c{i}",), 1)]
    tensors += [Tensor("h", H), Tensor("q", 0)]
    ops += [Operator("P", (f"c{n}",), ("h",), 1), Operator("Q", ("h",), ("q",), 1)]
    for i in range(n, 0, -1):
        tensors.append(Tensor(f"j{i}", 0))
        ops.append(Operator(f"J{i}", (f"t{i}", "q" if i == n else f"j{i + 1}"), (f"j{i}",), 1))
    rest = sum(o.cost for o in ops)
    baseline = _pow2_at_least(rest + 1)
    ops.insert(0, Operator("src", ("x",), ("c0",), baseline - rest))
    order = ["src"] + [f"{p}{i}" for i in range(1, n + 1) for p in ("b", "a")] + ["P", "Q"] + [f"J{i}" for i in range(n, 0, -1)]
    meta = {"gadget": "knapsack", "objective": objective}
    g = Graph(ops, tensors, pinned=frozenset({"x"}), outputs=("j1",), order=tuple(order),
              name=name or f"knapsack{n}", meta=meta)
    sizes = [s for s, _ in its]
    costs = [w for _, w in its]
    ans = {"kind": "knapsack", "items": [{"size": s, "cost": w} for s, w in its], "capacity": W,
           "objective": objective, "baseline_compute": baseline, "spine_peak_bytes": H, "cap": 1}
    if objective == "compute":
        opt, keep = knapsack_optimum(sizes, costs, W)
        recompute = [i for i in range(n) if i not in set(keep)]
        ans.update(knapsack="max sum(cost) s.t. sum(size) <= capacity over the KEPT items",
                   knapsack_optimum=opt, budget=H + W, optimum=baseline + sum(costs) - opt)
    else:
        opt, recompute = knapsack_optimum(costs, sizes, W)
        ans.update(knapsack="max sum(size) s.t. sum(cost) <= capacity over the RECOMPUTED items",
                   knapsack_optimum=opt, extra_compute=W, eps=W / baseline, optimum=H + S - opt)
    ans["recompute"] = [f"b{i + 1}" for i in recompute]
    ans["note"] = ("optimum holds for every per-operator cap >= 1 and for free or given order "
                   "(the operator DAG is a Hamiltonian path)")
    g.meta["answer"] = {k: ans[k] for k in ("objective", "optimum", "knapsack_optimum")}
    return g, ans


def knapsack_witness(graph: Graph, recompute: list[str]) -> Schedule:
    """The schedule of the proof: given order, each item tensor in ``recompute``
    freed right after its early use and recomputed just before its late use."""
    drop = {graph.op_index[b] for b in recompute}
    ev = []
    n_items = sum(1 for o in graph.ops if o.name.startswith("b"))
    ti = graph.tensor_index
    for name in graph.order:
        v = graph.op_index[name]
        if name.startswith("J"):
            i = int(name[1:])
            b = graph.op_index[f"b{i}"]
            if b in drop:
                ev.append((COMPUTE, b))
        ev.append((COMPUTE, v))
        if name.startswith("a"):
            i = int(name[1:])
            if graph.op_index[f"b{i}"] in drop:
                ev.append((FREE, ti[f"t{i}"]))
        elif name == "Q":
            ev.append((FREE, ti["h"]))
        elif name.startswith("J"):
            i = int(name[1:])
            ev.append((FREE, ti[f"t{i}"]))
            if i < n_items:
                ev.append((FREE, ti[f"j{i + 1}"]))
            else:
                ev.append((FREE, ti["q"]))
    return Schedule(tuple(ev))


def random_knapsack(n: int, seed: int = 0, *, max_size: int = 50, max_cost: int = 20) -> tuple[list[dict], int]:
    """n random items (sizes in [1, max_size], costs in [1, max_cost]) and a
    capacity of about half the total size."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise GadgetError(f"--random: number of items must be a positive integer, got {n!r}")
    rng = random.Random(seed)
    items = [{"size": rng.randint(1, max_size), "cost": rng.randint(1, max_cost)} for _ in range(n)]
    return items, sum(it["size"] for it in items) // 2


# ------------------------------------------------------------- 3-partition
def three_partition_solve(numbers, q: int | None = None) -> list[list[int]] | None:
    """Split ``numbers`` into q groups of equal sum T = sum/q (3-partition when
    T/4 < a < T/2). Returns the groups as lists of indices, or None. Exact
    backtracking (largest first, symmetric empty groups pruned)."""
    a = list(numbers)
    if q is None:
        q = len(a) // 3
    if q <= 0 or sum(a) % q:
        return None
    T = sum(a) // q
    if any(x > T for x in a):
        return None
    idx = sorted(range(len(a)), key=lambda i: -a[i])
    load = [0] * q
    groups: list[list[int]] = [[] for _ in range(q)]
    seen_fail: set = set()

    def rec(k: int) -> bool:
        if k == len(idx):
            return all(x == T for x in load)
        key = (k, tuple(sorted(load)))
        if key in seen_fail:
            return False
        i = idx[k]
        tried = set()
        for g in range(q):
            if load[g] + a[i] <= T and load[g] not in tried:
                tried.add(load[g])
                load[g] += a[i]
                groups[g].append(i)
                if rec(k + 1):
                    return True
                load[g] -= a[i]
                groups[g].pop()
        seen_fail.add(key)
        return False

    return [sorted(g) for g in groups] if rec(0) else None


def random_three_partition(n: int, seed: int = 0, *, T: int | None = None) -> list[int]:
    """3q = n numbers in (T/4, T/2) with sum qT: planted triples (even seeds, always
    YES) or uniform numbers with the right sum (odd seeds, YES or NO); the answer
    is decided exactly by :func:`three_partition_solve`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 3 or n % 3:
        raise GadgetError(f"--random: 3-partition needs a positive multiple of 3 numbers, got {n!r}")
    rng = random.Random(seed)
    q = n // 3
    T = T or 4 * (10 + rng.randint(0, 40))
    lo, hi = T // 4 + 1, (T - 1) // 2  # strict bounds T/4 < a < T/2
    nums = []
    for _ in range(q):
        while True:
            x, y = rng.randint(lo, hi), rng.randint(lo, hi)
            z = T - x - y
            if lo <= z <= hi:
                nums += [x, y, z]
                break
    if seed % 2:  # unplanted: random numbers in range with the right sum (YES or NO)
        for _ in range(1000):
            nums = [rng.randint(lo, hi) for _ in range(n - 1)]
            last = q * T - sum(nums)
            if lo <= last <= hi:
                nums.append(last)
                break
    rng.shuffle(nums)
    return nums


def three_partition_gadget(numbers, cap: int = 1, objective: str = "compute", *,
                           name: str | None = None) -> tuple[Graph, dict]:
    """Build the 3-partition gadget for recompute cap ``cap`` (every operator may
    run at most 1 + cap times). Returns ``(graph, answer)``; for YES instances
    ``answer["witness"]`` is a schedule (event names) the evaluator accepts with
    peak <= budget and the optimal compute."""
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise GadgetError(f"3partition: --cap must be an integer >= 1, got {cap!r}")
    if objective not in ("compute", "peak"):
        raise GadgetError(f"3partition: objective must be 'compute' or 'peak', got {objective!r}")
    if not isinstance(numbers, (list, tuple)) or not numbers:
        raise GadgetError("3partition: 'numbers' must be a non-empty list")
    a = [_as_int(x, f"3partition number #{k}", positive=True) for k, x in enumerate(numbers)]
    n = len(a)
    if n % 3:
        raise GadgetError(f"3partition: the count of numbers must be a multiple of 3, got {n}")
    q = n // 3
    if sum(a) % q:
        raise GadgetError(f"3partition: the sum {sum(a)} is not divisible by q = {q} (no target T)")
    T = sum(a) // q
    K = cap - 1 + q  # cap-1 burn windows, then q main windows
    Hm = T + 2 * max(a)
    B = Hm + (q - 1) * T
    tensors = [Tensor("x", 0), Tensor("z", 0)]
    ops: list[Operator] = []
    order = []
    for i in range(n):
        for k in range(K + 1):
            tensors.append(Tensor(f"t{i}_{k}", a[i]))
    for k in range(1, K + 1):
        tensors += [Tensor(f"h{k}", B if k <= cap - 1 else Hm), Tensor(f"y{k}", 0)]
    tensors.append(Tensor("out", 0))

    def d(i, k):
        return Operator(f"d{i}_{k}", ("z",) if k == 0 else (f"t{i}_{k - 1}",), (f"t{i}_{k}",), 1 if k == 0 else 0)

    stage = [[d(i, k) for i in range(n)] for k in range(K + 1)]
    ops += stage[0]
    order += [o.name for o in stage[0]]
    for k in range(1, K + 1):
        p = Operator(f"P{k}", ("z",) if k == 1 else (f"y{k - 1}",), (f"h{k}",), 1)
        qq = Operator(f"Q{k}", (f"h{k}",), (f"y{k}",), 1)
        ops += [p, qq] + stage[k]
        order += [p.name, qq.name] + [o.name for o in stage[k]]
    J = Operator("J", (f"y{K}",) + tuple(f"t{i}_{K}" for i in range(n)), ("out",), 1)
    ops.append(J)
    order.append("J")
    rest = sum(o.cost for o in ops)
    baseline = _pow2_at_least(rest + 1)
    ops.insert(0, Operator("src", ("x",), ("z",), baseline - rest))
    order.insert(0, "src")
    g = Graph(ops, tensors, pinned=frozenset({"x"}), outputs=("out",), order=tuple(order),
              name=name or f"3partition{n}_c{cap}", meta={"gadget": "3partition", "cap": cap, "objective": objective})
    groups = three_partition_solve(a, q)
    extra = n * cap
    ans = {"kind": "3partition", "numbers": a, "q": q, "target": T, "cap": cap, "objective": objective,
           "answer": "YES" if groups else "NO", "groups": groups, "baseline_compute": baseline,
           "semantics": "given order: first computations follow graph.order, recomputations may be inserted anywhere "
                        "(Checkmate's stage class; memsched.solvers.special.width_dp, --method milp); with a free order the instance "
                        "is trivial (compute each item chain late)"}
    if objective == "compute":
        ans.update(budget=B, optimum=(baseline + extra) if groups else None,
                   optimum_note="infeasible within the budget when the answer is NO")
    else:
        ans.update(extra_compute=extra, eps=extra / baseline, optimum=B if groups else None, optimum_lower_bound=B if groups else B + 1,
                   optimum_note="least peak within the compute allowance; > budget B when the answer is NO", budget=B)
    if groups:
        ans["witness"] = three_partition_witness(g, a, groups, cap).to_names(g)
    g.meta["answer"] = {k: ans[k] for k in ("objective", "optimum", "answer")}
    return g, ans


def three_partition_witness(graph: Graph, a, groups, cap: int) -> Schedule:
    """The YES-direction schedule of the proof: every item absent in each burn
    window and in the main window of its group; rebuilt by a cascade from ``z``."""
    n = len(a)
    q = len(groups)
    K = cap - 1 + q
    win = {}
    for gi, grp in enumerate(groups):
        for i in grp:
            win[i] = cap - 1 + gi + 1
    oi, ti = graph.op_index, graph.tensor_index
    ev = [(COMPUTE, oi["src"])] + [(COMPUTE, oi[f"d{i}_0"]) for i in range(n)]
    for k in range(1, K + 1):
        absent = [i for i in range(n) if k <= cap - 1 or win[i] == k]
        for i in absent:
            ev.append((FREE, ti[f"t{i}_{k - 1}"]))
        ev += [(COMPUTE, oi[f"P{k}"])]
        if k > 1:
            ev.append((FREE, ti[f"y{k - 1}"]))
        ev += [(COMPUTE, oi[f"Q{k}"]), (FREE, ti[f"h{k}"])]
        for i in range(n):
            if i in absent:
                for m in range(k):
                    ev.append((COMPUTE, oi[f"d{i}_{m}"]))
                    if m >= 1:
                        ev.append((FREE, ti[f"t{i}_{m - 1}"]))
            ev += [(COMPUTE, oi[f"d{i}_{k}"]), (FREE, ti[f"t{i}_{k - 1}"])]
    ev.append((COMPUTE, oi["J"]))
    ev += [(FREE, ti[f"t{i}_{K}"]) for i in range(n)] + [(FREE, ti[f"y{K}"])]
    return Schedule(tuple(ev))


# -------------------------------------------------------------------- CLI
def _read(path: str):
    p = Path(path)
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise GadgetError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise GadgetError(f"{p}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise GadgetError(f"{p}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def load_items(path: str, kind: str):
    """Read a source problem: knapsack ``{"items": [{"size", "cost"}], "capacity": W}``
    or 3-partition ``{"numbers": [...]}`` (a bare list also works)."""
    d = _read(path)
    try:
        if kind == "knapsack":
            if not isinstance(d, dict) or "items" not in d or "capacity" not in d:
                raise GadgetError("expected an object with 'items' and 'capacity'")
            return _check_items(d["items"], d["capacity"])
        nums = d.get("numbers") if isinstance(d, dict) else d
        if not isinstance(nums, list):
            raise GadgetError("expected {'numbers': [...]} or a list of numbers")
        for k, x in enumerate(nums):
            _as_int(x, f"3partition number #{k}", positive=True)
        return nums
    except GadgetError as e:
        raise GadgetError(f"{path}: {e}") from None


