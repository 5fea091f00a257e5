"""An independent brute-force referee for ordering and rematerialization claims.

It uses only the graph model, the schedule type and the evaluator
(memsched.formulations); no solver code. Every answer it gives comes with a
witness schedule that the evaluator re-judges, so a referee bug can make it
too pessimistic only if the search misses schedules, never too optimistic.
The argument that it misses none is below and in docs/referee.md; the
explicit-event search ``naive_remat`` (every free a separate event, no
canonical form) checks it on tiny graphs (tests/test_referee_self.py).

(a) ``order_peak(g)``: the least peak of a schedule without recomputation
    (a topological order with every tensor freed after its last use), by
    dynamic programming over down-sets (sets of operators already run).

(b) ``remat(g, B, cap, order)``: the least total compute of a schedule with
    peak <= B in which every operator runs at most 1 + cap times (cap None:
    unbounded), in one of three classes:

    * ``"free"``: every schedule the evaluator accepts;
    * ``"given"``: first computations in the given order (Checkmate's and
      Moccasin's class);
    * ``"stage"``: Checkmate's stage class: first computations in the given
      order, and between two consecutive first computations the recomputed
      operators run in strictly increasing given-order position (so each at
      most once per stage), and nothing runs after the last first
      computation.

Search. Dijkstra on compute cost over states

    (R = set of resident tensors, counts or the set C of operators run)

with one transition per *compute* event. Frees are folded into the compute
that last touched the tensor (canonical form):

    Moving free(t) earlier, to just after the last compute before it that
    reads or produces t (or to the start for a graph input nothing before it
    reads), keeps a schedule valid (nothing between reads t; nothing between
    produces t, since t is resident there, and a compute needs its outputs
    absent) and lowers memory at every point in between. So for every
    schedule there is a canonical one with the same computes, the same
    compute cost and no higher peak, in which every free directly follows a
    compute of one of the tensor's readers or producer, or lies at the start.

A transition computes v (inputs resident, outputs absent, memory during the
compute <= B, the count and class rules), then frees any subset of the
tensors v touched (its inputs and outputs, never pinned ones). Two frees are
forced, because keeping the tensor is dominated: a tensor that nothing reads
and that is not a required output is freed at once (it only costs memory and
blocks its producer's recomputation). Two frees are never taken, because
they make the end unreachable: a graph input that is a required output, or
that some not-yet-run operator reads (graph inputs cannot be recomputed).

Finiteness and exactness. With a finite cap k the state is (R, counts) with
counts in {0..k+1}^n; with no cap it is (R, C), since the future of a
schedule depends on the past only through what is resident and which
operators have run (counts matter only against a cap). Either way the state
graph is finite (at most 2^T x (k+2)^n, resp. 2^T x 2^n states, plus the
stage position for "stage"), edge costs are the operators' costs >= 0, and
every canonical schedule is a path from the start state to a goal state
(every operator run, every required output resident) and vice versa. Dijkstra
on a finite graph with non-negative edge costs returns the least path cost,
so the answer is the least compute over all schedules of the class; "None"
means no path, i.e. no schedule of the class fits B. An unbounded number of
recomputations is covered because a path may revisit no state with profit:
a cheapest path is simple, so it is among the finitely many simple paths.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from memsched.formulations import COMPUTE, FREE, Graph, Schedule, evaluate

__all__ = ["RefRemat", "order_peak", "least_peak", "least_budget", "remat", "remat_all", "naive_remat", "in_class", "ORDERS", "CAPS",
           "check_compute_bound", "check_free_compute_bound", "seeded_bound_sweep"]

ORDERS = ("free", "given", "stage")
CAPS = (0, 1, 2, None)


class RefereeLimit(RuntimeError):
    """The state space exceeded the referee's limit (the instance is too big for it)."""


def all_topological_orders(g: Graph):
    """Every topological order of g's operators, by plain enumeration of permutations
    (O(n! n); for graphs of at most ~9 operators)."""
    pred = [set(p) for p in g.op_pred()]
    for perm in itertools.permutations(range(g.n_ops)):
        seen = set()
        for v in perm:
            if not pred[v] <= seen:
                break
            seen.add(v)
        else:
            yield list(perm)


