"""Remat at scale: two-phase checkpoint selection, with lower bounds that scale.

Problem (docs/remat.md): least compute with peak <= B, any order, any recomputation
(the asked problem of ``solve_remat`` with ``order="free"`` and no cap). The exact CP
model does not reach the budgets below the best plain order on 350-800-operator training
graphs within minutes (benchmark section 27), so this module gives

* a **heuristic** that scales (:func:`checkpoint_search`), O(steps x candidates x (n + E)):
  a plain order ``pi`` is split at a boundary ``k`` (by default the position with the most
  bytes live across it: the forward / backward boundary of a training graph). Phase 1 runs
  ``pi[:k]`` as is; a *checkpoint set* K of phase-1 tensors stays resident for phase 2;
  every other phase-1 tensor that phase 2 reads is recomputed just before its first phase-2
  reader, recursively from K and the graph inputs (Chen et al.'s checkpointing,
  "Training Deep Nets with Sublinear Memory Cost", 2016, on an arbitrary DAG and an
  arbitrary boundary), and a recomputed copy is dropped again and recomputed once more when
  its next reader is more than ``gap`` positions away. Starting from K = every tensor that
  crosses the boundary (the plain order), a greedy removes from K the tensor that is resident
  at the current peak with the most bytes per unit of recompute cost, judged by the
  evaluator, until the peak fits B; then every removal that is no longer needed is undone
  (costliest first). The schedule is judged by the one evaluator; it proves nothing.
  Beside it, the on-demand eviction greedy (solvers/remat/dtr_greedy.py; DTR's and Belady's
  scores, each also with the cost of the whole recomputation chain) on the first three
  orders, within a sixth of the time: much dearer where the two-phase plans fit, but it
  recomputes as deep as it must, so it reaches budgets a single boundary cannot (ResNet-50
  and BERT-base training graphs a fifth of the way above the final-state floor, benchmark
  section 27). The cheapest three schedules found then drop every recomputation they can do
  without, dearest first, pass after pass until a pass removes nothing
  (``local_search.drop_recomputations``, the last quarter of the time); the time left after
  that, ruin and recreate from the cheapest (solvers/remat/sequence_lns.py: the
  recomputations of one part removed, the eviction executor rebuilding the rest, the dropping
  pass again; kept when no dearer).
* **lower bounds valid for the asked problem** (docs/remat-scale.md has the proofs):
  :func:`final_state_floor` (every schedule ends with the pinned inputs and every required
  output resident, so no budget below that is feasible), the moment-cut covering bound
  (solvers/remat/cut_bound.py, free order; docs/remat.md) and :func:`threshold_order_bound`
  (if no schedule fits B when only operators of cost < t may run more than once, every
  schedule within B runs an operator of cost >= t twice; that restricted problem is refuted
  by the plain-order lower bound of the graph in which the outputs of the operators of cost
  < t weigh nothing). Both hold for unbounded recomputation, hence for every cap.

:func:`solve_scale` runs both and returns one :class:`~memsched.solvers.result.SolveResult`
with ``scope="heuristic"``: ``status`` is ``optimal`` only when a bound meets the schedule's
compute, ``infeasible`` only with a proof, else ``feasible`` / ``unknown``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Operator, Tensor, evaluate
from memsched.formulations.schedule import COMPUTE
from memsched.solvers.remat.infeasibility import final_state_floor
from memsched.solvers.remat.local_search import schedule_from_sequence
from memsched.solvers.result import SolveResult, SolverDisagreement, Status, make_result, same_value

__all__ = ["final_state_floor", "relaxed_graph", "threshold_order_bound", "crossing_boundary", "two_phase_sequence",
           "checkpoint_search", "solve_scale", "ScaleBound"]

SOLVER = "remat-scale"


# ------------------------------------------------------------------ bounds
def relaxed_graph(g: Graph, allowed) -> Graph:
    """``g`` with the outputs and workspace of the operators in ``allowed`` weighing 0 bytes.
    Every schedule of ``g`` in which only operators of ``allowed`` run more than once has a
    peak >= the best plain order of this graph (docs/remat-scale.md, "Threshold order bound")."""
    allowed = set(allowed)
    zero = {j for v in allowed for j in g.op_out[v]}
    tensors = [Tensor(t.name, 0 if j in zero else t.size) for j, t in enumerate(g.tensors)]
    ops = [Operator(o.name, o.inputs, o.outputs, o.cost, 0 if v in allowed else o.workspace)
           for v, o in enumerate(g.ops)]
    return Graph(ops, tensors, pinned=g.pinned, outputs=g.outputs, order=g.order, name=f"{g.name}/relaxed")


def _useful(g: Graph, v: int) -> bool:
    return any(g.consumers[j] or j in g.output_idx for j in g.op_out[v])


@dataclass
class ScaleBound:
    """``extra``: proven least extra compute of any schedule within B (asked problem, any
    cap); ``checks``: (threshold, plain-order lower bound of the relaxed graph, seconds)."""
    baseline: float
    extra: float = 0.0
    checks: list = field(default_factory=list)
    complete: bool = False

    @property
    def lower_bound(self) -> float:
        return self.baseline + self.extra


def threshold_order_bound(g: Graph, B: int, time_limit: float = 30.0, order_bound=None) -> ScaleBound:
    """The threshold order bound (module docstring) for budget ``B``: binary search over
    the distinct positive costs ``c_1 < ... < c_m`` of the operators that can usefully run
    twice, for the largest ``c_i`` such that the plain-order lower bound of
    ``relaxed_graph(g, {useful v: cost(v) < c_i})`` exceeds B; then every schedule within
    B has compute >= baseline + c_i. ``order_bound(graph)``: the plain-order lower bound to
    use (default: ``memsched.solvers.ordering.bounds.bound_report``'s). A check that does
    not fit the remaining time is not started (the bound found so far stays valid)."""
    if order_bound is None:
        from memsched.solvers.ordering.bounds import bound_report

        def order_bound(h):
            return int(bound_report(h, pair_budget=0.0)["lower_bound"])

    out = ScaleBound(baseline=g.total_cost())
    useful = [v for v in range(g.n_ops) if _useful(g, v)]
    costs = sorted({float(g.cost[v]) for v in useful if g.cost[v] > 0})
    if not costs:
        out.complete = True
        return out
    t0 = time.perf_counter()
    lo, hi = -1, len(costs) - 1  # invariant: costs[lo] proven (lo = -1: none); costs above hi refuted or untried
    while lo < hi:
        if time.perf_counter() - t0 > time_limit:
            return out
        mid = (lo + hi + 1) // 2
        t = costs[mid]
        ts = time.perf_counter()
        lb = order_bound(relaxed_graph(g, [v for v in useful if g.cost[v] < t]))
        out.checks.append((t, lb, round(time.perf_counter() - ts, 3)))
        if lb > B:
            lo = mid
            out.extra = t
        else:
            hi = mid - 1
    out.complete = True
    return out


# ---------------------------------------------------------- the heuristic
def crossing_boundary(g: Graph, order: list[int], top: int = 1):
    """The split position k (1 <= k < n) of ``order`` with the most bytes of tensors
    produced before k and read at or after k; with ``top`` > 1, the list of the ``top``
    best local maxima of that profile, best first. O(n + E + n log n)."""
    n = len(order)
    pos = {v: i for i, v in enumerate(order)}
    diff = [0] * (n + 1)
    for j in range(g.n_tensors):
        p = g.producer[j]
        if p == -1 or not g.consumers[j]:
            continue
        last = max(pos[c] for c in g.consumers[j])
        if last > pos[p]:  # live across every split in (pos[p], last]
            diff[pos[p] + 1] += g.size[j]
            diff[last + 1] -= g.size[j]
    best, bk, acc = -1, max(1, n // 2), 0
    prof = [0] * (n + 1)
    for k in range(1, n):
        acc += diff[k]
        prof[k] = acc
        if acc > best:
            best, bk = acc, k
    if top <= 1:
        return bk
    peaks = [k for k in range(1, n) if prof[k] >= prof[k - 1] and (k + 1 >= n or prof[k] > prof[k + 1])]
    peaks.sort(key=lambda k: (-prof[k], k))
    out = [bk] + [k for k in peaks if k != bk]
    return out[:top]


def two_phase_sequence(g: Graph, order: list[int], k: int, keep: set[int], gap: int | None = None) -> list[int]:
    """The compute sequence of the two-phase plan (module docstring): ``order[:k]``, then
    ``order[k:]`` with every phase-1 tensor outside ``keep`` that is read recomputed right
    before its reader (recursively). With ``gap``, a copy of a tensor outside ``keep`` (a
    recomputed one, or one made in phase 2) whose next reader is more than ``gap`` positions
    after its last use is recomputed again before that reader (None: never). Required outputs
    are never dropped. O(n + E + recomputations)."""
    n = len(order)
    seq = list(order[:k])
    first = set(order[:k])
    outs = g.output_idx
    stale = {j for v in first for j in g.op_out[v] if j not in keep}
    made_at: dict[int, int] = {}  # droppable copy -> position of its last use so far

    def check(j: int, q: int) -> None:
        if gap is not None and j in made_at and j not in stale and q - made_at[j] > gap:
            stale.add(j)  # its copy was freed after its last reader; recompute it here

    def ensure(j: int, q: int) -> None:
        check(j, q)
        if j not in stale:
            return
        p = g.producer[j]
        for i in g.op_in[p]:
            ensure(i, q)
        seq.append(p)
        for o in g.op_out[p]:
            stale.discard(o)
            if o not in outs:
                made_at[o] = q

    for q in range(k, n):
        v = order[q]
        ins = g.op_in[v]
        for j in ins:
            ensure(j, q)
        for j in ins:
            if j in made_at:
                made_at[j] = q
        seq.append(v)
        for o in g.op_out[v]:
            stale.discard(o)
            if gap is not None and o not in keep and o not in outs:
                made_at[o] = q
            else:
                made_at.pop(o, None)
    return seq


def _chain_cost(g: Graph, j: int, keep: set[int], first: set[int], memo: dict) -> float:
    """Cost of recomputing tensor j from ``keep`` and the graph inputs (shared ancestors
    counted once per path: an estimate for ranking only)."""
    p = g.producer[j]
    if p == -1 or p not in first or j in keep:
        return 0.0
    if j in memo:
        return memo[j]
    memo[j] = float(g.cost[p])  # cycle guard (cannot happen in a DAG)
    c = float(g.cost[p]) + sum(_chain_cost(g, i, keep, first, memo) for i in g.op_in[p] if i not in keep)
    memo[j] = c
    return c


def _judge(g: Graph, seq: list[int]):
    s = schedule_from_sequence(g, seq)
    ev = evaluate(g, s)
    return s, ev


def _overflow(ev, B: int) -> int:
    """Bytes above B summed over the events (0 when the schedule fits)."""
    return sum(m - B for m in ev.timeline if m > B)


def _score(ev) -> tuple:
    tl = ev.timeline
    pk = ev.peak
    return (pk, sum(1 for m in tl if m >= pk), ev.compute)


def checkpoint_search(g: Graph, B: int, order: list[int], k: int | None = None, *, gap: int | None = None,
                      time_limit: float = 30.0, tries: int = 6, deadline: float | None = None,
                      mode: str = "peak"):
    """The two-phase greedy (module docstring) from plain order ``order`` split at ``k``
    (default :func:`crossing_boundary`). Returns ``(schedule, info)``: the schedule of least
    peak seen, within B when ``info["fits"]``. Each step evaluates at most ``tries``
    candidates. ``mode``: "peak" takes the first candidate that lowers (peak, events at the
    peak, compute); "ratio" the one that removes the most bytes above B (summed over the
    events) per unit of added compute. O(steps x tries x (n + E))."""
    if mode not in ("peak", "ratio"):
        raise ValueError(f"mode must be 'peak' or 'ratio', got {mode!r}")
    t0 = time.perf_counter()
    end = min(deadline or float("inf"), t0 + time_limit)
    k = crossing_boundary(g, order) if k is None else k
    first = set(order[:k])
    pos = {v: i for i, v in enumerate(order)}
    # phase-1 tensors read in phase 2, produced by an operator that can run again
    keep = {j for v in order[:k] for j in g.op_out[v] if any(pos[c] >= k for c in g.consumers[j])}
    if gap is not None:  # phase-2 tensors may be dropped between uses too
        keep |= {j for v in order[k:] for j in g.op_out[v]}
    cands = {j for j in keep if j not in g.output_idx}
    seq = two_phase_sequence(g, order, k, keep, gap)
    s, ev = _judge(g, seq)
    best = (_score(ev), s, ev)
    cur = best
    cur_ov = _overflow(ev, B)
    rejected: set[int] = set()
    steps = evals = 0
    while cur[0][0] > B and time.perf_counter() < end:
        s, ev = cur[1], cur[2]
        # tensors resident at the peak event: walk the schedule once
        pe = max(range(len(ev.timeline)), key=ev.timeline.__getitem__)
        resident = set(g.input_idx)
        for kind, x in s.events[:pe + 1]:
            if kind == COMPUTE:
                resident.update(g.op_out[x])
            else:
                resident.discard(x)
        kind, x = s.events[pe]
        busy = set(g.op_in[x]) | set(g.op_out[x]) if kind == COMPUTE else set()
        memo: dict = {}
        ranked = sorted((j for j in cands & keep if j not in rejected and (j in resident and j not in busy)),
                        key=lambda j: -g.size[j] / (1.0 + _chain_cost(g, j, keep - {j}, first, memo)))
        if not ranked:  # nothing at the peak itself: any kept tensor, largest first
            ranked = sorted((j for j in cands & keep if j not in rejected), key=lambda j: -g.size[j])
        moved = False
        pick = None  # (ratio, keep, state): the most overflow removed per unit of added compute
        for j in ranked[:tries]:
            if time.perf_counter() >= end:
                break
            trial = keep - {j}
            s2, ev2 = _judge(g, two_phase_sequence(g, order, k, trial, gap))
            evals += 1
            sc = _score(ev2)
            ov = _overflow(ev2, B)
            if mode == "peak" and sc < cur[0]:
                pick = (0.0, trial, (sc, s2, ev2), ov)
                break
            if mode == "ratio" and (sc < cur[0] or ov < cur_ov):
                gain = max(cur_ov - ov, 0) + max(cur[0][0] - sc[0], 0)
                ratio = gain / (1.0 + max(ev2.compute - cur[2].compute, 0.0))
                if pick is None or ratio > pick[0]:
                    pick = (ratio, trial, (sc, s2, ev2), ov)
            else:
                rejected.add(j)
        if pick is not None:
            _r, keep, cur, cur_ov = pick
            moved = True
        if not moved:
            if not ranked:
                break
            continue
        steps += 1
        rejected.clear()
        if cur[0] < best[0]:
            best = cur
    fits = cur[0][0] <= B
    pruned = 0
    if fits:  # undo removals that are no longer needed, costliest recomputation first
        dropped = sorted(cands - keep, key=lambda j: -float(g.cost[g.producer[j]]))
        for j in dropped:
            if time.perf_counter() >= end:
                break
            trial = keep | {j}
            s2, ev2 = _judge(g, two_phase_sequence(g, order, k, trial, gap))
            evals += 1
            if ev2.peak <= B and ev2.compute <= cur[2].compute:
                keep, cur = trial, (_score(ev2), s2, ev2)
                pruned += 1
        best = cur
    elif cur[0] < best[0]:
        best = cur
    info = {"k": k, "gap": gap, "mode": mode, "fits": best[0][0] <= B, "steps": steps, "evaluations": evals, "pruned": pruned,
            "kept": len(keep), "candidates": len(cands), "wall_s": round(time.perf_counter() - t0, 3)}
    return best[1], info


# ------------------------------------------------------------------ driver
# the on-demand eviction greedy runs on the first orders (the given one first), and on the bound's
# witness order when there is one
GREEDY_ORDERS = 3
GREEDY_SCORES = ("dtr", "chain", "belady", "chain-stale")  # executor.py; best first on section 27's rows
GREEDY_SHARE = 1 / 6  # of the search time
DROP_CANDIDATES = 3  # the dropping passes run on the cheapest schedules found, each a share of their time
DROP_SHARE = 1 / 4  # of the time left after the bounds: the dropping passes (until a pass removes nothing)


def _boundaries(g: Graph, order: list[int], top: int) -> list[int]:
    if len(order) <= 1:
        return [len(order)]
    ks = crossing_boundary(g, order, top=top)
    return [ks] if isinstance(ks, int) else ks


def solve_scale(g: Graph, budget: int, *, time_limit: float = 60.0, bound_time: float | None = None,
                orders=None, gaps=None, modes=("peak", "ratio"), boundaries: int = 1,
                progress=None) -> SolveResult:
    """Least compute within ``budget`` (bytes), any order, any recomputation: the two-phase
    checkpoint search on each plain order of ``orders`` (default: the ordering heuristics'
    orders, best first) and each ``gap``, keeping the cheapest schedule within the budget;
    plus the final-state floor and the threshold order bound (``bound_time`` seconds, default
    a third of ``time_limit``). ``gaps`` default: no re-dropping, and re-dropping after
    max(8, n / 32) positions; ``boundaries``: split positions tried per order (the best ones
    of :func:`crossing_boundary`). Each search gets an equal share of the time left, at least 10 s. See the
    module docstring for what is claimed."""
    from memsched.solvers.ordering.heuristics import applicable, run_heuristics
    from memsched.solvers.remat.infeasibility import local_infeasibility

    t0 = time.perf_counter()
    B = int(budget)
    base = g.total_cost()
    params = {"budget": B, "time_limit": time_limit, "method": "scale", "order": "free", "cap": None}
    floor = final_state_floor(g)
    why = local_infeasibility(g, B)  # the final-state floor among its facts
    if why is not None:
        return make_result(g, None, solver=SOLVER, status=Status.INFEASIBLE, objective="compute", params=params,
                           message=why, wall_s=time.perf_counter() - t0, scope="free",
                           extra={"final_state_floor": floor})
    bt = time_limit / 3 if bound_time is None else bound_time
    from memsched.solvers.remat.cut_bound import cached_cut_cover_bound

    # the moment-cut covering bound (free order, any recomputation: docs/remat.md); half the bound time
    tc = time.perf_counter()
    cut = cached_cut_cover_bound(g, B, None, "free", time_limit=bt / 2)
    cut_info = {"extra": cut.extra, "complete": cut.complete, "s": round(time.perf_counter() - tc, 3), **cut.stats}
    if cut.infeasible:
        return make_result(g, None, solver=SOLVER, status=Status.INFEASIBLE, objective="compute", params=params,
                           message=cut.reason, wall_s=time.perf_counter() - t0, scope="free",
                           extra={"final_state_floor": floor, "cut_cover_bound": cut_info})
    bound = threshold_order_bound(g, B, time_limit=max(0.0, bt - (time.perf_counter() - tc)))
    if progress is not None:
        progress(f"lower bounds: moment-cut covering (down-set stage included) extra {cut.extra:.6g}, "
                 f"threshold order bound extra {bound.lower_bound - base:.6g}")
    if orders is None:
        # the given order first (a traced training step runs its forward, then its backward: the
        # two-phase plan's shape), then the heuristics' orders by peak
        cand = sorted(run_heuristics(g, sorted(applicable(g))), key=lambda r: (r[0] != "given", r[2], r[0]))
        orders, seen = [], set()
        for name, o, _pk in cand:
            if tuple(o) not in seen:
                seen.add(tuple(o))
                orders.append((name, list(o)))
    else:
        orders = [(f"order{i}", list(o)) for i, o in enumerate(orders)]
    if gaps is None:
        gaps = (None, max(8, g.n_ops // 32))
    best = None  # (compute, schedule, how)
    found: list[float] = []  # seconds at which the best schedule so far improved (anytime figures)
    tried = []
    # the last quarter of the time: the cheapest schedules drop the recomputations they can do
    # without; whatever time is left after that: ruin and recreate from the cheapest
    end = t0 + time_limit - (time_limit - (time.perf_counter() - t0)) * DROP_SHARE
    # the on-demand eviction greedy (solvers/remat/dtr_greedy.py) on the first orders: far
    # dearer than two-phase checkpointing where that fits, but it recomputes as deep as it
    # must, so it reaches budgets the two-phase plans cannot; GREEDY_SHARE of the search time
    from memsched.solvers.remat.dtr_greedy import greedy_schedule
    from memsched.solvers.remat.local_search import drop_recomputations

    greedy_orders = list(orders[:GREEDY_ORDERS])
    if cut.before is not None:
        # the bound's minimizer at its binding moment (docs/remat.md, "One moment by minimum cuts"):
        # the operators it runs before that moment first (a down-set), then the rest, each part in
        # the given order; a guess, for the greedy only, right after the first order
        inside = set(cut.before)
        wo = [v for v in g.given_order() if v in inside] + [v for v in g.given_order() if v not in inside]
        if all(tuple(wo) != tuple(o) for _n, o in greedy_orders):
            greedy_orders.insert(min(1, len(greedy_orders)), ("bound-witness", wo))
    greedy_runs = [(name, o, score) for name, o in greedy_orders for score in GREEDY_SCORES]
    g_end = time.perf_counter() + (end - time.perf_counter()) * GREEDY_SHARE
    candidates = []  # (compute, schedule, how): every schedule within B, for the dropping pass
    for i, (name, o, score) in enumerate(greedy_runs):
        now = time.perf_counter()
        if now >= g_end:
            break
        s = greedy_schedule(g, B, None, o, score=score, deadline=now + (g_end - now) / (len(greedy_runs) - i))
        if s is None:
            continue
        ev = evaluate(g, s)
        tried.append({"order": name, "greedy": score, "peak": ev.peak, "compute": ev.compute})
        if progress is not None:
            progress(f"{name} order, eviction greedy ({score} score): peak {ev.peak}, extra {ev.compute - base:.6g}")
        candidates.append((ev.compute, s, f"on-demand eviction greedy ({score} score) on the {name} order"))
        if best is None or ev.compute < best[0]:
            best = candidates[-1]
            found.append(time.perf_counter() - t0)
    runs = [(name, o, k, gp, md) for name, o in orders
            for k in (_boundaries(g, o, boundaries)) for gp in gaps for md in modes]
    for i, (name, o, k, gap, mode) in enumerate(runs):
        if time.perf_counter() >= end:
            break
        left = end - time.perf_counter()
        share = max(left / (len(runs) - i), min(10.0, left))  # a fair share of the time left, >= 10 s
        s, info = checkpoint_search(g, B, o, k, gap=gap, mode=mode, time_limit=share)
        ev = evaluate(g, s)
        tried.append({"order": name, **info, "peak": ev.peak, "compute": ev.compute})
        if progress is not None:
            progress(f"{name} order, two-phase split at {k}, gap {gap}, {mode} greedy: peak {ev.peak}"
                     + (" (within the budget)" if ev.peak <= B else f" (over the budget {B})")
                     + f", extra {ev.compute - base:.6g}")
        if ev.peak <= B:
            if ev.recomputations == 0:  # every operator once: nothing can be cheaper
                best = (ev.compute, s, f"the {name} order fits the budget without recomputation")
                found.append(time.perf_counter() - t0)
                candidates = []
                break
            candidates.append((ev.compute, s, f"two-phase checkpointing from the {name} order split at {k} "
                               f"({mode} greedy" + (f", gap {gap})" if gap is not None else ")")))
            if best is None or ev.compute < best[0]:
                best = candidates[-1]
                found.append(time.perf_counter() - t0)
            found.append(time.perf_counter() - t0)
    # the dropping pass, on the cheapest few schedules (the cheapest before it is not always the
    # cheapest after it); the searches may overrun their end a little
    d_end = max(t0 + time_limit, time.perf_counter() + min(2.0, time_limit / 10))
    todo = sorted((c for c in candidates if len(c[1].computes()) > g.n_ops), key=lambda c: c[0])[:DROP_CANDIDATES]
    for i, (compute, s0, how) in enumerate(todo):
        now = time.perf_counter()
        if now >= d_end:
            break
        seq = drop_recomputations(g, s0.computes(), B, deadline=now + (d_end - now) / (len(todo) - i))
        s = schedule_from_sequence(g, seq)
        ev = evaluate(g, s)
        if ev.peak <= B and ev.compute < compute:
            tried.append({"order": f"{how}, recomputations dropped", "peak": ev.peak, "compute": ev.compute})
            if progress is not None:
                progress(f"{how}, recomputations dropped: extra {compute - base:.6g} -> {ev.compute - base:.6g}")
            if ev.compute < best[0]:
                best = (ev.compute, s, how + "; unneeded recomputations dropped")
                found.append(time.perf_counter() - t0)
    lns = None
    if best is not None and time.perf_counter() < t0 + time_limit and len(best[1].computes()) > g.n_ops:
        # ruin and recreate (solvers/remat/sequence_lns.py) from the cheapest, until the time limit
        from memsched.solvers.remat.sequence_lns import ruin_and_recreate

        seq0 = best[1].computes()
        ev0 = evaluate(g, schedule_from_sequence(g, seq0))
        if ev0.peak <= B:
            seq, lns = ruin_and_recreate(g, B, seq0, deadline=t0 + time_limit, progress=progress)
            s = schedule_from_sequence(g, seq)
            ev = evaluate(g, s)
            if ev.peak <= B and ev.compute < best[0]:
                tried.append({"order": "ruin and recreate", "peak": ev.peak, "compute": ev.compute})
                best = (ev.compute, s, best[2] + f"; ruin and recreate ({lns['steps']} steps)")
                found.append((lns["best_at"] or time.perf_counter()) - t0)
            lns = {k: v for k, v in lns.items() if k != "best_at"}
    lb = max(bound.lower_bound, cut.lower_bound)
    extra = {"final_state_floor": floor, "ruin_and_recreate": lns, "bound_checks": bound.checks, "bound_complete": bound.complete,
             "time_to_first_s": found[0] if found else None, "time_to_best_s": found[-1] if found else None,
             "cut_cover_bound": cut_info, "searches": tried}
    if best is None:
        return make_result(g, None, solver=SOLVER, status=Status.UNKNOWN, objective="compute", params=params,
                           lower_bound=lb, message=f"no schedule within budget {B} found", extra=extra,
                           wall_s=time.perf_counter() - t0, scope="heuristic")
    compute, s, how = best
    if lb > compute * (1 + 1e-12):
        raise SolverDisagreement(f"{SOLVER}: lower bound {lb} above the compute {compute} of a schedule within {B}")
    status = Status.OPTIMAL if same_value(lb, compute, "compute") and lb >= compute else Status.FEASIBLE
    return make_result(g, s, solver=SOLVER, status=status, objective="compute", claimed=compute, params=params,
                       lower_bound=lb, message=how, extra=extra, wall_s=time.perf_counter() - t0, scope="heuristic")
