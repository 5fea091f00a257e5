"""DTR runtime core with simrd's semantics (RuntimeV2EagerOptimized, RuntimeV2).

The state is kept in flat lists indexed by tensor id; a storage is identified by the id
of its root tensor (simrd's ``root_id``), so the sets that simrd keeps (regions) hold the
same integers in the same insertion order. Behaviour, step by step (docs/dtr.md):

* ``compute(op)``: creates the output tensors (aliases share their argument's storage,
  every output takes one external ref), materializes output 0, then stamps
  ``last_access = clock`` on every output storage.
* ``materialize(t)``: stamps the parents' last access, locks the defined parents, then
  materializes (depth first, in argument order) and locks the undefined ones; frees
  memory for ``op.total_size`` if needed (one eviction per heuristic choice, OOM when the
  pool is empty); computes (clock += cost, memory += all outputs, peak sampled, already
  defined siblings subtracted again); unlocks the parents; raises the thrash error once
  the rematerialization compute exceeds the limit.
* eager release: a storage whose external refs reach 0 is evicted at once (not banished).
* the eviction pool is insertion ordered; ``choose`` scans it and keeps the last storage
  of least cost (``<=``), stopping at a cost of exactly 0.

Responsibilities are split by module: this core (state, operators, locking, the
eviction loop), :mod:`.heuristics` (the one heuristic table, each cost written once),
:mod:`.regions` (e*(s) regions and their closure cache), :mod:`.eqclass`
(h_DTR-EqClass's union-find), :mod:`.lookahead` (lookahead policies) and
:mod:`.baseline` (simrd's V1 baseline). Reference: M. Kirisame et al., Dynamic Tensor
Rematerialization, ICLR 2021; simrd (uwsampl/dtr-prototype, ``simrd/runtime``).
"""
from __future__ import annotations

import gc
import math
import random as _random
import sys
import time

from memsched.formulations import MemschedError
from memsched.instances.dtr_trace import COMPUTE, GET, PIN, RELEASE, DTRTrace

from .baseline import baseline
from .eqclass import EqClassMixin
from .heuristics import HEURISTICS, bind, canonical_heuristic, heuristic_names, spec
from .lookahead import LookaheadMixin, horizon
from .regions import RegionInvariantError, RegionsMixin

__all__ = ["OOMError", "ThrashError", "EarlyStop", "EARLY_OUTCOME", "RegionInvariantError", "Runtime", "baseline", "HEURISTICS",
           "heuristic_names", "canonical_heuristic"]

INF = math.inf


class OOMError(Exception):
    """The pool is empty and the allocation does not fit (simrd's MemoryError)."""


class ThrashError(Exception):
    """Rematerialization compute exceeded the limit (simrd's RematExceededError)."""


class EarlyStop(Exception):
    """The run cannot end 'ok' (proven; ``early_stop``): outcome 'thrash_or_oom'."""


# outcome of a run stopped early by the proof of docs/dtr.md section 3 ("Early stop"):
# the full run ends in 'remat_exceeded' or 'oom', and which one is not decided
EARLY_OUTCOME = "thrash_or_oom"
EARLY_CHECKS = 64  # the proof is tried each time the remat compute grew by limit / EARLY_CHECKS