# ----------------------------------------------------------------- (a) order peak
def order_peak(g: Graph) -> tuple[int, list[int]]:
    """(least peak over all topological orders without recomputation, an order attaining it).

    DP over down-sets S (operators run): memory after S with every tensor freed
    after its last use is a function of S alone; best[S] = least max memory of
    a way to run S first. The witness order is re-judged by the evaluator."""
    n = g.n_ops
    size = g.size
    pinned, req = g.pinned_idx, g.output_idx
    full = (1 << n) - 1
    cons_mask = [0] * g.n_tensors
    for j in range(g.n_tensors):
        for c in g.consumers[j]:
            cons_mask[j] |= 1 << c
    pred_mask = [0] * n
    for v in range(n):
        for p in g.op_pred()[v]:
            pred_mask[v] |= 1 << p

    def mem_after(S: int) -> int:
        m = 0
        for j in range(g.n_tensors):
            p = g.producer[j]
            there = p == -1 or (S >> p) & 1
            if not there:
                continue
            if j in pinned or j in req or (cons_mask[j] & ~S):
                m += size[j]
        return m

    initial = sum(size[j] for j in g.input_idx)
    best = {0: initial}
    back = {0: None}
    frontier = [0]
    for _ in range(n):
        nxt = {}
        for S in frontier:
            base = mem_after(S)
            for v in range(n):
                if (S >> v) & 1 or (pred_mask[v] & ~S):
                    continue
                during = base + sum(size[j] for j in g.op_out[v]) + g.workspace[v]
                val = max(best[S], during)
                T = S | (1 << v)
                if T not in best or val < best[T]:
                    best[T] = val
                    back[T] = (S, v)
                    nxt[T] = None
        frontier = list(nxt)
    order = []
    S = full
    while back[S] is not None:
        S, v = back[S]
        order.append(v)
    order.reverse()
    pk = evaluate(g, Schedule.from_order(g, order)).peak
    if pk != best[full]:
        raise AssertionError(f"referee: DP peak {best[full]} but the evaluator finds {pk} for its order")
    return best[full], order


def least_peak(g: Graph) -> int:
    """The least peak over all topological orders: (a) without its witness. The property
    tests' brute-force optimum: the same value as the minimum over every order of
    ``all_topological_orders`` (tests/test_referee_self.py checks it), about 100 times
    faster on 8 operators."""
    return order_peak(g)[0]


# ----------------------------------------------------------------- (b) remat
@dataclass
class RefRemat:
    compute: float | None  # least compute (None: no schedule of the class fits B)
    schedule: Schedule | None  # a witness, re-judged by the evaluator
    peak: int | None
    states: int  # states settled (a size measure)


