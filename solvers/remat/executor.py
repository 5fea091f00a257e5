"""An on-demand executor shared by the rematerialization baselines.

It walks a plain operator order; when an operator needs an input that is no
longer resident it recomputes the producer first (recursively, from whatever
is still resident); after each step it frees every tensor with no later use.
The order may also be a compute sequence with planned recomputations (an operator
repeated): a planned one runs unless its outputs are still resident, and a copy whose
producer is planned to run again before the copy's next reader is freed after its last
reader before that (solvers/remat/sequence_lns.py rebuilds schedules this way).
What else to drop is a *policy*: a static set of tensors to drop after their
use (Chen's checkpoints), or eviction under a budget by DTR's score
h = cost / (bytes x staleness) (Kirisame et al., ICLR 2021). Scores: ``dtr`` (that),
``belady`` (staleness replaced by the distance to the next use, offline), ``chain`` and
``chain-stale`` (those two with the cost of the whole recomputation chain: the producer's
cost plus that of each of its inputs that is no longer resident, recursively).

The output is a :class:`formulations.Schedule`; the evaluator judges it.
Runs in O(events x resident tensors) with budget eviction, O(events) otherwise.
"""
from __future__ import annotations

import bisect
import sys
import time

from memsched.formulations import Graph
from memsched.formulations.schedule import COMPUTE, FREE, Schedule

__all__ = ["Executor", "ExecutionFailed", "best_of_family"]


SCORES = ("dtr", "belady", "safe", "chain", "chain-stale")


class ExecutionFailed(Exception):
    """The policy cannot produce a schedule within the budget / caps."""


