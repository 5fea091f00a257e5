"""Exhaustive search for small graphs: the least compute within a budget, decided exactly.

For graphs of a few dozen tensors the whole space of schedules (up to an argument that
removes the choice of *when* to free) is small enough to search, with any caps, unbounded
recomputation included, in the free class or the given-order class (first computations in
the given order). The search answers the asked problem itself: its "optimal" and
"infeasible" need no narrowing of the class (docs/remat.md, "Exhaustive search for small
graphs", has the argument written out).

Canonical schedules. A free of tensor t can move earlier, to just after the last
computation before it that reads or makes t (or to the start, for a graph input nothing
reads before it): nothing in between reads t, nothing in between makes t (t is resident
there, and a computation needs its outputs absent), and memory in between only drops. So
every schedule has a canonical one with the same computations and no higher peak in which
each free follows a computation that touched the freed tensor. A step of the search is one
computation and a set of frees of tensors that computation touched.

State. What a schedule can still do depends on its past only through the resident tensors
and how often each operator has run (only against its cap: an unbounded operator's count is
kept as "run or not"). Two schedules reaching the same state have the same futures.

Search: A* on compute with the heuristic

    h = sum of the costs of the operators not yet run
      + sum of the costs of the operators in A,

where A holds the operators already run of which some output is absent and still wanted
(read by an operator not yet run, or a required output), and, transitively, the producers
of the absent inputs of members of A (a member runs again, and before that each of its
absent inputs is made again, by its producer, which has run). Each term is a computation
every completion must still contain, and the terms name different computations (first runs
of operators not yet run; later runs of operators that ran), so h never exceeds the
cheapest completion (admissible). One step changes h by at least minus the cost of the
operator it runs (only that operator leaves a term: a step's inputs are resident, so no
member of A was there through it), so h is consistent: states are settled in order of
g + h, the first goal settled is optimal, and at any moment the least g + h in the queue is
a lower bound on the optimum.

Complexity: O(states x n x 2^d) with d the most tensors one operator touches; bounded by
``max_states`` and a deadline, where it stops with the lower bound reached so far.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass

from memsched.formulations import COMPUTE, FREE, Graph, Schedule, evaluate

__all__ = ["ExactSearch", "exact_remat", "least_peak_exact", "fits_exhaustive", "MAX_OPS", "MAX_TENSORS"]

#: graphs the driver hands to the search: at most this many operators and tensors (the state
#: space grows with both; the shipped graphs of 12-18 operators settle in under 0.1 s)
MAX_OPS = 24
MAX_TENSORS = 64


@dataclass
class ExactSearch:
    """What the search decided: ``status`` "optimal" (``schedule`` attains ``compute``, the
    least of the class), "infeasible" (no schedule of the class fits the budget), "none upto"
    (no schedule of compute at most ``upto`` exists) or "stopped" (a limit was reached;
    ``lower_bound`` holds for the class)."""

    status: str
    compute: float | None
    schedule: Schedule | None
    lower_bound: float | None
    states: int
    seconds: float


def fits_exhaustive(graph: Graph) -> bool:
    """Whether the driver tries the search on ``graph`` (small enough, see MAX_OPS)."""
    return graph.n_ops <= MAX_OPS and graph.n_tensors <= MAX_TENSORS


def _mask(idx) -> int:
    m = 0
    for j in idx:
        m |= 1 << j
    return m


def _members(m: int):
    while m:
        low = m & -m
        yield low.bit_length() - 1
        m ^= low


def exact_remat(graph: Graph, B: int, caps=None, order: str = "free", *, upto: float | None = None,
                max_states: int = 1_000_000, time_limit: float | None = None, stop=None) -> ExactSearch:
    """Least compute with peak <= ``B``, operator v running at most 1 + ``caps[v]`` times
    (``caps`` None or None entries: unbounded), over every schedule (``order="free"``) or
    those whose first computations follow ``graph.given_order()`` (``"given"``).

    ``upto``: only schedules of compute at most ``upto`` are searched (a known schedule's
    compute); finding none returns "none upto". ``stop``: a callable, checked every few
    hundred states, that ends the search early when it returns True (Ctrl-C).
    """
    if order not in ("free", "given"):
        raise ValueError(f"order must be 'free' or 'given', not {order!r}")
    t0 = time.perf_counter()
    g = graph
    n, nt = g.n_ops, g.n_tensors
    size, cost, ws = g.size, [float(c) for c in g.cost], g.workspace
    if caps is None:
        caps = [None] * n
    pinned = _mask(g.pinned_idx)
    required = _mask(g.output_idx)
    inputs = _mask(g.input_idx)
    ins = [_mask(g.op_in[v]) for v in range(n)]
    outs = [_mask(g.op_out[v]) for v in range(n)]
    out_bytes = [sum(size[j] for j in g.op_out[v]) for v in range(n)]
    readers = [_mask(g.consumers[j]) for j in range(nt)]
    useless = _mask(j for j in range(nt) if not g.consumers[j] and not (required >> j) & 1
                    and not (pinned >> j) & 1)
    # the outputs that make the producer run again when absent: read by someone, or required
    wanted_out = [[j for j in g.op_out[v] if g.consumers[j] or (required >> j) & 1] for v in range(n)]
    position = {v: k for k, v in enumerate(g.given_order())}
    given = order == "given"
    everyone = (1 << n) - 1

    # counts: one field per operator; an unbounded operator's field saturates at 1 ("has run")
    top = [1 if caps[v] is None else caps[v] + 1 for v in range(n)]
    width = (max(top).bit_length() if n else 1) + 1  # the field's top bit: a guard for comparisons
    shift = [width * v for v in range(n)]
    field = (1 << (width - 1)) - 1
    guard = sum(1 << (s + width - 1) for s in shift)

    def run_mask(cnt: int) -> int:
        m = 0
        for v in range(n):
            if (cnt >> shift[v]) & field:
                m |= 1 << v
        return m

    h_seen: dict = {}
    producer = g.producer

    def h(R: int, ran: int) -> float:
        key = (R, ran)
        got = h_seen.get(key)
        if got is not None:
            return got
        rest = 0.0
        again = []  # operators that ran and must run again
        marked = 0
        for v in range(n):
            if not (ran >> v) & 1:
                rest += cost[v]
                continue
            for j in wanted_out[v]:
                if not (R >> j) & 1 and ((required >> j) & 1 or readers[j] & ~ran):
                    again.append(v)
                    marked |= 1 << v
                    break
        # ... and so must the producers of their absent inputs (each such input is made again before
        # its reader runs again), transitively
        while again:
            v = again.pop()
            rest += cost[v]
            for j in g.op_in[v]:
                p = producer[j]
                if p >= 0 and not (R >> j) & 1 and not (marked >> p) & 1:
                    marked |= 1 << p
                    again.append(p)
        h_seen[key] = rest
        return rest

    if sum(size[j] for j in g.input_idx) > B:
        return ExactSearch("infeasible", None, None, None, 0, time.perf_counter() - t0)
    R0 = inputs & ~useless
    start = (R0, 0)
    limit = math.inf if upto is None else upto + 1e-9 * max(1.0, abs(upto))
    best = {start: 0.0}  # least compute found to reach a state
    memory = {start: sum(size[j] for j in _members(R0))}
    parent = {start: None}  # state -> (previous state, operator, frees)
    closed = set()
    counts_closed: dict = {}  # (resident, operators run) -> counts of the closed states
    queue = [(h(R0, 0), 0.0, 0, start)]  # ties: the longer way done first (nearer a goal)
    tie = itertools.count(1)
    deadline = math.inf if time_limit is None else t0 + time_limit

    def done(status, state=None, lower=None):
        sched = comp = None
        if state is not None:
            sched, comp = _witness(g, state, parent, useless & inputs, useless), best[state]
            lower = comp
        return ExactSearch(status, comp, sched, lower, len(closed), time.perf_counter() - t0)

    while queue:
        f, d, _, st = heapq.heappop(queue)
        d = -d
        if st in closed or d > best[st]:
            continue  # settled already, or reached more cheaply since this entry
        R, cnt = st
        ran = run_mask(cnt)
        seen = counts_closed.setdefault((R, ran), [])
        if any(((cnt | guard) - a) & guard == guard for a in seen):
            continue  # dominated: a closed state with these tensors and no higher counts (docs/remat.md)
        seen.append(cnt)
        if ran == everyone and not (required & ~R):
            return done("optimal", st)
        if len(closed) >= max_states or (len(closed) & 255 == 255
                                          and (time.perf_counter() > deadline or (stop is not None and stop()))):
            # consistent h: every entry left has g + h >= f, and one of them lies on an optimal path
            return done("stopped", lower=f if upto is None else min(f, upto))
        closed.add(st)
        mem = memory[st]
        k = ran.bit_count()
        for v in range(n):
            if ins[v] & ~R or outs[v] & R:
                continue
            if mem + out_bytes[v] + ws[v] > B:
                continue
            c = (cnt >> shift[v]) & field
            if c == 0:
                if given and position[v] != k:
                    continue
            elif caps[v] is not None and c >= top[v]:
                continue
            ncnt = cnt if caps[v] is None and c else cnt + (1 << shift[v])
            nran = ran | (1 << v)
            R1 = (R | outs[v]) & ~useless
            m1 = mem + out_bytes[v] - sum(size[j] for j in _members(outs[v] & useless))
            # frees this step may take: tensors v touched, neither pinned nor a graph input that
            # is required or still read by an operator not yet run (it could never come back)
            choice = (ins[v] | outs[v]) & R1 & ~pinned
            for j in _members(choice & inputs):
                if (required >> j) & 1 or readers[j] & ~nran:
                    choice &= ~(1 << j)
            nd = d + cost[v]
            sub = choice
            while True:
                nst = (R1 & ~sub, ncnt)
                old = best.get(nst)
                if (old is None or nd < old) and nst not in closed:
                    nf = nd + h(nst[0], nran)
                    if nf <= limit:
                        best[nst] = nd
                        memory[nst] = m1 - sum(size[j] for j in _members(sub))
                        parent[nst] = (st, v, sub)
                        heapq.heappush(queue, (nf, -nd, next(tie), nst))
                if not sub:
                    break
                sub = (sub - 1) & choice
    return done("none upto" if upto is not None else "infeasible")


def _witness(g: Graph, state, parent, useless_inputs: int, useless: int) -> Schedule:
    """The schedule of the search path to ``state``: the frees of unread graph inputs first,
    then per step its computation, the frees of its unread outputs, and the step's frees."""
    steps = []
    while parent[state] is not None:
        prev, v, sub = parent[state]
        steps.append((v, sub))
        state = prev
    events = [(FREE, j) for j in _members(useless_inputs)]
    for v, sub in reversed(steps):
        events.append((COMPUTE, v))
        events += [(FREE, j) for j in _members(_mask(g.op_out[v]) & useless)]
        events += [(FREE, j) for j in _members(sub)]
    return Schedule(tuple(events))