def remat(g: Graph, B: int, cap=None, order: str = "free", max_states: int = 2_000_000) -> RefRemat:
    """Least compute with peak <= B, each operator at most 1 + cap times, in class ``order``.
    ``cap``: an int for every operator, None (unbounded), or a list of ints, one per operator."""
    if order not in ORDERS:
        raise ValueError(order)
    n, nt = g.n_ops, g.n_tensors
    size = g.size
    pinned = 0
    for j in g.pinned_idx:
        pinned |= 1 << j
    required = 0
    for j in g.output_idx:
        required |= 1 << j
    in_mask = [sum(1 << j for j in g.op_in[v]) for v in range(n)]
    out_mask = [sum(1 << j for j in g.op_out[v]) for v in range(n)]
    out_bytes = [sum(size[j] for j in g.op_out[v]) for v in range(n)]
    is_input = [g.producer[j] == -1 for j in range(nt)]
    # tensors nothing reads and nobody requires: freed as soon as they exist
    useless = 0
    for j in range(nt):
        if not g.consumers[j] and not (required >> j) & 1 and not (pinned >> j) & 1:
            useless |= 1 << j
    consumer_mask = [sum(1 << c for c in g.consumers[j]) for j in range(nt)]
    gpos = [0] * n
    gorder = g.given_order()
    for k, v in enumerate(gorder):
        gpos[v] = k
    full = (1 << n) - 1

    all_inputs = sum(1 << j for j in g.input_idx)
    if sum(size[j] for j in g.input_idx) > B:
        return RefRemat(None, None, None, 0)
    R0 = all_inputs & ~useless
    mem0 = sum(size[j] for j in range(nt) if (R0 >> j) & 1)
    head = [j for j in g.input_idx if (useless >> j) & 1]

    capped = cap is not None
    caps = (list(cap) if isinstance(cap, (list, tuple)) else [cap] * n) if capped else None
    # counts packed in fields of ``w`` bits, the top bit of each a guard for the
    # componentwise comparison below (unbounded: one bit per operator = the set C run)
    w = (max(caps, default=0) + 1).bit_length() + 1 if capped else 1
    powers = [1 << (w * v) for v in range(n)]
    fmask = (1 << w) - 1
    guard = sum(1 << (w * v + w - 1) for v in range(n)) if capped else 0

    def count(cnt, v):
        return (cnt >> (w * v)) & fmask

    # state: (R, cnt, done_mask, stage_last); done_mask is derivable but kept for speed
    start = (R0, 0, 0, -1)
    dist = {start: 0.0}
    parent: dict = {start: None}
    memo_mem = {start: mem0}
    heap = [(0.0, 0, start)]
    tie = itertools.count(1)
    settled = 0
    # Dominance (finite caps): a settled state with the same resident set, operators
    # run and stage position, and componentwise no larger counts, was reached no more
    # expensively (Dijkstra settles in cost order) and allows every continuation this
    # one allows (the cap rule only looks at counts); so this one can be skipped.
    settled_counts: dict = {}
    while heap:
        d, _, st = heapq.heappop(heap)
        if dist[st] < d:
            continue
        R, cnt, done, last = st
        if capped:
            key = (R, done, last)
            lst = settled_counts.get(key)
            if lst is None:
                settled_counts[key] = [cnt]
            else:
                if any(((cnt | guard) - a) & guard == guard for a in lst):
                    continue
                lst.append(cnt)
        settled += 1
        if settled > max_states:
            raise RefereeLimit(f"referee: more than {max_states} states")
        if done == full and (required & ~R) == 0:
            return _finish(g, B, st, parent, head, d, settled)
        mem = memo_mem[st]
        k_done = bin(done).count("1")
        for v in range(n):
            if (in_mask[v] & ~R) or (out_mask[v] & R):
                continue
            during = mem + out_bytes[v] + g.workspace[v]
            if during > B:
                continue
            c = count(cnt, v)
            first = c == 0
            if capped:
                if c >= caps[v] + 1:
                    continue
                ncnt = cnt + powers[v]
            else:
                ncnt = cnt | (1 << v)
            nlast = last
            if order != "free":
                if first:
                    if gpos[v] != k_done:
                        continue
                    nlast = -1
                elif order == "stage":
                    if not (last < gpos[v] and k_done < n):
                        continue
                    nlast = gpos[v]
            ndone = done | (1 << v)
            R1 = (R | out_mask[v]) & ~useless
            mem1 = mem + out_bytes[v] - sum(size[j] for j in g.op_out[v] if (useless >> j) & 1)
            # frees the compute may be followed by (subsets of what v touched)
            choice = (in_mask[v] | out_mask[v]) & R1 & ~pinned
            blocked = 0
            for j in _bits(choice):
                if is_input[j] and ((required >> j) & 1 or (consumer_mask[j] & ~ndone)):
                    blocked |= 1 << j
            choice &= ~blocked
            sub = choice
            while True:
                R2 = R1 & ~sub
                nst = (R2, ncnt, ndone, nlast)
                nd = d + g.cost[v]
                old = dist.get(nst)
                if old is None or nd < old:
                    dist[nst] = nd
                    parent[nst] = (st, v, sub)
                    memo_mem[nst] = mem1 - sum(size[j] for j in _bits(sub))
                    heapq.heappush(heap, (nd, next(tie), nst))
                if sub == 0:
                    break
                sub = (sub - 1) & choice
    return RefRemat(None, None, None, settled)


