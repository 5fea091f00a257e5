"""Low budgets decided: exact reachability search (unbounded recomputation) and cap-aware
refutations and schedules (docs/remat-low-budgets.md).

Problem. Given a graph, a budget B and (optionally) per-operator recompute caps, is there a
schedule (any order, operator v run at most ``1 + c_v`` times, or any number of times when
uncapped) whose peak is at most B?

* :func:`decide_unbounded` answers it for unbounded recomputation by the backward
  reachability search of docs/remat.md ("Backward pebbling bound") run *without* a depth
  limit: sets strictly decrease in a well-founded order, so the search terminates, and a
  set it declares unreachable is unreachable (the lemma). Sets it declares reachable come
  with a chain of computations, and when every operator's inputs are reachable a schedule
  is emitted and re-judged by the evaluator; only then is "feasible" said.
* Refutations are valid for every cap (a capped schedule is a schedule), so an
  "infeasible" of the unbounded search also decides every capped question.

Everything is bitmask arithmetic over tensor indices (Python ints). Time limits make a run
inconclusive (``unknown``), never wrong.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, evaluate
from memsched.formulations.evaluator import ScheduleError
from memsched.formulations.schedule import COMPUTE, FREE, Schedule

__all__ = ["LowBudget", "ReachSearch", "CappedRefuter", "decide_unbounded", "refute_capped", "refute_low_budget",
           "tree_reach_peaks"]


class _Timeout(Exception):
    pass


def _bits(x: int):
    while x:
        b = x & -x
        yield b.bit_length() - 1
        x ^= b


@dataclass
class LowBudget:
    """What a low-budget decision found. ``status``: ``infeasible`` (proven for every
    schedule of the asked class), ``feasible`` (``schedule`` fits B, re-judged by the
    evaluator) or ``unknown``. ``reason`` says why; ``stats`` counts the work."""
    status: str
    budget: int
    reason: str = ""
    schedule: Schedule | None = None
    peak: int | None = None
    stats: dict = field(default_factory=dict)
    wall_s: float = 0.0


def tree_reach_peaks(graph: Graph) -> list[float]:
    """For each tensor t, the peak of the *tree strategy* that makes t resident from the
    start state: compute the producer's non-input operands one at a time (each by the tree
    strategy, keeping the ones already made), in the order of decreasing (peak - size),
    then the producer, then free its operands and its other outputs. Graph inputs count 0
    (they are resident from the start and kept). A strategy with unbounded recomputation,
    so an upper bound on the least budget under which t is reachable; ``inf`` never occurs.
    O(tensors + edges) after a topological sort."""
    size, prod = graph.size, graph.producer
    p = [0.0] * graph.n_tensors
    for u in graph.topological_order():
        kids = [j for j in graph.op_in[u] if prod[j] != -1]
        kids.sort(key=lambda j: -(p[j] - size[j]))
        acc, worst = 0, 0.0
        for j in kids:
            worst = max(worst, acc + p[j])
            acc += size[j]
        run = acc + sum(size[j] for j in graph.op_out[u]) + graph.workspace[u]
        worst = max(worst, run)
        for j in graph.op_out[u]:
            p[j] = worst
    return p


class ReachSearch:
    """Exact backward reachability under budget B with unbounded recomputation.

    A set S of tensors is *reachable* if some schedule prefix with peak <= B has every
    tensor of S resident at one moment. :meth:`reach` decides it: False is a proof (the
    backward lemma, docs/remat.md, applied exhaustively with memoization and the monotone
    rule "a superset of an unreachable set is unreachable"); True comes with a way to
    build it (:meth:`emit`). Only the graph-input-free part is constructive in general;
    :func:`decide_unbounded` re-judges whatever it emits."""

    def __init__(self, graph: Graph, B: int, time_limit: float = 10.0, dominance: int = 2000, orders=None,
                 assume_below: int | None = None, witnesses: bool = True, tree_events: int = 20000):
        g = self.g = graph
        self.B = int(B)
        self.deadline = time.perf_counter() + float(time_limit)
        self.size = g.size
        self.keep = frozenset(g.always_resident_idx())
        self.const = g.always_resident()
        self.inmask = [sum(1 << j for j in g.op_in[u]) for u in range(g.n_ops)]
        self.outmask = [sum(1 << j for j in g.op_out[u]) for u in range(g.n_ops)]
        self.prodmask = sum(1 << j for j in range(g.n_tensors) if g.producer[j] != -1)
        self.p = tree_reach_peaks(g)
        self.how_t: list = [None] * g.n_tensors  # None: tree strategy; an order: plain strategy
        # bytes counted by the search: tensors outside the always-resident ones
        self.w = [0 if j in self.keep else g.size[j] for j in range(g.n_tensors)]
        # the witness keeps every graph input resident: their bytes come on top
        self.base = g.resident_at_start()
        self.memo: dict[int, object] = {}  # S -> False | ("w",) | ("step", u, T) | ("sub", R)
        self.good: list[int] = []  # reachable sets, for subset dominance
        self.bad: list[int] = []  # unreachable sets, for superset dominance
        self.dominance = int(dominance)
        self.max_events = 5_000_000  # emission limit (tree strategies rebuild shared ancestors)
        self.tree_events = tree_events  # a tree strategy emitting more computations is not used
        self.calls = 0
        self.pruned = 0
        anc, _ = g.reach_masks()
        self.opanc = [anc[u] | (1 << u) for u in range(g.n_ops)]
        self.orders = _witness_orders(g) if orders is None else [list(o) for o in orders]
        # refutation-only relaxation: a set of at most this many counted bytes is taken as
        # reachable without search (over-approximating reachability never refutes wrongly)
        self.assume_below = assume_below
        self.witnesses = bool(witnesses)  # False: refutation only (nothing is built)
        self._improve_tensor_peaks()

    # ------------------------------------------------------------------ pieces
    def m(self, S: int) -> int:
        return sum(self.w[j] for j in _bits(S)) + self.const

    def order_bound(self, S: int) -> int:
        """A lower bound on the peak of every prefix that ends with S resident (the
        creation-order bound, docs/remat-low-budgets.md): order S's tensors by the time
        their resident copies were made; when the i-th was made, the i-1 before it were
        resident, and so were its producer's operands outside S, its other outputs and its
        workspace (``e_i``). So the peak is at least ``const + min over orders of
        max_i (s_1 + ... + s_i + e_i)``, attained by sorting on decreasing ``e_i``."""
        g, w = self.g, self.w
        items = []
        for j in _bits(S):
            u = g.producer[j]
            if u == -1:
                items.append((0, w[j]))
                continue
            e = sum(w[i] for i in _bits((self.inmask[u] | self.outmask[u]) & ~S)) + g.workspace[u]
            items.append((e, w[j]))
        items.sort(key=lambda x: -x[0])
        acc, worst = 0, 0
        for e, sj in items:
            acc += sj
            worst = max(worst, acc + e)
        return worst + self.const

    def witness(self, S: int) -> bool:
        """Sufficient: the tree strategy makes S's tensors one after another, keeping the
        ones made and every graph input, within B."""
        size, p = self.size, self.p
        ts = sorted((j for j in _bits(S & self.prodmask)), key=lambda j: -(p[j] - size[j]))
        acc = self.base
        for j in ts:
            if acc + p[j] > self.B:
                return False
            acc += size[j]
        return acc <= self.B

    def _improve_tensor_peaks(self) -> None:
        """p[t] = the least of the tree strategy (built from the operands' p) and the plain
        orders of t's ancestors (each with the graph inputs kept), in topological order."""
        g, size, p = self.g, self.size, self.p
        E = [0] * g.n_tensors  # computations the chosen strategy emits
        for u in g.topological_order():
            kids = [j for j in g.op_in[u] if g.producer[j] != -1]
            kids.sort(key=lambda j: -(p[j] - size[j]))
            acc, worst = 0, 0.0
            for j in kids:
                worst = max(worst, acc + p[j])
                acc += size[j]
            worst = max(worst, acc + sum(size[j] for j in g.op_out[u]) + g.workspace[u])
            e_tree = 1 + sum(E[j] for j in kids)
            for t in g.op_out[u]:
                best, how, e = worst, None, e_tree
                pk, order = self._plain_peak(1 << t)
                # the plain order when cheaper, or when the tree's emission would be too long
                if order is not None and (pk - self.base < best or e_tree > self.tree_events):
                    best, how, e = pk - self.base, order, len(order)
                p[t], self.how_t[t], E[t] = best, how, e

    def _ancestor_ops(self, S: int) -> int:
        """Bitmask of the operators S's produced tensors depend on (themselves included)."""
        ops = 0
        for j in _bits(S & self.prodmask):
            ops |= self.opanc[self.g.producer[j]]
        return ops

    def _run_plain(self, S: int, ops: int, order, stop_above=None):
        """Peak of running ``order`` restricted to ``ops``, keeping S and every graph input,
        freeing every other tensor after its last reader among ``ops``; None as soon as one
        step exceeds ``stop_above`` (when given). O(ancestors + edges)."""
        g, size = self.g, self.size
        left = {}
        for v in order:
            if (ops >> v) & 1:
                for j in g.op_in[v]:
                    left[j] = left.get(j, 0) + 1
        mem = pk = self.base
        for v in order:
            if not (ops >> v) & 1:
                continue
            out = sum(size[j] for j in g.op_out[v])
            step = mem + out + g.workspace[v]
            if stop_above is not None and step > stop_above:
                return None
            pk = max(pk, step)
            mem += out
            for j in g.op_out[v]:
                if not left.get(j) and not (S >> j) & 1:
                    mem -= size[j]
            for j in g.op_in[v]:
                left[j] -= 1
                if left[j] == 0 and g.producer[j] != -1 and not (S >> j) & 1:
                    mem -= size[j]
        return pk

    def _plain_peak(self, S: int):
        """(least peak, order) over ``self.orders`` of the plain order of S's ancestors that
        keeps S and frees every other tensor after its last reader among them."""
        ops = self._ancestor_ops(S)
        best = (None, None)
        for order in self.orders:
            pk = self._run_plain(S, ops, order)
            if best[0] is None or pk < best[0]:
                best = (pk, [v for v in order if (ops >> v) & 1])
        return best

    def order_witness(self, S: int):
        """Sufficient: a plain order (one of ``self.orders``) of S's ancestors, every tensor
        freed after its last reader among them except S's, with every graph input kept, stays
        within B. Returns the order or None. O(orders x (ancestors + edges))."""
        ops = self._ancestor_ops(S)
        for order in self.orders:
            if self._run_plain(S, ops, order, stop_above=self.B) is not None:
                return [v for v in order if (ops >> v) & 1]
        return None

    def reach(self, S: int) -> bool:
        """Whether S is reachable under B (raises _Timeout past the deadline)."""
        if self.m(S) > self.B:
            return False
        got = self.memo.get(S)
        if got is not None:
            return got is not False
        if not (S & self.prodmask):
            self.memo[S] = ("w",)
            return True
        if self.assume_below is not None and self.m(S) <= self.assume_below:
            self.memo[S] = ("assumed",)
            return True
        self.calls += 1
        if self.order_bound(S) > self.B:
            self.memo[S] = False
            self.bad.append(S)
            self.pruned += 1
            return False
        if not self.calls & 15 and time.perf_counter() > self.deadline:
            raise _Timeout
        if self.witnesses and self.witness(S):
            self.memo[S] = ("w",)
            self.good.append(S)
            return True
        wo = self.order_witness(S) if self.witnesses else None
        if wo is not None:
            self.memo[S] = ("o", wo)
            self.good.append(S)
            return True
        for R in self.good[-self.dominance:]:
            if S & ~R == 0:
                self.memo[S] = ("sub", R)
                return True
        for U in self.bad[-self.dominance:]:
            if U & ~S == 0:
                self.memo[S] = False
                return False
        cands = {self.g.producer[j] for j in _bits(S & self.prodmask)}
        B, w = self.B, self.w
        opts = []
        for u in cands:
            T = (S & ~self.outmask[u]) | self.inmask[u]
            if self.m(T | self.outmask[u]) + self.g.workspace[u] > B:
                continue
            opts.append((sum(w[j] for j in _bits(self.inmask[u] & ~S)), -u, u, T))
        opts.sort()
        for _, _, u, T in opts:
            if self.reach(T):
                self.memo[S] = ("step", u, T)
                self.good.append(S)
                return True
        self.memo[S] = False
        self.bad.append(S)
        return False

    # ------------------------------------------------------------------ emitting
    def emit(self, S: int, resident: set, events: list) -> None:
        """Append events that make S resident, starting from ``resident`` (updated), and
        free what they made beyond S (never a tensor resident before the call)."""
        before = set(resident)
        self._emit(S, resident, events)
        for j in sorted(resident - before):
            if not (S >> j) & 1:
                events.append((FREE, j))
                resident.discard(j)

    def _emit(self, S: int, resident: set, events: list) -> None:
        how = self.memo.get(S)
        if how is None or how is False or how[0] == "w":
            ts = sorted((j for j in _bits(S & self.prodmask)), key=lambda j: -(self.p[j] - self.size[j]))
            for j in ts:
                self._tree(j, resident, events)
            return
        if how[0] == "o":
            self._plain(S, how[1], resident, events)
            return
        if how[0] == "sub":
            self._emit(how[1], resident, events)
            return
        _, u, T = how
        self.emit(T, resident, events)
        self._compute(u, resident, events)
        for j in sorted(resident):
            if (T >> j) & 1 and not (S >> j) & 1 and j not in self.keep and self.g.producer[j] != -1:
                events.append((FREE, j))
                resident.discard(j)

    def _compute(self, u: int, resident: set, events: list) -> None:
        for j in self.g.op_out[u]:
            if j in resident:
                events.append((FREE, j))
                resident.discard(j)
        if len(events) >= self.max_events:
            raise _Timeout  # the emitted schedule would be too long: give up (unknown)
        events.append((COMPUTE, u))
        resident.update(self.g.op_out[u])

    def _plain(self, S: int, order: list, resident: set, events: list) -> None:
        g = self.g
        before = set(resident)
        left = {}
        for v in order:
            for j in g.op_in[v]:
                left[j] = left.get(j, 0) + 1
        for v in order:
            if all(j in resident for j in g.op_out[v]) and any(j in before for j in g.op_out[v]):
                pass  # already there from before: used as is
            else:
                self._compute(v, resident, events)
                for j in g.op_out[v]:
                    if not left.get(j) and not (S >> j) & 1 and j not in before:
                        events.append((FREE, j))
                        resident.discard(j)
            for j in g.op_in[v]:
                left[j] -= 1
                if left[j] == 0 and not (S >> j) & 1 and j not in before and j in resident:
                    events.append((FREE, j))
                    resident.discard(j)

    def _tree(self, t: int, resident: set, events: list) -> None:
        if t in resident or self.g.producer[t] == -1:
            return
        if self.how_t[t] is not None:
            self._plain(1 << t, self.how_t[t], resident, events)
            return
        u = self.g.producer[t]
        before = set(resident)
        kids = [j for j in self.g.op_in[u] if self.g.producer[j] != -1]
        kids.sort(key=lambda j: -(self.p[j] - self.size[j]))
        for j in kids:
            self._tree(j, resident, events)
        self._compute(u, resident, events)
        for j in sorted(resident - before):
            if j != t:
                events.append((FREE, j))
                resident.discard(j)


def _witness_orders(g: Graph) -> list[list[int]]:
    """Plain orders the witness tries: the given order and the ordering heuristics'."""
    from memsched.solvers.ordering.heuristics import HEURISTICS, applicable

    out = [g.given_order()]
    for name in applicable(g):
        try:
            o = HEURISTICS[name](g)
        except Exception:  # a heuristic that does not apply: skip it
            continue
        if o not in out:
            out.append(list(o))
    return out


def _deep(fn):
    """Run ``fn`` in a thread with a large stack (the search recurses once per step)."""
    out: dict = {}

    def run():
        try:
            out["v"] = fn()
        except BaseException as e:  # handed back to the caller
            out["e"] = e

    old = threading.stack_size()
    lim = sys.getrecursionlimit()
    threading.stack_size(256 * 1024 * 1024)
    sys.setrecursionlimit(max(lim, 200000))
    try:
        th = threading.Thread(target=run, name="lowbudget", daemon=True)
        th.start()
        th.join()
    finally:
        threading.stack_size(old)
        sys.setrecursionlimit(lim)
    if "e" in out:
        raise out["e"]
    return out["v"]


def decide_unbounded(graph: Graph, B: int, time_limit: float = 60.0, dominance: int = 2000,
                     max_events: int = 5_000_000, tree_events: int = 20000) -> LowBudget:
    """Decide whether some schedule with unbounded recomputation has peak <= B.

    ``infeasible``: the graph inputs alone exceed B, or some operator's own need does, or
    its input set is unreachable (exhaustive backward search; docs/remat-low-budgets.md).
    ``feasible``: every operator's inputs are reachable and the emitted schedule (each
    operator's inputs built from scratch, the operator run, everything built freed; the
    required outputs built together at the end) is accepted by the evaluator with peak
    <= B. ``unknown``: time ran out, or the emitted schedule did not fit (graphs with
    unpinned inputs: the emission keeps them, the search does not count them)."""
    from memsched.solvers.remat.infeasibility import local_infeasibility

    t0 = time.perf_counter()
    B = int(B)
    why = local_infeasibility(graph, B)
    if why:
        return LowBudget("infeasible", B, why, wall_s=time.perf_counter() - t0)
    rs = ReachSearch(graph, B, time_limit=time_limit, dominance=dominance, tree_events=tree_events)
    rs.max_events = int(max_events)
    g = graph
    order = g.topological_order()

    def run():
        for v in sorted(order, key=lambda v: -rs.m(rs.inmask[v] | rs.outmask[v])):
            if rs.m(rs.inmask[v] | rs.outmask[v]) + g.workspace[v] > B or not rs.reach(rs.inmask[v]):
                return v
        outs = sum(1 << j for j in g.output_idx)
        if not rs.reach(outs):
            return "outputs"
        return None

    try:
        bad = _deep(run)
    except _Timeout:
        return LowBudget("unknown", B, f"reachability search ran out of time ({time_limit} s)",
                         stats={"calls": rs.calls, "sets": len(rs.memo)}, wall_s=time.perf_counter() - t0)
    stats = {"calls": rs.calls, "sets": len(rs.memo)}
    if bad == "outputs":
        return LowBudget("infeasible", B, f"the required outputs cannot be resident together within budget {B} "
                         "(exhaustive backward reachability search)", stats=stats, wall_s=time.perf_counter() - t0)
    if bad is not None:
        return LowBudget("infeasible", B, f"operator {g.ops[bad].name!r}: no schedule has its inputs resident together "
                         f"within budget {B} (exhaustive backward reachability search)", stats=stats,
                         wall_s=time.perf_counter() - t0)
    try:
        sched = _deep(lambda: emit_schedule(rs))
    except _Timeout:
        return LowBudget("unknown", B, f"every operator's inputs are reachable, but the emitted schedule would exceed "
                         f"{rs.max_events} events", stats=stats, wall_s=time.perf_counter() - t0)
    try:
        ev = evaluate(g, sched)
    except ScheduleError as e:  # an unpinned graph input freed before a later use: not built
        return LowBudget("unknown", B, f"every operator's inputs are reachable, but the emitted schedule is "
                         f"invalid ({e})", stats=stats, wall_s=time.perf_counter() - t0)
    if ev.peak <= B:
        stats["computations"] = len(sched.computes())
        return LowBudget("feasible", B, "every operator's inputs are reachable; emitted schedule re-judged",
                         schedule=sched, peak=ev.peak, stats=stats, wall_s=time.perf_counter() - t0)
    return LowBudget("unknown", B, f"every operator's inputs are reachable, but the emitted schedule peaks at "
                     f"{ev.peak} > {B}", stats=stats, wall_s=time.perf_counter() - t0)


def emit_schedule(rs: ReachSearch) -> Schedule:
    """The schedule of :func:`decide_unbounded` after every input set was found reachable:
    graph inputs stay resident until their last reader in topological order has run (pinned
    ones for ever); for each operator in topological order its inputs are built, it runs,
    and what was built is freed; the required outputs are built together at the end."""
    g = rs.g
    order = g.topological_order()
    last_use: dict[int, int] = {}
    for k, v in enumerate(order):
        for j in g.op_in[v]:
            if g.producer[j] == -1:
                last_use[j] = k
    resident = set(g.input_idx)
    events: list = []
    outs = sum(1 << j for j in g.output_idx)
    for j in sorted(g.input_idx):
        if j not in g.pinned_idx and j not in g.output_idx and j not in last_use:
            events.append((FREE, j))
            resident.discard(j)
    for k, v in enumerate(order):
        before = set(resident)
        rs.emit(rs.inmask[v], resident, events)
        rs._compute(v, resident, events)
        for j in sorted(resident - before):
            events.append((FREE, j))
            resident.discard(j)
        for j in g.op_in[v]:
            if g.producer[j] == -1 and last_use.get(j) == k and j not in g.pinned_idx and j not in g.output_idx:
                events.append((FREE, j))
                resident.discard(j)
    rs.emit(outs, resident, events)
    return Schedule(tuple(events))


class CappedRefuter:
    """Backward reachability with recompute caps, for refutation only (docs/remat-low-budgets.md,
    "Chains under a cap").

    The backward lemma, applied from a set S resident at time t, names computations at
    strictly decreasing times (each step's set is resident just before the computation it
    names), so they are distinct events of the schedule: with operator v run at most
    ``1 + caps[v]`` times, no chain names v more often. :meth:`refutes` searches chains whose
    per-operator counts stay within the caps; "no chain" is a proof that no schedule with
    those caps and peak <= B has S resident. Sets of at most ``assume_below`` counted bytes
    are taken as reachable without search (an over-approximation: it can only fail to
    refute). State: (set, counts); a failed state also fails with any larger counts."""

    def __init__(self, graph: Graph, B: int, caps, time_limit: float = 10.0, assume_below: int | None = None,
                 orders=None):
        self.deadline = time.perf_counter() + float(time_limit)
        self.rs = ReachSearch(graph, B, time_limit=time_limit, witnesses=False, orders=orders)
        self.g = graph
        self.B = int(B)
        self.K = [None if c is None else 1 + int(c) for c in caps]
        self.assume_below = assume_below
        n = graph.n_ops
        kmax = max([k for k in self.K if k is not None], default=1)
        self.wb = (kmax + 1).bit_length() + 1  # bits per operator count, top one a guard
        self.unit = [1 << (self.wb * v) for v in range(n)]
        self.guard = sum(1 << (self.wb * v + self.wb - 1) for v in range(n))
        self.fmask = (1 << self.wb) - 1
        self.failed: dict[int, list[int]] = {}
        self.calls = 0

    def plain_fits(self, S: int, cnt: int) -> bool:
        """A real chain: a plain order of S's ancestors (each run once more, within the caps
        left) keeps S within B. Cuts the search; never needed for soundness."""
        rs = self.rs
        ops = rs._ancestor_ops(S)
        for v in _bits(ops):
            if self.K[v] is not None and (cnt >> (self.wb * v)) & self.fmask >= self.K[v]:
                return False
        pk, _ = rs._plain_peak(S)
        return pk is not None and pk <= self.B

    def _leq(self, a: int, b: int) -> bool:
        """Componentwise a <= b of packed counts (the guard-bit subtraction)."""
        return ((b | self.guard) - a) & self.guard == self.guard

    def reach(self, S: int, cnt: int = 0) -> bool:
        rs, g, B = self.rs, self.g, self.B
        m = rs.m(S)
        if m > B:
            return False
        if not (S & rs.prodmask):
            return True
        if self.assume_below is not None and m <= self.assume_below:
            return True
        lst = self.failed.get(S)
        if lst is not None and any(self._leq(a, cnt) for a in lst):
            return False
        if self.plain_fits(S, cnt):
            return True
        self.calls += 1
        if not self.calls & 15 and time.perf_counter() > self.deadline:
            raise _Timeout
        if rs.order_bound(S) > B:
            self.failed.setdefault(S, []).append(0)
            return False
        cands = {g.producer[j] for j in _bits(S & rs.prodmask)}
        opts = []
        for u in cands:
            if self.K[u] is not None and (cnt >> (self.wb * u)) & self.fmask >= self.K[u]:
                continue
            T = (S & ~rs.outmask[u]) | rs.inmask[u]
            if rs.m(T | rs.outmask[u]) + g.workspace[u] > B:
                continue
            opts.append((sum(rs.w[j] for j in _bits(rs.inmask[u] & ~S)), -u, u, T))
        opts.sort()
        for _, _, u, T in opts:
            if self.reach(T, cnt + self.unit[u]):
                return True
        lst = self.failed.setdefault(S, [])
        lst[:] = [a for a in lst if not self._leq(cnt, a)] + [cnt]
        return False


def refute_capped(graph: Graph, B: int, caps, time_limit: float = 60.0, assume_below: int | None = None,
                  orders=None) -> LowBudget:
    """``infeasible`` if some operator's inputs cannot be resident together within B by any
    schedule with these caps (:class:`CappedRefuter`), else ``unknown`` (never ``feasible``:
    the search over-approximates)."""
    from memsched.solvers.remat.infeasibility import local_infeasibility

    t0 = time.perf_counter()
    B = int(B)
    why = local_infeasibility(graph, B)
    if why:
        return LowBudget("infeasible", B, why, wall_s=time.perf_counter() - t0)
    cr = CappedRefuter(graph, B, caps, time_limit=time_limit, assume_below=assume_below, orders=orders)
    rs, g = cr.rs, graph

    def run():
        for v in sorted(range(g.n_ops), key=lambda v: -rs.m(rs.inmask[v] | rs.outmask[v])):
            if not cr.reach(rs.inmask[v]):
                return v
        if not cr.reach(sum(1 << j for j in g.output_idx)):
            return "outputs"
        return None

    try:
        bad = _deep(run)
    except _Timeout:
        return LowBudget("unknown", B, f"capped chain search ran out of time ({time_limit} s)",
                         stats={"calls": cr.calls}, wall_s=time.perf_counter() - t0)
    stats = {"calls": cr.calls, "sets": len(cr.failed)}
    if bad is None:
        return LowBudget("unknown", B, "every operator's inputs have a chain within the caps", stats=stats,
                         wall_s=time.perf_counter() - t0)
    what = "the required outputs" if bad == "outputs" else f"operator {g.ops[bad].name!r}: its inputs"
    return LowBudget("infeasible", B, f"{what} cannot be resident together within budget {B} by any schedule "
                     "within the caps (capped backward chain search)", stats=stats, wall_s=time.perf_counter() - t0)


def refute_low_budget(graph: Graph, B: int, caps=None, time_limit: float = 10.0) -> str | None:
    """A reason why no schedule with peak <= B exists, or None (undecided or feasible).

    First the exhaustive backward reachability search (valid with any amount of
    recomputation, so for every cap) for half the time; then, with finite ``caps``, the
    capped chain search (valid for those caps) for the rest. Each is a proof when it
    refutes (docs/remat-low-budgets.md); running out of time proves nothing."""
    t0 = time.perf_counter()
    # witnesses only cut the search here: the given order alone keeps the set-up cheap
    rs = ReachSearch(graph, B, time_limit=time_limit / 2, orders=[graph.given_order()])
    g = graph

    def run():
        for v in sorted(range(g.n_ops), key=lambda v: -rs.m(rs.inmask[v] | rs.outmask[v])):
            if rs.m(rs.inmask[v] | rs.outmask[v]) + g.workspace[v] > B or not rs.reach(rs.inmask[v]):
                return f"operator {g.ops[v].name!r}: no schedule has its inputs resident together within budget {B}"
        if not rs.reach(sum(1 << j for j in g.output_idx)):
            return f"the required outputs cannot be resident together within budget {B}"
        return None

    try:
        why = _deep(run)
    except _Timeout:
        why = None
    if why:
        return why + " (exhaustive backward reachability search, any recomputation)"
    if caps is None or any(c is None for c in caps):
        return None
    left = time_limit - (time.perf_counter() - t0)
    if left <= 0.05:
        return None
    r = refute_capped(graph, B, caps, time_limit=left, orders=[graph.given_order()])
    return r.reason if r.status == "infeasible" else None