def least_peak_exact(graph: Graph, limit: float, caps=None, order: str = "free", *, hi: int, hi_schedule: Schedule,
                     max_states: int = 1_000_000, time_limit: float | None = None, stop=None) -> ExactSearch:
    """The least peak of a schedule of compute at most ``limit`` (the peak objective), given one
    such schedule ``hi_schedule`` of peak ``hi``: bisection on the budget B with
    :func:`exact_remat` (``upto=limit``) deciding whether some schedule of the class has peak
    <= B and compute <= ``limit``. That predicate never turns false as B grows, so the least
    B where it holds is the least peak, and the schedule found there has exactly that peak.
    ``status`` "optimal" (``lower_bound`` = that peak, ``schedule`` attains it, ``compute`` is its) or
    "stopped" (a probe reached a limit; nothing is claimed and ``lower_bound`` is the least
    budget not yet refuted)."""
    t0 = time.perf_counter()
    deadline = math.inf if time_limit is None else t0 + time_limit
    lo, best, states = 0, hi_schedule, 0
    while lo < hi:
        mid = (lo + hi) // 2
        left = deadline - time.perf_counter()
        if left <= 0:
            return ExactSearch("stopped", None, None, lo, states, time.perf_counter() - t0)
        probe = exact_remat(graph, mid, caps, order, upto=limit, max_states=max_states - states,
                            time_limit=None if math.isinf(left) else left, stop=stop)
        states += probe.states
        if probe.status == "stopped":
            return ExactSearch("stopped", None, None, lo, states, time.perf_counter() - t0)
        if probe.status == "optimal":
            hi, best = mid, probe.schedule
        else:  # "none upto" or "infeasible": no schedule of the class within mid and limit
            lo = mid + 1
    return ExactSearch("optimal", evaluate(graph, best).compute, best, hi, states, time.perf_counter() - t0)