def least_budget(g: Graph, limit: float, cap=None, order: str = "free") -> int:
    """The least peak of a schedule of class ``order`` within ``cap`` whose compute is at most
    ``limit`` (the peak objective's optimum): binary search on the budget B for the least one
    whose least compute (:func:`remat`) is at most ``limit``; that compute never rises with B,
    and the plain given order (free class: the best plain order) always qualifies when
    ``limit`` is at least the baseline."""
    hi = order_peak(g)[0] if order == "free" else evaluate(g, Schedule.from_order(g, g.given_order())).peak
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        r = remat(g, mid, cap, order)
        if r.compute is not None and r.compute <= limit + 1e-9:
            hi = mid
        else:
            lo = mid + 1
    return hi


def _bits(x: int):
    j = 0
    while x:
        if x & 1:
            yield j
        x >>= 1
        j += 1


def _finish(g, B, st, parent, head, d, settled) -> RefRemat:
    steps = []
    while parent[st] is not None:
        prev, v, sub = parent[st]
        steps.append((v, sub, prev[0]))
        st = prev
    steps.reverse()
    events = [(FREE, j) for j in head]
    for v, sub, _R in steps:
        events.append((COMPUTE, v))
        for j in g.op_out[v]:
            if not g.consumers[j] and j not in g.output_idx:
                events.append((FREE, j))
        for j in _bits(sub):
            events.append((FREE, j))
    sched = Schedule(tuple(events))
    ev = evaluate(g, sched)
    if ev.peak > B or abs(ev.compute - d) > 1e-9 * max(1.0, abs(d)):
        raise AssertionError(f"referee: witness has peak {ev.peak} (budget {B}), compute {ev.compute} (search {d})")
    return RefRemat(ev.compute, sched, ev.peak, settled)


def check_compute_bound(g: Graph, B: int, cap, bound, order: str = "free"):
    """Run ``bound(g, B, caps)`` (a lower bound on extra compute for class ``order``: an object
    with ``extra`` and ``infeasible``) for the uniform ``cap`` and hold it against the referee:
    never "infeasible" where a schedule of the class exists, never above the class's least
    compute. Returns (bound's result, referee's result)."""
    ref = remat(g, B, cap=cap, order=order)
    caps = None if cap is None else [cap] * g.n_ops
    b = bound(g, B, caps)
    if ref.compute is not None:
        assert not b.infeasible, (g.name, B, cap, getattr(b, "reason", None), ref.compute)
        assert g.total_cost() + b.extra <= ref.compute + 1e-6, (g.name, B, cap, b.extra, ref.compute)
    return b, ref


def check_free_compute_bound(g: Graph, B: int, cap, bound):
    """:func:`check_compute_bound` for a free-order bound."""
    return check_compute_bound(g, B, cap, bound, "free")


def seeded_bound_sweep(bound, caps, seeds, order: str = "free", max_ops: int = 7) -> tuple[int, int, int]:
    """:func:`check_compute_bound` on the seeded tiny instances of ``seeds``
    (``referee_strategies.random_tiny_graph``) for every cap of ``caps``. Returns (tried,
    positive, infeasible): the (instance, cap) pairs whose optimum needs extra compute, those of
    them on which the bound proves some, and the refutations."""
    from referee_strategies import random_tiny_graph

    tried = positive = infeasible = 0
    for seed in seeds:
        g, B = random_tiny_graph(seed, max_ops=max_ops)
        for cap in caps:
            b, ref = check_compute_bound(g, B, cap, bound, order)
            infeasible += b.infeasible
            if ref.compute is not None and ref.compute > g.total_cost():
                tried += 1
                positive += b.extra > 1e-9
    return tried, positive, infeasible


def remat_all(g: Graph, B: int, caps=CAPS, orders=ORDERS) -> dict:
    """{(order, cap): RefRemat} for every class and cap."""
    return {(o, c): remat(g, B, c, o) for o in orders for c in caps}


