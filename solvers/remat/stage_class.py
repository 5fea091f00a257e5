"""Checkmate's stage class as a first phase of the given-order driver (issue 14).

The *stage class* (Checkmate; Moccasin's ``use_stage``): first computations in the given
order ``pi``; between the first computations of ``pi[i-1]`` and ``pi[i]`` (stage i) the
recomputed operators run in increasing order position, each at most once; nothing runs
after the last first computation. Every stage-class schedule is a schedule of the
given-order class, so a stage-class schedule within the budget is a *schedule* for
``--order given``; but the stage class is narrower, so its optimum and its infeasibility
prove nothing about the given-order class (tests/test_remat_given_stage.py checks, against
the brute-force referee, that the stage optimum is never below the given optimum and that
the driver never reports a stage result as a given-order claim).

Two pieces, used by ``solvers/remat/cp.py`` (``_stage_phase``) when no warm start fits the
budget:

* :func:`stage_sequence`: any schedule whose first computations follow ``pi`` turned into a
  stage-class compute sequence (recomputations of each stage sorted by position, repeats
  within a stage and recomputations after the last first computation dropped); used to hint
  the stage model with the least-peak schedule the warm starts saw;
* :func:`run_stage_phase`: the stage model (``build_remat_cp(..., stage_class=True)``:
  time is the grid of stage events, start domains from the order) solved first for the
  least peak with the capacity clipped at B (the search that finds a first schedule within
  B), then, with a schedule within B, for least compute (a cheaper hint for the given-order
  slot model). Its statuses are recorded as stage-class statuses and never reported as
  given-order claims.

Reference: Jain et al., "Checkmate", MLSys 2020 (the stage class); Bartan et al.,
"Moccasin", ICML 2023 (stage events as interval start domains).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.problems import first_computations_follow
from memsched.formulations.schedule import COMPUTE as COMPUTE_EV, FREE as FREE_EV

__all__ = ["stage_sequence", "in_stage_class", "StagePhase", "run_stage_phase", "STAGE_PEAK_SHARE", "STAGE_COMPUTE_SHARE",
           "stage_greedy"]

# Share of the stage phase's time for the least-peak search (finding a first schedule within
# B); the compute search gets the rest of the phase once a schedule within B is known.
STAGE_PEAK_SHARE = 0.8
# Share of what is left of the phase, once a schedule within B is known, for the compute search
# (the rest goes back to the driver: relaxation, bounds, the given-order slot model).
STAGE_COMPUTE_SHARE = 0.6
# ext_weight values of the stage greedy tried (each run takes well under a second on n250)
GREEDY_EXT_WEIGHTS = (0.0, 0.5, 1.0)


def _positions(order) -> list[int]:
    pos = [0] * len(order)
    for i, v in enumerate(order):
        pos[v] = i
    return pos


def in_stage_class(graph: Graph, schedule: Schedule, order=None) -> bool:
    """True if ``schedule`` is in the stage class of ``order`` (default: the given order)."""
    order = graph.given_order() if order is None else list(order)
    pos = _positions(order)
    seen = [False] * graph.n_ops
    nfirst, last = 0, -1
    for v in schedule.computes():
        if not seen[v]:
            if pos[v] != nfirst:
                return False
            seen[v] = True
            nfirst += 1
            last = -1
        else:
            if nfirst >= len(order) or pos[v] <= last:
                return False
            last = pos[v]
    return nfirst == len(order)


def stage_sequence(graph: Graph, schedule: Schedule, order=None) -> Schedule | None:
    """A stage-class schedule made from ``schedule`` (first computations in ``order``), or
    None when its first computations do not follow ``order``.

    The recomputations between two first computations are sorted by order position, a
    repeat of an operator within one stage is dropped, and so are recomputations after the
    last first computation; each computation reads the latest earlier copy of its inputs
    and every copy is freed after its last reader (``local_search.schedule_from_sequence``).
    Producers come before their readers in position order, so every read finds a copy made
    earlier; the result may need more memory than ``schedule`` (it is a hint, judged by the
    evaluator like any schedule) and may lack a required output's final copy when that was
    recomputed at the end (then None). O(events log events)."""
    from memsched.formulations.evaluator import ScheduleError
    from memsched.solvers.remat.local_search import schedule_from_sequence

    order = graph.given_order() if order is None else list(order)
    if not first_computations_follow(graph, schedule, order):
        return None
    pos = _positions(order)
    seen = [False] * graph.n_ops
    seq: list[int] = []
    pending: set[int] = set()
    for v in schedule.computes():
        if seen[v]:
            pending.add(v)
        else:
            seq.extend(sorted(pending, key=pos.__getitem__))
            pending = set()
            seen[v] = True
            seq.append(v)
    out = schedule_from_sequence(graph, seq)
    try:
        evaluate(graph, out)
    except ScheduleError:
        return None
    return out


@dataclass
class StagePhase:
    """What the stage phase found: ``schedule`` (the cheapest stage-class schedule within B,
    or None), ``least`` (the least-peak stage-class schedule, over B or not), ``first_s``
    (seconds from the phase's clock to the first schedule within B), ``peak_status`` /
    ``compute_status`` (CP-SAT's verdicts *about the stage class*), ``s`` (seconds)."""
    schedule: Schedule | None = None
    least: Schedule | None = None
    first_s: float | None = None
    best_s: float | None = None
    peak_status: str | None = None
    compute_status: str | None = None
    compute_bound: float | None = None
    s: float = 0.0
    notes: list = field(default_factory=list)

    def record(self) -> dict:
        """The params entry (``params["stage_class"]``): every status names the stage class."""
        d = {"class": "stage (Checkmate's; narrower than the given order's)",
             "peak_search": self.peak_status, "compute_search": self.compute_status, "s": round(self.s, 3)}
        if self.compute_bound is not None:
            d["stage_compute_bound"] = self.compute_bound
        if self.notes:
            d["notes"] = list(self.notes)
        return d


def run_stage_phase(graph: Graph, B: int, caps, hint: Schedule | None, time_limit: float, *, run, seed: int = 0,
                    workers: int = 0, progress: bool = False, clock0: float | None = None,
                    peak_share: float = STAGE_PEAK_SHARE, compute_share: float = STAGE_COMPUTE_SHARE) -> StagePhase:
    """Search the stage class for a schedule within ``B`` (least peak, capacity clipped at
    B), then for a cheaper one (least compute), within ``time_limit`` seconds together.

    ``run(cp, time_limit, seed, workers, progress, label, clock0)`` is the driver's CP-SAT
    runner (``cp.run_cpsat``). ``hint``: a schedule of the given-order class (turned into a
    stage-class one by :func:`stage_sequence`), or None (the given order as a plain order).
    Every returned schedule is checked by the evaluator (peak <= B for ``schedule``), by
    ``first_computations_follow`` and against the caps."""
    from memsched.formulations.remat_cpsat import build_remat_cp
    from memsched.solvers.remat.budgets import check_caps

    t0 = time.perf_counter()
    clock0 = t0 if clock0 is None else clock0
    order = graph.given_order()
    out = StagePhase()

    def ok(sched, within):
        if sched is None or not first_computations_follow(graph, sched, order) or check_caps(graph, sched, caps):
            return False
        return not within or evaluate(graph, sched).peak <= B

    cands = [stage_sequence(graph, hint, order) if hint is not None else None, Schedule.from_order(graph, order)]
    for w in GREEDY_EXT_WEIGHTS:
        cands.append(stage_greedy(graph, B, caps, order, ext_weight=w))
    cands = [(evaluate(graph, c), c) for c in cands if c is not None and ok(c, False)]
    fit = [(ev.compute, i, c) for i, (ev, c) in enumerate(cands) if ev.peak <= B]
    h = min(cands, key=lambda r: r[0].peak)[1]
    out.least = h
    if fit:
        h = min(fit)[2]
        out.schedule, out.first_s = h, time.perf_counter() - clock0
        out.best_s = out.first_s
        out.notes.append("the stage greedy fits the budget")
    if out.schedule is None:
        cp1 = build_remat_cp(graph, None, caps, objective="peak", fix_order=order, stage_class=True)
        cap_units = max(0, (B - cp1.const_bytes) // cp1.mem_unit)
        cp1.model.Add(cp1.capacity >= cap_units)
        cp1.hint(h)
        t_p = time.perf_counter()
        left = time_limit - (t_p - t0)
        st, sol, _bound, wall, log = run(cp1, left * peak_share, seed, workers, progress,
                                         "phase 1s (stage class, least peak)", clock0)
        out.peak_status = st
        if sol is not None and ok(sol[0], False):
            if evaluate(graph, sol[0]).peak < evaluate(graph, out.least).peak:
                out.least = sol[0]
            if sol[1] <= cap_units and ok(sol[0], True):
                out.schedule = sol[0]
                out.first_s = t_p - clock0 + next((e["t"] for e in log if e["objective"] <= cap_units), wall)
                out.best_s = out.first_s
        if st == "infeasible" or (st == "optimal" and out.schedule is None):
            out.notes.append("no stage-class schedule fits the budget (a claim about the stage class only)")
    left = time_limit - (time.perf_counter() - t0)
    if out.schedule is not None and left > 1.0:
        cp2 = build_remat_cp(graph, B, caps, objective="compute", fix_order=order, stage_class=True)
        cp2.hint(out.schedule)
        t_c = time.perf_counter()
        st, sol, bound, wall, log = run(cp2, left * compute_share, seed, workers, progress,
                                        "phase 1s (stage class, compute)", clock0)
        out.compute_status = st
        if bound is not None and cp2.cost_div < 0:
            out.compute_bound = float(bound * -cp2.cost_div)
        if sol is not None and ok(sol[0], True) and \
                evaluate(graph, sol[0]).compute < evaluate(graph, out.schedule).compute - 1e-9:
            out.schedule = sol[0]
            out.best_s = t_c - clock0 + next((e["t"] for e in log if e["objective"] <= sol[1] + 1e-9), wall)
    out.s = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------ stage greedy
def stage_greedy(graph: Graph, B: int, caps, order=None, *, ext_weight: float = 1.0) -> Schedule | None:
    """A stage-class schedule built stage by stage (a heuristic: proves nothing), or None.

    Walks the order; at stage i the inputs of ``order[i]`` that are not resident are
    rebuilt by recomputing their producers (and, recursively, the producers of their
    missing inputs) in position order: a stage-class stage by construction. Before each
    computation, while memory would exceed ``B``, it drops the resident tensor j (not read
    in this stage) of least ``(cost(p) + 1) / (gain x distance)``, where p is j's producer,
    distance is the number of stages to j's next need and gain is j's bytes minus the
    bytes of p's inputs whose lifetime must be extended to that stage (they are kept alive
    so that p can run again there). A tensor is a candidate only if p may still run again
    within its cap (counting the recomputations already planned) and every input of p is
    resident now. When no candidate is left the computation goes ahead over the budget
    (the result is then a least-peak hint, peak > B); None when a missing input cannot be
    recomputed within the cap. O(n x tensors x in-degree) per eviction."""
    g = graph
    n = g.n_ops
    order = g.given_order() if order is None else list(order)
    pos = _positions(order)
    INF = n + 1
    cap = [INF if c is None else int(c) for c in caps] if caps is not None else [INF] * n
    uses = [sorted(pos[c] for c in g.consumers[j]) for j in range(g.n_tensors)]
    keep_end = set(g.output_idx) | set(g.pinned_idx)
    planned: list[list[int]] = [[] for _ in range(g.n_tensors)]  # stages where a planned recomputation reads j
    pending: list[set] = [set() for _ in range(n)]  # stages where a recomputation of op is planned
    counts = [0] * n
    resident = bytearray(g.n_tensors)
    mem = 0
    events: list = []
    for j in g.input_idx:
        resident[j] = 1
        mem += g.size[j]

    def next_need(j, i):
        nxt = INF
        for q in uses[j]:
            if q > i:
                nxt = q
                break
        for q in planned[j]:
            if i < q < nxt:
                nxt = q
        return nxt

    def free(j):
        nonlocal mem
        resident[j] = 0
        mem -= g.size[j]
        events.append((FREE_EV, j))

    def avail(u):
        return 1 + cap[u] - counts[u] - len(pending[u])

    def make_room(need, lock, i):
        while mem + need > B:
            best, best_key, best_plan = -1, None, None
            for j in range(g.n_tensors):
                if not resident[j] or j in lock or j in keep_end or g.size[j] == 0:
                    continue
                u = g.producer[j]
                if u == -1:
                    continue
                q = next_need(j, i)
                if q >= INF:  # dead: free it
                    best, best_key, best_plan = j, (-1.0,), None
                    break
                if any(o != j and resident[o] and o in lock for o in g.op_out[u]):
                    continue
                plan = chain(u, q, i, 0, {})
                if plan is None:
                    continue
                cost, ext, ops = plan
                gain = g.size[j] - ext_weight * ext
                if gain <= 0:
                    continue
                key = ((cost + 1.0) / (gain * (q - i)),)
                if best_key is None or key < best_key:
                    best, best_key, best_plan = j, key, (ops, q)
            if best < 0:
                return False
            free(best)
            if best_plan is not None:
                ops, q = best_plan
                for u in ops:
                    pending[u].add(q)
                    for x in g.op_in[u]:
                        planned[x].append(q)
        return True

    def chain(u, q, i, depth, new):
        """Plan a recomputation of u at stage q: (extra cost, bytes whose lifetime grows,
        operators newly planned) or None. A missing input of u is rebuilt at q as well
        (its producer planned too), unless already planned at a stage <= q."""
        if q in pending[u] or new.get(u) == q:
            return 0.0, 0, []
        if avail(u) - (1 if u in new else 0) < 1 or depth > 8:
            return None
        new[u] = q
        cost, ext, ops = float(g.cost[u]), 0, [u]
        for x in g.op_in[u]:
            if resident[x]:
                if next_need(x, i) > q and not (uses[x] and uses[x][-1] >= q):
                    ext += g.size[x]
                continue
            p = g.producer[x]
            if p == -1:
                return None
            if any(i < q2 <= q for q2 in pending[p]):
                ext += g.size[x]
                continue
            sub = chain(p, q, i, depth + 1, new)
            if sub is None:
                return None
            cost, ext, ops = cost + sub[0], ext + sub[1], ops + sub[2]
        return cost, ext, ops

    def compute(u):
        nonlocal mem
        events.append((COMPUTE_EV, u))
        counts[u] += 1
        for j in g.op_out[u]:
            resident[j] = 1
            mem += g.size[j]

    for i, v in enumerate(order):
        # the recomputations of this stage: producers of missing inputs, closed upwards
        S: set = set()
        stack = [j for j in g.op_in[v] if not resident[j]]
        while stack:
            j = stack.pop()
            u = g.producer[j]
            if u == -1 or counts[u] >= 1 + cap[u]:
                return None
            if u in S:
                continue
            S.add(u)
            stack.extend(x for x in g.op_in[u] if not resident[x])
        steps = sorted(S, key=pos.__getitem__) + [v]
        for k, u in enumerate(steps):
            rest = steps[k:]
            lock = set()
            for w in rest:
                lock.update(g.op_in[w])
            for o in g.op_out[u]:
                if resident[o]:  # recompute only after free (a multi-output operator's other outputs)
                    if o in lock:
                        return None
                    free(o)
            need = sum(g.size[o] for o in g.op_out[u]) + g.workspace[u]
            make_room(need, lock, i)  # may fail: the computation then goes over B (a least-peak hint)
            compute(u)
            if u != v:
                pending[u].clear()
            # free what neither the rest of this stage nor a later stage reads
            later = set()
            for w in steps[k + 1:]:
                later.update(g.op_in[w])
            for j in set(g.op_in[u]) | set(g.op_out[u]):
                if resident[j] and j not in later and j not in keep_end and next_need(j, i) >= INF:
                    free(j)
    return Schedule(tuple(events))