class Runtime(RegionsMixin, EqClassMixin, LookaheadMixin):
    """One replay of a trace under a byte budget. Use :meth:`run`.

    Parameters
    ----------
    trace : DTRTrace
        The parsed log (:mod:`memsched.instances.dtr_trace`).
    budget : int
        Bytes; an operator runs when ``memory + need <= budget``.
    heuristic : str
        A name of :data:`HEURISTICS` (or a simrd class name, or ``lookahead-K``).
    remat_limit : number
        Rematerialization compute past which the run thrashes (``remat_exceeded``).
    eager : bool
        True: RuntimeV2EagerOptimized (the pareto runtime; a storage whose external refs
        reach 0 is evicted at once); False: plain RuntimeV2.
    record : bool
        Keep an event log (computes and evictions with the clock, recursion depth and
        reason) and the materialization stack, for explanations and schedules.
    seed : int
        Seed of the random heuristics.
    pin_extra : iterable of int
        Tensor ids pinned (locked for good) as soon as they are computed (the
        explanation's intervention).
    workspace : list, optional
        Per-operator transient bytes (graph replay; traces have none).
    deadline : float, optional
        ``time.perf_counter()`` value past which the run raises TimeoutError.
    closure_cache : bool
        False rebuilds the region closures at every operator (the reference the tests
        compare the cache with).
    early_stop : bool
        Stop as soon as the run provably cannot end 'ok': the remat compute so far plus a
        lower bound on the remat compute still to come (:meth:`remat_lower_bound`) exceeds
        ``remat_limit``. Outcome then 'thrash_or_oom' (the full run ends in
        'remat_exceeded' or 'oom'), ``failure['kind'] == 'thrash_or_oom'`` with the
        position, clock and bound; clock, peak and evictions are those at the stop, not the
        full run's. Runs that do not stop early are unchanged.
    eq_kernel : bool
        h_DTR-EqClass and the ``ab-eq*`` ablations with integer costs: choose with the
        compiled scan (:mod:`.eqscan`, the same choices); False: the Python scan only.

    After :meth:`run`: ``clock``, ``peak``, ``evictions``, ``eager_evictions``,
    ``remat_compute``, ``remat_count``, ``failure``, ``events`` (record mode), and the
    budget-equivalence interval ``eq_lo`` .. ``eq_hi`` (docs/dtr.md section 3).

    Complexity: O(schedule) commands, each O(arguments), plus per eviction one scan of
    the pool by the heuristic and the heuristic's region or class upkeep.
    """

    def __init__(self, trace: DTRTrace, budget, heuristic: str = "dtr", *, remat_limit=INF,
                 eager: bool = True, record: bool = False, seed: int = 0, pin_extra=(),
                 workspace=None, deadline: float | None = None, closure_cache: bool = True,
                 early_stop: bool = False, eq_kernel: bool = True):
        self.eq_kernel = eq_kernel
        gc_on = gc.isenabled()
        gc.disable()  # see _run: the set-up allocates a few containers per tensor
        try:
            self._init(trace, budget, heuristic, remat_limit, eager, record, seed, pin_extra, workspace, deadline,
                       closure_cache, early_stop)
        finally:
            if gc_on:
                gc.enable()

    def _init(self, trace, budget, heuristic, remat_limit, eager, record, seed, pin_extra, workspace, deadline,
              closure_cache, early_stop) -> None:
        self._init_config(trace, budget, heuristic, remat_limit, eager, record, seed, pin_extra, deadline)
        self._init_state(workspace)
        if self.use_regions:
            self._init_regions(closure_cache)
        if self.use_eq:
            self._init_eq()
        self._init_counters()
        self._init_early(early_stop)
        self._bind_heuristic()
        if not record:
            self.materialize = self._materialize  # no event stack to keep
        if self.lookahead is not None:
            self._build_uses()

    def _init_config(self, trace, budget, heuristic, remat_limit, eager, record, seed, pin_extra,
                     deadline) -> None:
        """The run's parameters and the state its heuristic needs (regions, classes)."""
        self.trace = trace
        self.budget = budget
        self.h = canonical_heuristic(heuristic)
        self.lookahead = horizon(self.h)
        self.pure_belady = self.h == "belady"
        feat = spec(self.h).features
        self.use_regions = feat == "regions"
        self.use_eq = feat == "eq"
        self.use_adj = self.use_regions or self.use_eq
        self.remat_limit = remat_limit
        self.eager = eager
        self.record = record
        self.rng = _random.Random(seed)
        self.pin_extra = frozenset(pin_extra)
        self.deadline = deadline

    def _init_state(self, workspace) -> None:
        """Per-operator and per-tensor tables, and the per-storage state (a storage is
        named by its root tensor's id, simrd's ``root_id``)."""
        trace = self.trace
        n = trace.n_tensors
        ops = trace.ops
        self.o_cost = [op.cost for op in ops]
        self.o_total = [sum(op.sizes) for op in ops]
        self.o_ws = list(workspace) if workspace is not None else None
        self.t_op = trace.tensor_op
        self.t_idx = trace.tensor_index
        self.t_parents = [ops[trace.tensor_op[t]].args for t in range(n)]
        self.t_sibs = [tuple(r for r in ops[trace.tensor_op[t]].results if r != t) for t in range(n)]
        self.t_storage = [-1] * n
        self.t_defined = [False] * n
        self.st_size = [0] * n
        self.st_comp = [0] * n
        self.st_mat = [False] * n
        self.st_rint = [0] * n
        self.st_rext = [0] * n
        self.st_pin = [False] * n
        self.st_tensors: list[list[int]] = [[] for _ in range(n)]
        self.st_last = [-INF] * n
        self.st_const = [False] * n
        self._st_ops: dict = {}  # storage -> operators of its tensors (storages of 2+ tensors)
        if self.use_adj:
            # storage-level adjacency (children / parents storages) and the evicted set
            self.adj_c = [set() for _ in range(n)]
            self.adj_p = [set() for _ in range(n)]
            self.evicted: set = set()
        self.pool: dict[int, None] = {}  # evictable storages, insertion ordered

    def _init_counters(self) -> None:
        """Clock, memory, counters and the budget-equivalence interval."""
        # the run reads its budget only through the tests memory + need > budget; eq_lo is
        # the largest tested value <= budget, eq_hi the smallest tested value > budget, so
        # every budget b with eq_lo <= b < eq_hi answers every test alike and runs the
        # identical replay (see docs/dtr.md, dense sweeps)
        self.eq_lo = 0
        self.eq_hi = INF
        self.memory = 0
        self.peak = 0
        self.clock = 1
        self.model_compute = 0
        self.remat_compute = 0
        self.evictions = 0
        self.eager_evictions = 0
        self.remat_count = 0
        self.pos = 0  # index of the schedule command being executed
        self.depth = 0
        self.events: list[tuple] = []
        self.failure: dict | None = None
        self.mstack: list[tuple[int, bool]] = []  # (tensor, remat) being materialized (record mode)
        self.stack_at_failure: list | None = None

    def _init_early(self, early_stop: bool) -> None:
        """The early stop's tables (cached on the trace): the last schedule position that
        reads each tensor (an operator argument or a PIN), and the issue position of each
        operator. ``_es_next``: the remat compute at which the proof is tried next (INF:
        never)."""
        self.early_stop = bool(early_stop)
        self._es_next = INF
        self.early_checks = 0
        if not early_stop or not (self.remat_limit < INF):
            return
        tab = self.trace.meta.get("_early")
        if tab is None:
            tr = self.trace
            last = [-1] * tr.n_tensors
            issued = [-1] * len(tr.ops)
            once = True
            for k, (kind, x) in enumerate(tr.schedule):
                if kind == COMPUTE:
                    if issued[x] != -1:
                        once = False
                    issued[x] = k
                    for a in tr.ops[x].args:
                        last[a] = k
                elif kind == PIN:
                    last[x] = k
            tab = tr.meta["_early"] = (last, issued, once)
        self._es_last, self._es_issued, once = tab
        # the proof needs every operator issued once (a second COMPUTE of an operator
        # would define its outputs without a recomputation)
        if once:
            self._es_step = max(self.remat_limit / EARLY_CHECKS, 1e-12)
            self._es_next = 0
            # integer costs: remat compute and bound are exact sums (compared exactly with
            # the limit); float costs: a margin for rounding in the runtime's own sum
            self._es_ints = all(isinstance(c, int) for c in self.o_cost)

    def _bind_heuristic(self) -> None:
        """Bind the heuristic's cost functions (:func:`.heuristics.bind`) to this state."""
        self._num, self._cost, scan = bind(self, self.h)
        self.num_dtr, self.cost_dtr, _ = bind(self, "dtr")
        policy = spec(self.h).policy
        if policy == "window" and not getattr(self, "address_aware", False):
            raise MemschedError(f"heuristic {self.h} evicts address windows: give --allocator first-fit or best-fit")
        eqk = getattr(self, "_eqk", None)
        self._lastm = eqk.last_arr if eqk is not None else None
        if policy in ("least", "window"):  # window: the allocator runtime chooses the windows
            self._pick = scan
            if policy == "least" and self.use_eq and self._eqk is not None:
                self._py_pick = scan
                self._pick = self._eq_pick
        elif policy == "random":
            self._pick = self._choose_random
        else:
            self._pick = self._choose_lookahead

    # ------------------------------------------------------------ running
    def run(self) -> str:
        """Replay the whole schedule.

        Returns
        -------
        str
            'ok', 'oom' or 'remat_exceeded'. Raises TimeoutError past ``deadline``.
        """
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 10 * self.trace.n_tensors + 10000))
        try:
            self._run(0)
            return "ok"
        except OOMError:
            return "oom"
        except ThrashError:
            return "remat_exceeded"
        except EarlyStop:
            return EARLY_OUTCOME
        finally:
            sys.setrecursionlimit(old)

    def _run(self, start: int = 0, checkpoint=None, stop: int | None = None) -> None:
        """Execute the schedule's commands from position ``start`` on (up to ``stop``,
        excluded; default: the end); ``checkpoint(self, k)`` (optional) is called before
        command k when k is the position it last returned (the first call at ``start``), and
        returns the next one (-1: no more calls)."""
        # Python's cyclic garbage collector is paused while commands run (and while the
        # state is set up): a replay allocates many small containers, most freed at once by
        # reference counting, and each collection they trigger walks the caller's long-lived
        # objects (the parsed trace, and in a sweep worker every cached trace). No decision
        # depends on it; h_DTR-EqClass replays ran 2-4x faster without it (docs/dtr.md).
        gc_on = gc.isenabled()
        gc.disable()
        try:
            self._run_commands(start, checkpoint, stop)
        finally:
            if gc_on:
                gc.enable()

    def _run_commands(self, start: int, checkpoint, stop: int | None) -> None:
        ops = self.trace.ops
        compute, materialize, pin, release = self.compute, self.materialize, self.pin, self.release
        deadline = self.deadline
        st_rext, t_storage, t_defined = self.st_rext, self.t_storage, self.t_defined
        schedule = self.trace.schedule
        ck = -1 if checkpoint is None else start
        for k in range(start, len(schedule) if stop is None else stop):
            if k == ck:
                ck = checkpoint(self, k)
            kind, x = schedule[k]
            self.pos = k
            if kind == COMPUTE:
                compute(ops[x])
                if deadline is not None and (k & 63) == 0 and time.perf_counter() > deadline:
                    raise TimeoutError("replay exceeded its time limit")
            elif kind == RELEASE:
                release(x)
            elif kind == GET:
                st_rext[t_storage[x]] += 1
            else:  # PIN
                if not t_defined[x]:
                    materialize(x, True)
                pin(x)

    def compute(self, op) -> None:
        """Issue operator ``op`` of the trace: create its outputs (aliases share their
        argument's storage; every output takes one external ref), add its storage edges,
        materialize output 0, then stamp ``last_access = clock`` on every output storage."""
        res = op.results
        args = op.args
        t_storage, st_tensors, st_rext, st_comp = self.t_storage, self.st_tensors, self.st_rext, self.st_comp
        eqk = self._eqk if self.use_eq else None
        for i, t in enumerate(res):
            # output i: its storage (new, or its aliased argument's), one external ref, and
            # the storage's compute (the distinct operators over its tensors)
            a = op.aliases[i]
            if a == -1:
                s = t
                self.st_size[s] = op.sizes[i]
                if op.name.startswith("constant/"):
                    self.st_const[s] = True
                if self.use_eq:
                    self._eq_issue(s)
            else:
                s = t_storage[args[a]]
            t_storage[t] = s
            ts = st_tensors[s]
            ts.append(t)
            st_rext[s] += 1
            c = op.cost if len(ts) == 1 else self._storage_compute_added(s, ts)
            st_comp[s] = c
            if eqk is not None:
                eqk.set_storage(s, self.st_size[s], c)
            if self.use_regions:
                self._set_comp(s, c)
        if self.use_adj and args:
            self._add_edges(op.args, res)
        self.materialize(res[0], False)
        clock = self.clock
        st_last, pin_extra = self.st_last, self.pin_extra
        lastm = self._lastm
        for t in res:
            st_last[t_storage[t]] = clock
            if lastm is not None:
                lastm[t_storage[t]] = clock
            if pin_extra and t in pin_extra:
                self.pin(t)

    def _storage_compute_added(self, s: int, ts):
        """:meth:`_storage_compute` of storage ``s`` after its tensor ``ts[-1]`` was appended,
        from the value before (``st_comp[s]``, over ``ts[:-1]``): the same additions in the
        same order (the distinct operators in tensor order), so the same value for float
        costs too. The operators seen per storage are kept (``_st_ops``, made on a storage's
        second tensor)."""
        seen = self._st_ops.get(s)
        if seen is None:
            seen = self._st_ops[s] = {self.t_op[u] for u in ts[:-1]}
        o = self.t_op[ts[-1]]
        if o in seen:
            return self.st_comp[s]
        seen.add(o)
        return self.st_comp[s] + self.o_cost[o]

    def _storage_compute(self, ts):
        """Compute of a storage holding the tensors ``ts``: the distinct operators over them."""
        seen, c = set(), 0
        for u in ts:
            o = self.t_op[u]
            if o not in seen:
                seen.add(o)
                c += self.o_cost[o]
        return c

    def _add_edges(self, args, res) -> None:
        """Storage edges from each argument's storage to the result storages. Pinned
        storages never get evicted: leaving them out of the adjacency changes no region
        interior, no evicted-neighbour set, and only drops frontier members whose upkeep
        is skipped anyway (see RegionsMixin._regions_materialized)."""
        t_storage, adj_c, adj_p, st_pin = self.t_storage, self.adj_c, self.adj_p, self.st_pin
        rs = [t_storage[t] for t in res]
        for p in args:
            ps = t_storage[p]
            if st_pin[ps]:
                continue
            if self.use_regions:
                self._regions_new_edges(ps, rs)
            elif self.use_eq and self.st_en is not None:
                self._eq_new_edges(ps, rs)
                eqk = self._eqk
                if eqk is not None:  # the compiled scan's neighbour lists
                    ac = adj_c[ps]
                    for r in rs:
                        if r not in ac:
                            eqk.edge(ps, r)
                        if ps not in adj_p[r]:
                            eqk.edge(r, ps)
            adj_c[ps].update(rs)
            for r in rs:
                adj_p[r].add(ps)

    def materialize(self, t: int, remat: bool) -> None:
        """Make tensor ``t`` defined (record mode: keeps the materialization stack)."""
        self.mstack.append((t, remat))
        self._materialize(t, remat)
        self.mstack.pop()

    def _materialize(self, t: int, remat: bool) -> None:
        """Stamp the parents' last access, lock the defined parents, materialize (depth
        first, in argument order) and lock the undefined ones, free memory for the
        operator's outputs if needed, compute, unlock the parents; thrash past the
        rematerialization limit."""
        op = self.t_op[t]
        parents = self.t_parents[t]
        t_storage, t_defined, st_last = self.t_storage, self.t_defined, self.st_last
        clock = self.clock
        for p in parents:
            st_last[t_storage[p]] = clock
        lastm = self._lastm
        if lastm is not None:  # the compiled eq scan's copy (eqscan.EqKernel.last_arr)
            for p in parents:
                lastm[t_storage[p]] = clock
        # lock the defined parents (in order), then materialize and lock the undefined ones
        # (locking defines nothing, so both lists are those of the state on entry)
        st_rint, pool = self.st_rint, self.pool
        undefined = None
        for p in parents:
            if t_defined[p]:
                s = t_storage[p]
                if st_rint[s] == 0:
                    del pool[s]
                st_rint[s] += 1
            elif undefined is None:
                undefined = [p]
            else:
                undefined.append(p)
        if undefined:
            lock = self._lock
            self.depth += 1
            for p in undefined:
                if not t_defined[p]:
                    self.materialize(p, True)
                lock(t_storage[p])
            self.depth -= 1
        need = self.o_total[op]
        if self.o_ws is not None:
            need += self.o_ws[op]
        v = self.memory + need
        if v > self.budget:
            self._free(need, op)
        elif v > self.eq_lo:
            self.eq_lo = v
        self._compute(t, op, remat)
        for p in parents:
            s = t_storage[p]
            st_rint[s] -= 1
            if st_rint[s] == 0:
                pool[s] = None
        if self.remat_compute > self.remat_limit:
            self.failure = {"kind": "remat_exceeded", "op": op, "clock": self.clock,
                            "remat_compute": self.remat_compute, "remat_limit": self.remat_limit}
            self.stack_at_failure = list(self.mstack)
            raise ThrashError()
        if self.remat_compute >= self._es_next:
            # after the operator is complete (its siblings defined, its parents unlocked)
            self._early_check()

    def _compute(self, t: int, op: int, remat: bool) -> None:
        """Run operator ``op`` to define ``t`` (and its undefined siblings): clock += cost,
        memory += all outputs (already defined siblings subtracted again), peak sampled;
        the newly material storages join the pool and the heuristic's state is updated."""
        t_defined, t_storage, st_mat = self.t_defined, self.t_storage, self.st_mat
        sibs = self.t_sibs[t]
        if sibs:
            dup = [u for u in sibs if t_defined[u]]
            rsib = [u for u in sibs if not t_defined[u]]
            rst = [t_storage[u] for u in sibs + (t,) if not st_mat[t_storage[u]]]
        else:
            dup = rsib = ()
            s0 = t_storage[t]
            rst = () if st_mat[s0] else (s0,)
        cost = self.o_cost[op]
        self.clock += cost
        self.memory += self.o_total[op]
        m = self.memory if self.o_ws is None else self.memory + self.o_ws[op]
        if m > self.peak:
            self.peak = m
        st_mat[t_storage[t]] = True
        t_defined[t] = True
        if remat:
            self._count_remat(cost)
        else:
            self.model_compute += cost
        for u in rsib:
            st_mat[t_storage[u]] = True
            t_defined[u] = True
        if dup:
            sizes = self.trace.ops[op].sizes
            t_idx = self.t_idx
            for u in dup:
                self.memory -= sizes[t_idx[u]]
        if self.record:
            self.events.append(("compute", op, remat, self.depth, self.clock, self.memory,
                                tuple(dup), self.pos))
        if rst:
            # the storages rst became material: into the pool, out of the evicted set, and
            # the regions or classes updated
            pool = self.pool
            for s in rst:
                if s not in pool:
                    pool[s] = None
            if self.use_adj:
                self.evicted.difference_update(rst)
            if self.use_regions:
                self._regions_materialized(rst)
            if self.use_eq:
                self._eq_materialized(rst)

    def _count_remat(self, cost) -> None:
        self.remat_compute += cost
        self.remat_count += 1
        if self.deadline is not None and (self.remat_count & 255) == 0:
            if time.perf_counter() > self.deadline:
                raise TimeoutError("replay exceeded its time limit")

    def remat_lower_bound(self):
        """A lower bound on the rematerialization compute the rest of this run adds if it
        runs to the end (docs/dtr.md section 3, "Early stop"): the summed cost of the
        distinct operators that must run again. Needed now: every tensor that exists, is
        undefined, and is read at or after the current schedule position (an argument of
        an operator issued there or later, or a PIN); and, transitively, every undefined
        argument of a needed tensor's operator (that operator's recomputation reads it).
        An undefined tensor becomes defined only when its own operator runs (siblings
        together, alias outputs by their view operator), and an issued operator runs
        again only as a recomputation, so each needed operator adds its cost to the
        remat compute at least once. The operator of the command being executed
        (computed as a model step, not a recomputation) is left out.

        Complexity: O(n) over the n tensors plus the closure."""
        pos = self.pos
        kind, x = self.trace.schedule[pos]
        cur = x if kind == COMPUTE else -1
        last, t_defined, t_storage, t_op, t_parents, o_cost = (self._es_last, self.t_defined, self.t_storage,
                                                               self.t_op, self.t_parents, self.o_cost)
        stack = [t for t, d, s, r in zip(range(len(last)), t_defined, t_storage, last) if not d and s != -1 and r >= pos]
        seen = set()
        c = 0
        while stack:
            t = stack.pop()
            o = t_op[t]
            if o == cur or o in seen:
                continue
            seen.add(o)
            c += o_cost[o]
            for p in t_parents[t]:
                if not t_defined[p]:
                    stack.append(p)
        return c

    def _early_check(self) -> None:
        """Try the early-stop proof (called at the end of _materialize when the remat
        compute reached ``_es_next``, once the operator and its siblings are defined): stop with EarlyStop when remat compute + lower bound >
        limit. Left to the ordinary thrash test once the limit itself is crossed (that
        run ends at this operator with its own outcome)."""
        rc, limit = self.remat_compute, self.remat_limit
        self._es_next = rc + self._es_step
        if rc > limit or rc + self.model_compute <= limit:
            return  # crossed already, or the bound (<= model compute) cannot reach the limit
        self.early_checks += 1
        lb = self.remat_lower_bound()
        total = rc + lb
        if total > limit and (self._es_ints or total > limit + 1e-9 * max(1.0, abs(limit))):
            kind, x = self.trace.schedule[self.pos]
            self.failure = {"kind": EARLY_OUTCOME, "pos": self.pos, "clock": self.clock, "remat_compute": rc,
                            "lower_bound": lb, "remat_limit": limit, "early_stop": True,
                            **({"op": x} if kind == COMPUTE else {})}
            self.stack_at_failure = list(self.mstack)
            raise EarlyStop()

    def _lock(self, s: int) -> None:
        if self.st_rint[s] == 0:
            del self.pool[s]
        self.st_rint[s] += 1

    def _unlock(self, s: int) -> None:
        self.st_rint[s] -= 1
        if self.st_rint[s] == 0:
            self.pool[s] = None

    def pin(self, t: int) -> None:
        """Lock tensor ``t``'s (material) storage for good."""
        s = self.t_storage[t]
        if not self.st_mat[s]:
            raise AssertionError(f"cannot pin tensor {t} with an immaterial storage")
        if self.st_pin[s]:
            return
        self._lock(s)
        self.st_pin[s] = True
        if self.use_regions:
            self._changed(s)

    def release(self, t: int) -> None:
        """Drop one external ref of ``t``'s storage; at 0 an unpinned material storage is
        evicted at once in the eager runtime."""
        s = self.t_storage[t]
        self.st_rext[s] -= 1
        if self.st_rext[s] == 0 and self.st_mat[s] and not self.st_pin[s] and self.eager:
            self._evict(s, "eager")

    # ------------------------------------------------------------ eviction
    def _free(self, need, op: int) -> None:
        """Evict by the heuristic until ``memory + need <= budget`` (OOM when the pool is
        empty), keeping the budget-equivalence interval up to date."""
        pool = self.pool
        budget = self.budget
        # the tested values decrease along the loop: the last one over the budget is its
        # smallest (eq_hi), the one that ends the loop its only one <= budget (eq_lo)
        over = INF
        while True:
            v = self.memory + need
            if v <= budget:
                break
            over = v
            if not pool:
                if over < self.eq_hi:
                    self.eq_hi = over
                self.failure = {"kind": "oom", "op": op, "requested": need, "memory": self.memory,
                                "short": self.memory + need - budget, "clock": self.clock,
                                "depth": self.depth, "pos": self.pos}
                self.stack_at_failure = list(self.mstack)
                raise OOMError()
            self._evict(self._choose(), "pressure")
        if over < self.eq_hi:
            self.eq_hi = over
        if v > self.eq_lo:
            self.eq_lo = v

    def _evict(self, s: int, why: str) -> None:
        """Evict storage ``s`` (``why``: pressure, eager, fragmentation)."""
        self.st_mat[s] = False
        self.memory -= self.st_size[s]
        self.pool.pop(s, None)
        t_defined = self.t_defined
        for u in self.st_tensors[s]:
            t_defined[u] = False
        self.evictions += 1
        if why == "eager":
            self.eager_evictions += 1
        if self.record:
            self.events.append(("evict", s, why, self.depth, self.clock, self.memory, self.pos))
        if self.use_adj:
            self.evicted.add(s)
        if self.use_regions:
            self._regions_evicted(s)
        if self.use_eq:
            self._eq_evicted(s)

    # ------------------------------------------------------------ heuristics
    def _choose(self) -> int:
        """The storage the heuristic evicts now (the pool is not empty)."""
        return self._pick(self.pool, self.clock)

    def _choose_random(self, pool, clock) -> int:
        keys = list(pool)
        return keys[self.rng.randrange(0, len(keys))]

    def cost_of(self, s: int):
        """The heuristic's eviction cost of storage ``s`` now (for explanations; h_DTR for
        the lookahead policies, 0 for the random ones)."""
        return self._cost(s, self.clock)

    def cost_of_dtr(self, s: int):
        """h_DTR of storage ``s`` now (regions heuristics only)."""
        return self.cost_dtr(s, self.clock)

    # ------------------------------------------------------------ forks
    # per-tensor / per-storage lists whose items are immutable (a list copy is a full copy)
    _LISTS = ("t_storage", "t_defined", "st_size", "st_comp", "st_mat", "st_rint", "st_rext", "st_pin", "st_last",
              "st_const", "events", "mstack", "rg_int", "rg_front", "rg_c", "rr_int", "rr_front", "rr_c", "vi_f",
              "vi_r", "st_ecn", "uf_parent", "uf_val")

    def fork(self, budget=None, deadline=None) -> "Runtime":
        """A copy of this runtime that runs on independently: every mutable part of the
        state is copied (lists, the pool, adjacency sets, closure caches and logs, weight
        tables, union-find, the random generator's state); the trace and the tables built
        from it are shared (never mutated). Bound functions are bound again to the copy.

        Parameters
        ----------
        budget : int, optional
            The copy's budget (default: this one's). Resuming a copy taken at a top-level
            position k with another budget b' makes exactly the decisions of an independent
            run at b' iff ``eq_lo <= b' < eq_hi`` at k (every budget test so far answers
            alike; docs/dtr.md, prefix sharing).
        deadline : float, optional
            The copy's deadline (``time.perf_counter()`` value); default none.

        Returns
        -------
        Runtime
            Run it on with :meth:`resume`.

        Complexity: O(n) for n tensors plus the size of the closure caches and logs.
        """
        if type(self) is not Runtime:
            raise TypeError(f"{type(self).__name__} cannot be forked (only the byte-counting Runtime)")
        d = dict(self.__dict__)
        d.pop("materialize", None)
        for name in self._LISTS:
            if name in d:
                d[name] = d[name][:]
        d["st_tensors"] = [x[:] for x in self.st_tensors]
        d["_st_ops"] = {k: set(v) for k, v in self._st_ops.items()}
        d["pool"] = dict(self.pool)
        rng = _random.Random()
        rng.setstate(self.rng.getstate())
        d["rng"] = rng
        if self.use_eq and self.st_en is not None:
            d["st_en"] = [set(x) for x in self.st_en]
            if self._eqk is not None:
                d["_eqk"] = self._eqk.copy()
        if self.use_adj:
            d["adj_c"] = [set(x) for x in self.adj_c]
            d["adj_p"] = [set(x) for x in self.adj_p]
            d["evicted"] = set(self.evicted)
        if self.use_regions:
            d["cl_f"], d["cl_r"] = dict(self.cl_f), dict(self.cl_r)
            d["log_f"], d["log_r"] = self.log_f.copy(), self.log_r.copy()
            d["comp_np"] = self.comp_np.copy()
            if self._ints:
                d["wtab"] = self.wtab.copy()
        d["budget"] = self.budget if budget is None else budget
        d["deadline"] = deadline
        new = object.__new__(Runtime)
        new.__dict__.update(d)
        if self.use_regions:
            new._bind_regions()
        new._bind_heuristic()
        if not self.record:
            new.materialize = new._materialize
        return new

    def resume(self, start: int, checkpoint=None, stop: int | None = None) -> str | None:
        """Run the schedule on from position ``start`` (a fork taken there); as :meth:`run`.
        ``checkpoint(rt, k) -> next k or -1``: called before command k at the positions it
        asks for (see :mod:`.prefix`). ``stop``: pause before command ``stop`` and return
        None if the run is still going there (resume it later from ``stop``)."""
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 10 * self.trace.n_tensors + 10000))
        try:
            self._run(start, checkpoint, stop)
            return "ok" if stop is None or stop >= len(self.trace.schedule) else None
        except OOMError:
            return "oom"
        except ThrashError:
            return "remat_exceeded"
        except EarlyStop:
            return EARLY_OUTCOME
        finally:
            sys.setrecursionlimit(old)

    # ------------------------------------------------------------ results
    def summary(self) -> dict:
        return {"clock": self.clock, "peak": self.peak, "evictions": self.evictions,
                "eager_evictions": self.eager_evictions, "remat_compute": self.remat_compute,
                "model_compute": self.model_compute, "recomputations": self.remat_count}