# ----------------------------------------------------------------- class membership
def in_class(g: Graph, sched: Schedule, order: str) -> bool:
    """True if the (valid) schedule lies in class ``order`` (see the module docstring)."""
    if order == "free":
        return True
    gpos = {v: k for k, v in enumerate(g.given_order())}
    seen: set[int] = set()
    k = 0
    last = -1
    for v in sched.computes():
        if v not in seen:
            if gpos[v] != k:
                return False
            seen.add(v)
            k += 1
            last = -1
        elif order == "stage":
            if not (last < gpos[v] and k < g.n_ops):
                return False
            last = gpos[v]
    return True


# ----------------------------------------------------------------- naive check of the canonical form
def naive_remat(g: Graph, B: int, cap=None, order: str = "free", max_states: int = 400_000):
    """Least compute by Dijkstra over explicit events (every free its own zero-cost
    event, no canonical form, no dominance); for tiny graphs only. Unbounded caps
    use the set of operators run (see the module docstring). ``cap`` as in :func:`remat`."""
    n = g.n_ops
    caps = None if cap is None else (list(cap) if isinstance(cap, (list, tuple)) else [cap] * n)
    gpos = {v: k for k, v in enumerate(g.given_order())}
    if sum(g.size[j] for j in g.input_idx) > B:
        return None
    start = (frozenset(g.input_idx), tuple([0] * n), -1)
    dist = {start: 0.0}
    heap = [(0.0, 0, start)]
    tie = itertools.count(1)
    while heap:
        d, _, st = heapq.heappop(heap)
        if dist[st] < d:
            continue
        if len(dist) > max_states:
            raise RefereeLimit("naive referee: too many states")
        R, cnt, last = st
        k = sum(1 for c in cnt if c)
        if k == n and g.output_idx <= R:
            return d
        mem = sum(g.size[j] for j in R)
        succ = [(0.0, (R - {j}, cnt, last)) for j in R if j not in g.pinned_idx]
        for v in range(n):
            if any(j not in R for j in g.op_in[v]) or any(j in R for j in g.op_out[v]):
                continue
            if mem + sum(g.size[j] for j in g.op_out[v]) + g.workspace[v] > B:
                continue
            c = cnt[v]
            if caps is not None and c >= caps[v] + 1:
                continue
            nl = last
            if order != "free":
                if c == 0:
                    if gpos[v] != k:
                        continue
                    nl = -1
                elif order == "stage":
                    if not (last < gpos[v] and k < n):
                        continue
                    nl = gpos[v]
            nc = cnt[:v] + ((c + 1) if cap is not None else 1,) + cnt[v + 1:]
            succ.append((g.cost[v], (R | frozenset(g.op_out[v]), nc, nl)))
        for w, s2 in succ:
            nd = d + w
            if nd < dist.get(s2, float("inf")):
                dist[s2] = nd
                heapq.heappush(heap, (nd, next(tie), s2))
    return None


# ----------------------------------------------------------------- judging a solver's claims
TOL = 1e-9
ASKED_STATUSES = ("optimal", "feasible", "infeasible", "timeout", "unknown", "error")
_SCOPE_ORDER = {"free": "free", "given-first-computations": "given", "given-order-stages": "stage"}


class Truth:
    """Lazily computed referee answers for one (graph, budget), keyed by (class, cap)."""

    def __init__(self, g: Graph, B: int):
        self.g, self.B = g, B
        self._memo: dict = {}

    def __call__(self, order: str, cap) -> RefRemat:
        key = (order, cap)
        if key not in self._memo:
            self._memo[key] = self._solve(order, cap)
        return self._memo[key]

    def _solve(self, order, cap):
        # Class inclusions (cap k within cap k' >= k within unbounded; stage within given
        # within free) give two sound shortcuts: an empty superclass means an empty class,
        # and a superclass optimum whose witness lies in the class is the class optimum.
        sup = []
        if cap is not None:
            sup.append((order, None))
        if order != "free":
            sup.append(({"given": "free", "stage": "given"}[order], cap))
        for so, sc in sup:
            r = self(so, sc)
            if r.compute is None:
                return RefRemat(None, None, None, 0)
            ev = evaluate(self.g, r.schedule)
            if in_class(self.g, r.schedule, order) and (cap is None or max(ev.compute_counts) <= cap + 1):
                return r
        return remat(self.g, self.B, cap, order)