class Executor:
    def __init__(self, graph: Graph, order: list[int], *, budget: int | None = None, caps=None,
                 drop_after_use: set[int] | None = None, evict: bool = False, score: str = "dtr",
                 deadline: float | None = None):
        g = self.g = graph
        self.deadline = deadline  # time.perf_counter() value: past it, execution fails
        self.order = list(order)
        self.B = budget
        self.caps = caps
        self.drop = drop_after_use or set()
        self.evict = evict
        if evict and score not in SCORES:
            raise ValueError(f"unknown eviction score {score!r}; valid: {', '.join(SCORES)}")
        self.score = score
        n_t = g.n_tensors
        # ``order`` may repeat operators (a compute sequence with planned recomputations): the
        # positions of every occurrence of each reader, and of each operator
        self.pos_uses: list[list[int]] = [[] for _ in range(n_t)]
        self.occ: list[list[int]] = [[] for _ in range(g.n_ops)]
        for k, v in enumerate(self.order):
            self.occ[v].append(k)
            for j in g.op_in[v]:
                if not self.pos_uses[j] or self.pos_uses[j][-1] != k:
                    self.pos_uses[j].append(k)
        self.planned = len(self.order) > len(set(self.order))
        self.last = [u[-1] if u else -1 for u in self.pos_uses]
        if evict or self.drop:
            # a graph input can never be recomputed: keep it while an operator that reads it
            # might run again (a recomputation after its last use in the order would need it)
            for j in g.input_idx:
                if any(caps is None or caps[c] is None or caps[c] > 0 for c in g.consumers[j]):
                    self.last[j] = len(self.order)
        self.keep = g.pinned_idx | g.output_idx
        self.final_inputs: set[int] = set()
        self.resident = bytearray(n_t)
        self.mem = 0
        for j in g.input_idx:
            self.resident[j] = 1
            self.mem += g.size[j]
        self.counts = [0] * g.n_ops
        self.events: list[tuple[int, int]] = []
        self.locked: dict[int, int] = {}
        self.access = [0] * n_t
        self.clock = 0
        self.step = -1

    # ---------------------------------------------------------------- basics
    def _free(self, j: int) -> None:
        self.resident[j] = 0
        self.mem -= self.g.size[j]
        self.events.append((FREE, j))

    def _needed_later(self, j: int) -> bool:
        if j in self.g.output_idx or j in self.final_inputs:
            return True
        return self.last[j] > self.step

    def _inputs_needed_from(self, outs: list[int]) -> list[frozenset]:
        """For each i, the unpinned graph inputs that recomputing ``outs[i:]`` may read (their
        ancestors' inputs; pinned ones are never evicted). One pass over the graph: each
        tensor's set is built once from its producer's inputs, then suffix unions."""
        g = self.g
        below: dict[int, frozenset] = {}
        for v in self.order:  # a topological order: producers before consumers
            acc: set[int] = set()
            for j in g.op_in[v]:
                if g.producer[j] == -1:
                    if j not in g.pinned_idx:
                        acc.add(j)
                else:
                    acc |= below[j]
            fs = frozenset(acc)
            for j in g.op_out[v]:
                below[j] = fs
        out, acc = [frozenset()] * (len(outs) + 1), frozenset()
        for i in range(len(outs) - 1, -1, -1):
            j = outs[i]
            acc = acc | (below.get(j, frozenset()) if g.producer[j] != -1 else
                         (frozenset() if j in g.pinned_idx else frozenset([j])))
            out[i] = acc
        return out

    def _can_recompute(self, p: int) -> bool:
        if p == -1:
            return False
        c = None if self.caps is None else self.caps[p]
        return c is None or self.counts[p] < 1 + c

    def _make_room(self, need: int) -> None:
        if self.B is None or self.mem + need <= self.B:
            return
        if not self.evict:
            return  # static policies: the evaluator reports the peak
        g = self.g
        while self.mem + need > self.B:
            if self.deadline is not None and time.perf_counter() > self.deadline:
                raise ExecutionFailed("time limit reached")
            best, best_key = -1, None
            chain = {} if self.score in ("chain", "chain-stale") else None  # memo of this round
            for j in range(g.n_tensors):
                if not self.resident[j] or j in self.locked or j in g.pinned_idx or g.size[j] == 0:
                    continue
                p = g.producer[j]
                unsafe = 0
                if self._needed_later(j):
                    if not self._can_recompute(p):
                        continue
                    # recomputing p needs every output of p gone: only evict if none is locked
                    if any(o in self.locked for o in g.op_out[p]):
                        continue
                    cost = self._chain_cost(j, chain) if chain is not None else g.cost[p]
                    nxt = next((q for q in self.pos_uses[j] if q > self.step), None)
                    if self.score in ("belady", "safe"):
                        # prefer tensors whose producer's inputs are still alive at the next use
                        reach = len(self.order) if nxt is None else nxt
                        unsafe = sum(1 for i in g.op_in[p] if i not in g.pinned_idx and not (self.resident[i] and self.last[i] >= reach))
                else:
                    cost = 0.0
                    nxt = None
                if self.score in ("belady", "safe", "chain"):
                    dist = (len(self.order) + 1 - self.step) if nxt is None else nxt - self.step
                    h = cost / (g.size[j] * dist)
                else:
                    stale = self.clock - self.access[j] + 1
                    h = cost / (g.size[j] * stale)
                if unsafe and self.score == "safe":
                    continue
                key = (unsafe, h)
                if best_key is None or key < best_key:
                    best, best_key = j, key
            if best < 0:
                raise ExecutionFailed(f"cannot free {self.mem + need - self.B} more bytes")
            self._free(best)

    def _chain_cost(self, j: int, memo: dict, depth: int = 0) -> float:
        """What bringing ``j`` back would cost now: its producer's cost plus, recursively,
        that of every input of the producer that is no longer resident (the chain an
        on-demand recomputation walks; at most 64 levels deep). A priority only."""
        c = memo.get(j)
        if c is None:
            g = self.g
            p = g.producer[j]
            c = g.cost[p]
            if depth < 64:
                for i in g.op_in[p]:
                    if not self.resident[i] and g.producer[i] != -1:
                        c += self._chain_cost(i, memo, depth + 1)
            memo[j] = c
        return c

    def _lock(self, js):
        for j in js:
            self.locked[j] = self.locked.get(j, 0) + 1

    def _unlock(self, js):
        for j in js:
            c = self.locked[j] - 1
            if c:
                self.locked[j] = c
            else:
                del self.locked[j]

    def materialize(self, j: int, depth: int = 0) -> None:
        if self.resident[j]:
            return
        p = self.g.producer[j]
        if not self._can_recompute(p):
            raise ExecutionFailed(f"tensor {self.g.tensors[j].name!r} is gone and cannot be recomputed")
        self.run(p, depth + 1)

    def run(self, v: int, depth: int = 0) -> None:
        g = self.g
        if depth > 5000:
            raise ExecutionFailed("recomputation too deep")
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise ExecutionFailed("time limit reached")
        ins = g.op_in[v]
        self._lock(ins)
        try:
            for j in ins:
                self.materialize(j, depth)
            if not self._can_recompute(v) and self.counts[v] > 0:
                raise ExecutionFailed(f"operator {g.ops[v].name!r} exceeds its cap")
            for j in g.op_out[v]:  # recompute only after free
                if self.resident[j]:
                    # also when a reader holds it (locked): v's computation, next, brings it
                    # back before anyone reads it again
                    self._free(j)
            need = sum(g.size[j] for j in g.op_out[v]) + g.workspace[v]
            self._make_room(need)
            self.events.append((COMPUTE, v))
            self.counts[v] += 1
            self.clock += 1
            for j in g.op_out[v]:
                self.resident[j] = 1
                self.mem += g.size[j]
                self.access[j] = self.clock
            for j in ins:
                self.access[j] = self.clock
        finally:
            self._unlock(ins)

    # ------------------------------------------------------------------ main
    def execute(self) -> Schedule:
        g = self.g
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 20000))
        try:
            for j in g.input_idx:  # inputs nobody needs
                if j not in self.keep and not g.consumers[j]:
                    self._free(j)
            for k, v in enumerate(self.order):
                self.step = k
                if self.counts[v] and all(self.resident[j] for j in g.op_out[v]):
                    pass  # still resident from an on-demand recomputation
                else:
                    self.run(v)
                self._release(v, k)
            self.step = len(self.order)
            done = []
            try:  # a required output brought back stays: later ones may not evict it
                outs = list(g.output_idx)
                needed = self._inputs_needed_from(outs)
                for i, j in enumerate(outs):
                    # graph inputs (never recomputable) that bringing back the outputs still to
                    # come may read stay resident
                    self.final_inputs = needed[i]
                    self.materialize(j)
                    self._lock([j])
                    done.append(j)
            finally:
                self._unlock(done)
        finally:
            sys.setrecursionlimit(old)
        return Schedule(tuple(self.events))

    def _release(self, v: int, k: int) -> None:
        g = self.g
        cand = set(g.op_in[v]) | set(g.op_out[v])
        for j in sorted(cand):
            if not self.resident[j] or j in self.keep:
                continue
            if self.last[j] <= k:
                self._free(j)
            elif j in self.drop and g.producer[j] != -1:
                # static checkpointing: drop unless the very next step reads it
                nxt = next((p for p in self.pos_uses[j] if p > k), None)
                if nxt is not None and nxt > k + 1:
                    self._free(j)
        # recomputed tensors that are dead now; with planned recomputations, also a copy whose
        # producer runs again (planned) before the copy's next reader: the new copy serves it
        if self.evict or self.drop or self.planned:
            for j in range(g.n_tensors):
                if not self.resident[j] or j in self.keep or g.producer[j] == -1:
                    continue
                if self.last[j] <= k or (self.planned and self._replanned(j, k)):
                    self._free(j)

    def _replanned(self, j: int, k: int) -> bool:
        """Whether the producer of ``j`` has a planned computation after position ``k`` that
        comes before the next reader of ``j`` after ``k``."""
        o = self.occ[self.g.producer[j]]
        i = bisect.bisect_right(o, k)
        if i == len(o):
            return False
        u = self.pos_uses[j]
        r = bisect.bisect_right(u, k)
        return r == len(u) or o[i] < u[r]