def scope_class(scope: str | None, asked_cap):
    """(referee class, cap) a result's ``scope`` names, or None (heuristic / unknown)."""
    if not scope:
        return None
    order, cap = None, asked_cap
    for part in scope.split(","):
        part = part.strip()
        if part in _SCOPE_ORDER:
            order = _SCOPE_ORDER[part]
        elif part.startswith("capped:"):
            cap = int(part.split(":", 1)[1])
        else:
            return None
    return (order or "free"), cap


def check_remat_claims(g: Graph, B: int, cap, order: str, res, truth: Truth) -> list[str]:
    """Every way ``res`` (a compute-objective remat result for the asked problem
    (g, B, cap, order)) disagrees with brute force; [] when it holds up."""
    bad: list[str] = []
    asked = truth(order, cap).compute
    st = res.status
    if st not in ASKED_STATUSES:
        bad.append(f"unknown status {st!r}")
    ev = None
    if res.schedule is not None:
        try:
            ev = evaluate(g, res.schedule)
        except Exception as e:  # noqa: BLE001 - any evaluator complaint is a disagreement
            bad.append(f"invalid schedule: {e}")
    if ev is not None:
        if ev.peak > B:
            bad.append(f"schedule peak {ev.peak} > budget {B}")
        if cap is not None and max(ev.compute_counts) > cap + 1:
            bad.append(f"schedule runs an operator {max(ev.compute_counts)} times > 1 + cap {cap}")
        if not in_class(g, res.schedule, order):
            bad.append(f"schedule outside the asked order class {order!r}")
        if res.peak != ev.peak or res.compute is None or abs(res.compute - ev.compute) > TOL * max(1, ev.compute):
            bad.append(f"reported peak/compute {res.peak}/{res.compute} != evaluator {ev.peak}/{ev.compute}")
        if asked is None and ev.peak <= B:
            bad.append("REFEREE: the solver found a schedule the referee says does not exist")
        elif asked is not None and ev.compute < asked - TOL and ev.peak <= B and in_class(g, res.schedule, order) \
                and (cap is None or max(ev.compute_counts) <= cap + 1):
            bad.append(f"REFEREE: the solver's schedule costs {ev.compute} < referee optimum {asked}")
    if st == "optimal":
        if ev is None:
            bad.append("optimal without a schedule")
        elif asked is None or abs(ev.compute - asked) > TOL * max(1, asked):
            bad.append(f"claims optimal at compute {ev.compute}; true optimum {asked}")
    if st == "infeasible":
        if asked is not None:
            bad.append(f"claims infeasible; a schedule of compute {asked} fits")
        if res.schedule is not None:
            bad.append("infeasible with a schedule")
    lb = res.lower_bound
    if lb is not None and asked is not None and lb > asked + TOL * max(1, asked):
        bad.append(f"lower bound {lb} > true optimum {asked}")
    # the method's claims about its own class
    cls = scope_class(getattr(res, "scope", None), cap)
    cst = getattr(res, "class_status", None)
    clb = getattr(res, "class_lower_bound", None)
    if cls is not None:
        corder, ccap = cls
        ctrue = truth(corder, ccap).compute
        if cst == "optimal" and ev is not None:
            if not in_class(g, res.schedule, corder) or (ccap is not None and max(ev.compute_counts) > ccap + 1):
                bad.append(f"class-optimal schedule outside its own class {res.scope!r}")
            elif ctrue is None or abs(ev.compute - ctrue) > TOL * max(1, ctrue):
                bad.append(f"claims optimal in class {res.scope!r} at {ev.compute}; class optimum {ctrue}")
        if cst == "infeasible" and ctrue is not None:
            bad.append(f"claims infeasible in class {res.scope!r}; a class schedule of compute {ctrue} fits")
        if clb is not None and ctrue is not None and clb > ctrue + TOL * max(1, ctrue):
            bad.append(f"class lower bound {clb} > class optimum {ctrue} ({res.scope!r})")
    elif cst in ("optimal", "infeasible") and getattr(res, "scope", None) not in (None, "heuristic"):
        bad.append(f"class claim {cst!r} in a scope the referee does not know: {res.scope!r}")
    return bad