def best_of_family(graph: Graph, family, *, budget, caps, objective: str, eps: float, solver: str, knob: str,
                   preferred=None, none_fits: str, tried_key: str | None = None):
    """The best schedule of a one-parameter baseline family (segment length, checkpoint
    slots, ...), as a SolveResult. ``family`` yields ``(value, build)`` with ``build()``
    returning a Schedule or raising ExecutionFailed. Within the budget (and compute limit
    ``(1 + eps) x`` baseline for objective "peak") and the caps, least compute (or
    least peak) wins; ties go to ``preferred``, then to the smaller value.
    ``params`` records every value tried as ``tried_key`` (default ``<knob>s_tried``) and the
    choice as ``knob``."""
    from memsched.formulations import evaluate
    from memsched.solvers.result import Status, make_result

    limit = (1 + eps) * graph.total_cost()
    best, tried = None, []
    for value, build in family:
        try:
            s = build()
        except ExecutionFailed:
            continue
        ev = evaluate(graph, s)
        if caps is not None and any(c is not None and m > 1 + c for c, m in zip(caps, ev.compute_counts)):
            continue
        tried.append((value, ev.peak, ev.compute))
        within = budget is None or ev.peak <= budget
        if objective == "compute":
            ok, key = within, (ev.compute, ev.peak, value != preferred)
        else:
            ok, key = ev.compute <= limit * (1 + 1e-12) and within, (ev.peak, ev.compute, value != preferred)
        if ok and (best is None or key < best[0]):
            best = (key, value, s, ev)
    params = {tried_key or f"{knob}s_tried": tried}
    if best is None:
        return make_result(graph, None, solver=solver, status=Status.INFEASIBLE, objective=objective, params=params,
                           message=f"{none_fits} {budget}" + (f" (least peak {min(p for _, p, _ in tried)})" if tried else ""))
    _, value, s, ev = best
    params[knob] = value
    return make_result(graph, s, solver=solver, status=Status.FEASIBLE, objective=objective,
                       claimed=ev.compute if objective == "compute" else ev.peak, params=params)
