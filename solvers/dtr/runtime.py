"""DTR runtime with simrd's semantics (RuntimeV2EagerOptimized, RuntimeV2, V1 baseline).

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
"""
from __future__ import annotations

import bisect
import math
import random as _random
import sys

from memsched.formulations.errors import MemschedError
from memsched.instances.dtr_trace import COMPUTE, GET, PIN, RELEASE, DTRTrace

__all__ = ["OOMError", "ThrashError", "Runtime", "baseline", "HEURISTICS", "heuristic_names",
           "canonical_heuristic"]

INF = math.inf


class OOMError(Exception):
    """The pool is empty and the allocation does not fit (simrd's MemoryError)."""


class ThrashError(Exception):
    """Rematerialization compute exceeded the limit (simrd's RematExceededError)."""


class RegionInvariantError(MemschedError, AssertionError):
    """simrd's Region.absorb precondition (an evicted storage lies on the frontier of every
    region that absorbs it) does not hold: simrd asserts the same condition and stops with an
    AssertionError there. Seen only on synthetic traces whose aliases tie storages into
    cycles; the replay has no simrd-defined result, so it is reported as an input error."""


class _Cycle(Exception):
    """The evicted storage graph has a cycle (closure memo not applicable)."""


_LOG_BLOCK = 32


class _Log(list):
    """A log of closure updates (mark, add, checks) with, per block of _LOG_BLOCK
    records, the union of their marks (``bm``)."""
    __slots__ = ("bm",)

    def __init__(self):
        super().__init__()
        self.bm: list = []

    def add(self, rec) -> None:
        if len(self) % _LOG_BLOCK:
            self.bm[-1] |= rec[0]
        else:
            self.bm.append(rec[0])
        self.append(rec)

    def reset(self) -> None:
        self.clear()
        self.bm.clear()


def _storage_dag(trace: DTRTrace) -> bool:
    """True when the storage graph of all of the trace's computed operators (argument storage ->
    result storage, self-loops left out) is acyclic (Kahn's algorithm). Every adjacency a
    replay builds is a subgraph of it."""
    n = trace.n_tensors
    st = list(range(n))
    succ: dict = {}
    for kind, x in trace.schedule:
        if kind != COMPUTE:
            continue
        op = trace.ops[x]
        for i, t in enumerate(op.results):
            a = op.aliases[i]
            if a != -1:
                st[t] = st[op.args[a]]
        rs = {st[t] for t in op.results}
        for p in op.args:
            ps = st[p]
            for r in rs:
                if r != ps:
                    succ.setdefault(ps, set()).add(r)
    indeg: dict = {}
    for ps, rs in succ.items():
        for r in rs:
            indeg[r] = indeg.get(r, 0) + 1
    stack = [x for x in succ if x not in indeg]
    seen = 0
    while stack:
        x = stack.pop()
        seen += 1
        for r in succ.get(x, ()):
            indeg[r] -= 1
            if indeg[r] == 0:
                stack.append(r)
    nodes = set(succ) | set(indeg)
    return seen == len(nodes)


# name -> (simrd class name, features)   features: 'regions', 'eq'
HEURISTICS = {
    "dtr": ("DTR", "regions"),
    "dtr-eqclass": ("DTREqClass", "eq"),
    "dtr-local": ("DTRLocal", ""),
    "lru": ("LRU", ""),
    "size": ("LargestStorage", ""),
    "msps": ("MSPS", "regions"),
    "random": ("RandomStorage", ""),
    # ablations: {e*, eq, local, nocost} x {size} x {staleness}
    "ab-e-size-stale": ("AbESizeStale", "regions"),
    "ab-e-size": ("AbESize", "regions"),
    "ab-e-stale": ("AbEStale", "regions"),
    "ab-e": ("AbE", "regions"),
    "ab-eq-size-stale": ("AbEqSizeStale", "eq"),
    "ab-eq-size": ("AbEqSize", "eq"),
    "ab-eq-stale": ("AbEqStale", "eq"),
    "ab-eq": ("AbEq", "eq"),
    "ab-local-size-stale": ("AbLocalSizeStale", ""),
    "ab-local-size": ("AbLocalSize", ""),
    "ab-local-stale": ("AbLocalStale", ""),
    "ab-local": ("AbLocal", ""),
    "ab-size-stale": ("AbSizeStale", ""),
    "ab-size": ("AbSize", ""),
    "ab-stale": ("AbStale", ""),
    "ab-random": ("AbRandom", ""),
    # lookahead (not in simrd): belady = H=inf; lookahead-K = H=K operators
    "belady": (None, "regions"),
    "lookahead-inf": (None, "regions"),
}
_BY_CLASS = {v[0]: k for k, v in HEURISTICS.items() if v[0]}


def heuristic_names() -> list[str]:
    return list(HEURISTICS) + ["lookahead-K"]


def canonical_heuristic(name: str) -> str:
    """Normalize a heuristic name (memsched name, simrd class name, or lookahead-K)."""
    if name in HEURISTICS:
        return name
    if name in _BY_CLASS:
        return _BY_CLASS[name]
    low = name.lower()
    if low in HEURISTICS:
        return low
    if low.startswith("lookahead-"):
        k = low.split("-", 1)[1]
        if k in ("inf", "infinity"):
            return "lookahead-inf"
        if k.isdigit():
            return "dtr" if int(k) == 0 else f"lookahead-{int(k)}"
    from memsched.formulations import MemschedError

    raise MemschedError(f"unknown DTR heuristic {name!r}; choose from {', '.join(heuristic_names())}")


class Runtime:
    """One replay of a trace under a byte budget. Use :meth:`run`.

    ``eager=True`` is RuntimeV2EagerOptimized (the pareto runtime), ``eager=False`` plain
    RuntimeV2. ``record=True`` keeps an event log (computes and evictions with the
    clock, recursion depth and reason) for explanations and schedule extraction.
    ``pin_extra`` are tensor ids pinned (locked for good) as soon as they are computed
    (the explanation's intervention). ``workspace`` (per op) and ``free_on_release``
    (tensor ids) serve graph replay only; traces have neither.
    """

    def __init__(self, trace: DTRTrace, budget, heuristic: str = "dtr", *, remat_limit=INF,
                 eager: bool = True, record: bool = False, seed: int = 0, pin_extra=(),
                 workspace=None, free_on_release=(), deadline: float | None = None,
                 closure_cache: bool = True):
        self.trace = trace
        self.budget = budget
        self.h = canonical_heuristic(heuristic)
        self.lookahead = None
        self.pure_belady = self.h == "belady"
        if self.pure_belady or self.h == "lookahead-inf":
            self.lookahead = INF
        elif self.h.startswith("lookahead-"):
            self.lookahead = int(self.h.split("-")[1])
        feat = HEURISTICS["belady" if self.lookahead is not None else self.h][1]
        self.use_regions = feat == "regions"
        self.use_eq = feat == "eq"
        self.remat_limit = remat_limit
        self.eager = eager
        self.record = record
        self.rng = _random.Random(seed)
        self.pin_extra = frozenset(pin_extra)
        self.deadline = deadline
        n = trace.n_tensors
        ops = trace.ops
        self.o_cost = [op.cost for op in ops]
        self.o_total = [sum(op.sizes) for op in ops]
        self.o_ws = list(workspace) if workspace is not None else None
        self.free_on_release = frozenset(free_on_release)
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
        self.use_adj = self.use_regions or self.use_eq
        if self.use_adj:
            # storage-level adjacency (children / parents storages) and the evicted set
            self.adj_c = [set() for _ in range(n)]
            self.adj_p = [set() for _ in range(n)]
            self.evicted: set = set()
        if self.use_regions:
            # regions as bitmasks (Python ints) over a dense numbering of the storages:
            # storage roots (outputs that alias nothing) numbered in increasing id order, so
            # a mask is narrower than one over tensor ids and lists its storages in the same
            # order (sbit[s] = 1 << dense(s), d2s[dense] = s)
            self.rg_int = [0] * n
            self.rg_front = [0] * n
            self.rg_c = [0] * n
            self.rr_int = [0] * n
            self.rr_front = [0] * n
            self.rr_c = [0] * n
            import numpy as np

            roots = sorted(t for op in ops for i, t in enumerate(op.results) if op.aliases[i] == -1)
            self.d2s = roots
            self.s2d = s2d = [-1] * n
            self.sbit = sbit = [0] * n
            for k, s in enumerate(roots):
                s2d[s] = k
                sbit[s] = 1 << k
            m = len(roots)
            self._ints = ints = all(isinstance(c, int) for c in self.o_cost)
            self._np = np
            self._nbytes = (m + 7) // 8
            self.comp_np = np.zeros(m, dtype=np.int64 if ints else np.float64)
            if ints:
                # weight table: wtab[256 * i + v] = compute of the storages whose bits are set
                # in byte value v at byte i of a mask (exact integer sums, any order)
                self.wtab = np.zeros(256 * max(self._nbytes, 1), dtype=np.int64)
                self.woff = np.arange(0, 256 * max(self._nbytes, 1), 256, dtype=np.int64)
                vals = np.arange(256)
                self.wbyte = [vals[(vals >> b) & 1 == 1] for b in range(8)]
            # forward regions are read only for h_DTR-like costs: MSPS reads the backward
            # region's compute and both frontiers, so its forward closures keep frontiers only
            self.fwd_interior = self.h != "msps"
            # a closure is one int: frontier in bits [0, m), interior in bits [m, 2m)
            # (ibit[s] = sbit[s] << m), so composing closures is a single OR
            self._W = m
            self._fmask = (1 << m) - 1
            ibit = [b << m for b in sbit]
            self.ibit_f = ibit if self.fwd_interior else [0] * n
            self.ibit_r = ibit
            # can the storage graph have a cycle (aliasing)? If no trace operator's storages
            # close one, no evicted subgraph can, and the closures skip the cycle check
            self._acyclic = _storage_dag(trace)
            # closures of evicted storages (forward over adj_c, backward over adj_p), kept
            # across operators and invalidated exactly (see _changed)
            # (closure_cache=False: rebuilt per operator, the reference the tests compare with)
            self.closure_cache = closure_cache
            self.cl_f: dict = {}
            self.cl_r: dict = {}
            # pending exact updates of cached closures (see _evicted_now, _materialized): per
            # direction a log of records and, per cached closure, the log position it is up
            # to date with
            self.log_f = _Log()
            self.log_r = _Log()
            self.vi_f = [0] * n
            self.vi_r = [0] * n
            self._bind_regions()
        if self.use_eq:
            self.st_ecn = [-1] * n
            self.uf_parent: list[int] = []
            self.uf_val: list = []
        self.pool: dict[int, None] = {}
        # budget equivalence interval: the run reads its budget only through the tests
        # memory + need > budget; eq_lo is the largest tested value <= budget, eq_hi the
        # smallest tested value > budget, so every budget b with eq_lo <= b < eq_hi answers
        # every test alike and runs the identical replay (see docs/dtr.md, dense sweeps)
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
        self._ops_done = 0
        if not record:
            self.materialize = self._materialize  # no event stack to keep
        if self.lookahead is not None:
            self._build_uses()

    # ------------------------------------------------------------ lookahead
    def _build_uses(self) -> None:
        uses: list[list[int]] = [[] for _ in range(self.trace.n_tensors)]
        ops = self.trace.ops
        for k, (kind, x) in enumerate(self.trace.schedule):
            if kind == COMPUTE:
                for a in ops[x].args:
                    if not uses[a] or uses[a][-1] != k:
                        uses[a].append(k)
            elif kind == PIN:
                uses[x].append(k)
        self.t_uses = uses
        # schedule position -> number of COMPUTE commands before it (distance in operators)
        cnt, acc = [], 0
        for kind, _ in self.trace.schedule:
            cnt.append(acc)
            if kind == COMPUTE:
                acc += 1
        cnt.append(acc)
        self.op_rank = cnt

    def _next_use(self, s: int) -> float:
        pos, uses, best = self.pos, self.t_uses, INF
        for t in self.st_tensors[s]:
            u = uses[t]
            i = bisect.bisect_left(u, pos)
            if i < len(u) and u[i] < best:
                best = u[i]
        return best

    # ------------------------------------------------------------ running
    def run(self) -> str:
        """Replay the whole schedule; returns 'ok', 'oom' or 'remat_exceeded'
        (raises TimeoutError past ``deadline``)."""
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 10 * self.trace.n_tensors + 10000))
        try:
            self._run()
            return "ok"
        except OOMError:
            return "oom"
        except ThrashError:
            return "remat_exceeded"
        finally:
            sys.setrecursionlimit(old)

    def _run(self) -> None:
        import time

        ops = self.trace.ops
        compute, materialize, pin, release = self.compute, self.materialize, self.pin, self.release
        deadline = self.deadline
        st_rext, t_storage, t_defined = self.st_rext, self.t_storage, self.t_defined
        for k, (kind, x) in enumerate(self.trace.schedule):
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
        res = op.results
        args = op.args
        aliases = op.aliases
        t_storage, st_tensors, st_rext, st_comp = self.t_storage, self.st_tensors, self.st_rext, self.st_comp
        regions = self.use_regions
        for i, t in enumerate(res):
            a = aliases[i]
            if a == -1:
                s = t
                self.st_size[s] = op.sizes[i]
                if op.name.startswith("constant/"):
                    self.st_const[s] = True
                if self.use_eq:
                    # simrd gives a new storage an equivalence-class node of value 0 when
                    # the operator is issued, and the storage is immaterial until the
                    # operator runs: a parent evicted during the parents' recomputation
                    # cascade counts it as an evicted neighbour and merges its node into
                    # its class, whose value then drops by the storage's compute when the
                    # operator runs (as for any rematerialized storage)
                    self.st_ecn[s] = len(self.uf_parent)
                    self.uf_parent.append(-1)
                    self.uf_val.append(0)
                    self.evicted.add(s)
            else:
                s = t_storage[args[a]]
            t_storage[t] = s
            ts = st_tensors[s]
            ts.append(t)
            st_rext[s] += 1
            # storage compute: distinct ops over its tensors
            if len(ts) == 1:
                st_comp[s] = op.cost
                if regions:
                    self._set_comp(s, op.cost)
            else:
                seen, c = set(), 0
                for u in ts:
                    o = self.t_op[u]
                    if o not in seen:
                        seen.add(o)
                        c += self.o_cost[o]
                st_comp[s] = c
                if regions:
                    self._set_comp(s, c)
        if self.use_adj and args:
            adj_c, adj_p = self.adj_c, self.adj_p
            rs = [t_storage[t] for t in res]
            st_pin = self.st_pin
            for p in args:
                ps = t_storage[p]
                if st_pin[ps]:
                    # pinned storages never get evicted: leaving them out of the adjacency
                    # changes no region interior, no evicted-neighbour set, and only drops
                    # frontier members whose upkeep is skipped anyway (see _compute)
                    continue
                if self.use_regions:
                    # new edges ps -> rs: the forward closure of ps and the backward closures
                    # of rs (and every cached closure built on them) are stale
                    self._drop((ps,), self.cl_f, adj_p)
                    self._drop(rs, self.cl_r, adj_c)
                adj_c[ps].update(rs)
                for r in rs:
                    adj_p[r].add(ps)
        self.materialize(res[0], False)
        clock = self.clock
        st_last, pin_extra = self.st_last, self.pin_extra
        for t in res:
            st_last[t_storage[t]] = clock
            if pin_extra and t in pin_extra:
                self.pin(t)

    def materialize(self, t: int, remat: bool) -> None:
        if self.record:
            self.mstack.append((t, remat))
            self._materialize(t, remat)
            self.mstack.pop()
        else:
            self._materialize(t, remat)

    def _materialize(self, t: int, remat: bool) -> None:
        op = self.t_op[t]
        parents = self.t_parents[t]
        t_storage, t_defined, st_last = self.t_storage, self.t_defined, self.st_last
        clock = self.clock
        for p in parents:
            st_last[t_storage[p]] = clock
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

    def _compute(self, t: int, op: int, remat: bool) -> None:
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
            self.remat_compute += cost
            self.remat_count += 1
            if self.deadline is not None and (self.remat_count & 255) == 0:
                import time

                if time.perf_counter() > self.deadline:
                    raise TimeoutError("replay exceeded its time limit")
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
        pool, st_rint = self.pool, self.st_rint
        for s in rst:
            assert st_rint[s] == 0
            if s not in pool:
                pool[s] = None
        if rst:
            if self.use_adj:
                self.evicted.difference_update(rst)
            if self.use_regions:
                aff = aff_rev = 0
                if not self.closure_cache:
                    self.cl_f.clear()
                    self.cl_r.clear()
                    self.log_f.reset()
                    self.log_r.reset()
                if self._acyclic and len(rst) == 1:
                    self._materialized(rst[0])
                else:
                    changed = self._changed
                    for s in rst:
                        changed(s)
                rb_f, rb_r = self._rb_f, self._rb_r
                rr_front, rg_front = self.rr_front, self.rg_front
                for s in rst:
                    rb_f(s)
                    rb_r(s)
                    aff |= rr_front[s]
                    aff_rev |= rg_front[s]
                # a pinned storage is never evicted again, so its own regions are never
                # read for a decision (costs are taken over the pool, absorption reads the
                # evicted storage's regions): their upkeep is skipped. The rebuilds below
                # are independent of each other (each reads only the material state and
                # the closures), so the masks are walked from the top bit down.
                st_pin, d2s, sbit = self.st_pin, self.d2s, self.sbit
                while aff:
                    x = d2s[aff.bit_length() - 1]
                    aff ^= sbit[x]
                    if not st_pin[x]:
                        rb_f(x)
                while aff_rev:
                    x = d2s[aff_rev.bit_length() - 1]
                    aff_rev ^= sbit[x]
                    if not st_pin[x]:
                        rb_r(x)
            if self.use_eq:
                ecn = self.st_ecn
                for s in rst:
                    e = ecn[s]
                    if e != -1:
                        r = self._find(e)
                        self.uf_val[r] = self.uf_val[r] - self.st_comp[s]
                        ecn[s] = -1

    def _lock(self, s: int) -> None:
        if self.st_rint[s] == 0:
            del self.pool[s]
        self.st_rint[s] += 1

    def _unlock(self, s: int) -> None:
        self.st_rint[s] -= 1
        if self.st_rint[s] == 0:
            self.pool[s] = None

    def pin(self, t: int) -> None:
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
        s = self.t_storage[t]
        self.st_rext[s] -= 1
        if self.st_rext[s] == 0 and self.st_mat[s]:
            if not self.st_pin[s]:
                if self.eager:
                    self._evict(s, "eager")
            elif s in self.free_on_release:
                # graph replay: an unpinned graph input dies after its last use
                self.st_mat[s] = False
                self.memory -= self.st_size[s]
                for u in self.st_tensors[s]:
                    self.t_defined[u] = False
                if self.use_adj:
                    self.evicted.add(s)
                if self.use_regions:
                    self._changed(s)
                if self.record:
                    self.events.append(("evict", s, "input", self.depth, self.clock, self.memory, self.pos))

    # ------------------------------------------------------------ eviction
    def _free(self, need, op: int) -> None:
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
            if self._acyclic:
                self._evicted_now(s)
            else:
                self._changed(s)
            rg_front = self.rg_front
            rr_front = self.rr_front
            st_pin = self.st_pin
            self._absorb_into(s, rr_front[s], True)
            self._absorb_into(s, rg_front[s], False)  # read after the first pass, as simrd does
            self.rg_int[s] = 0
            rg_front[s] = 0
            self.rg_c[s] = 0
            self.rr_int[s] = 0
            rr_front[s] = 0
            self.rr_c[s] = 0
        if self.use_eq:
            node = len(self.uf_parent)
            self.uf_parent.append(-1)
            self.uf_val.append(self.st_comp[s])
            self.st_ecn[s] = node
            for n in self._evicted_neighbors(s):
                l = self._find(self.st_ecn[n])
                r = self._find(node)
                if l != r:
                    self.uf_parent[l] = r
                    self.uf_val[r] = self.uf_val[l] + self.uf_val[r]

    def _find(self, e: int) -> int:
        par = self.uf_parent
        root = e
        while par[root] != -1:
            root = par[root]
        while par[e] != -1 and par[e] != root:
            nxt = par[e]
            par[e] = root
            e = nxt
        return root

    def _evicted_neighbors(self, s: int) -> set:
        out = (self.adj_p[s] | self.adj_c[s]) & self.evicted
        out.discard(s)
        return out

    def _eq_cost(self, s: int):
        find, val = self._find, self.uf_val
        ecn = self.st_ecn
        c = self.st_comp[s]
        for r in {find(ecn[n]) for n in self._evicted_neighbors(s)}:
            c = c + val[r]
        return c

    # regions --------------------------------------------------------------
    def _changed(self, x: int) -> None:
        """Storage ``x`` changed state (materialized, evicted or pinned). A cached closure
        of an evicted storage y reads only y's adjacency, the state of y's neighbours and
        the cached closures of y's evicted neighbours; so exactly the closures of x itself,
        of x's neighbours (in the traversal's reverse direction) and, transitively, of the
        cached closures built on those are dropped. Everything else stays valid."""
        cf, cr = self.cl_f, self.cl_r
        cf.pop(x, None)
        cr.pop(x, None)
        if cf:
            self._drop(self.adj_p[x], cf, self.adj_p)
        if cr:
            self._drop(self.adj_c[x], cr, self.adj_c)

    def _evicted_now(self, x: int) -> None:
        """Storage ``x`` (material, unpinned) was just evicted; acyclic storage graph only.
        A cached closure that held x as a frontier member (exactly those that _changed
        would drop) now reaches x and x's closure: c' = (c without x's frontier bit) |
        clo(x), and a closure without x's frontier bit is unchanged. clo(x) reads only x's
        descendants, which cannot reach x (no cycle), so their cached closures are exact; x
        is cached by it (so that later drops walk through x as before). The update is
        logged for lazy application (see _materialized)."""
        cf, cr = self.cl_f, self.cl_r
        cf.pop(x, None)
        cr.pop(x, None)
        sx = self.sbit[x]
        for cache, dep, clo, log, vi in ((cf, self.adj_p, self._clo_f, self.log_f, self.vi_f),
                                         (cr, self.adj_c, self._clo_r, self.log_r, self.vi_r)):
            if not cache:
                log.reset()  # nothing cached: closures cached from now on start afresh
                continue
            for y in dep[x]:
                if y in cache:
                    break
            else:
                continue  # no cached closure has x on its frontier
            log.add((sx, clo(x), ()))
            vi[x] = len(log)

    def _materialized(self, x: int) -> None:
        """Storage ``x`` (evicted or not yet computed) was just made material, alone;
        acyclic storage graph only. In a direction where every neighbour of x is material
        (x is a leaf of the evicted graph there; in recomputation cascades this is the
        rule), a cached closure that held x in its evicted set loses exactly x from it
        (nothing else was reached through x), gains x as a frontier member, and keeps x's
        neighbour w on its frontier only if some storage still in its evicted set has w as
        a neighbour (``nb``: the evicted-set bits of w's neighbours in the other
        direction); a closure without x is unchanged. Instead of dropping the closures that
        _changed would drop (and recomputing them when read), this update is appended to
        the direction's log and applied to a cached closure when it is next read
        (_replay). It is exact because a cached closure that is not dropped changes only by
        these updates, applied in order. Otherwise (x not a leaf there, or forward closures
        without evicted sets under MSPS) the closures are dropped as _changed does."""
        cf, cr = self.cl_f, self.cl_r
        cf.pop(x, None)
        cr.pop(x, None)
        st_mat, st_pin, sbit = self.st_mat, self.st_pin, self.sbit
        for cache, adj, dep, ibit, has_int, log in (
                (cf, self.adj_c, self.adj_p, self.ibit_f, self.fwd_interior, self.log_f),
                (cr, self.adj_p, self.adj_c, self.ibit_r, True, self.log_r)):
            if not cache:
                log.reset()  # nothing cached: closures cached from now on start afresh
                continue
            leaf = has_int
            if leaf:
                for w in adj[x]:
                    if not st_mat[w] and w != x:
                        leaf = False
                        break
            if not leaf:
                self._drop(dep[x], cache, dep)
                continue
            for y in dep[x]:
                if y in cache:
                    break
            else:
                # no cached closure reaches x (the ones that do are cached ancestors of a
                # cached neighbour of x, as in _drop): nothing to update
                continue
            checks = []
            for w in adj[x]:
                if w != x and not st_pin[w]:
                    nb = 0
                    for z in dep[w]:
                        nb |= ibit[z]
                    checks.append((sbit[w], nb))
            log.add((ibit[x], sbit[x], tuple(checks)))

    @staticmethod
    def _replay(c: int, i: int, log) -> int:
        """Apply the logged updates log[i:] (see _materialized) to the cached closure c,
        skipping a block of records at once when c has none of their marks (then none of
        them applies: a record that does not apply leaves c unchanged)."""
        n = len(log)
        bm = log.bm
        while i < n:
            b = i // _LOG_BLOCK
            e = min(n, (b + 1) * _LOG_BLOCK)
            if c & bm[b]:
                for k in range(i, e):
                    mark, add, checks = log[k]
                    if c & mark:
                        c = (c ^ mark) | add
                        for sw, nb in checks:
                            if c & sw and not c & nb:
                                c ^= sw
            i = e
        return c

    @staticmethod
    def _drop(start, cache: dict, dep) -> None:
        """Remove the cached closures of ``start`` and of every cached storage whose
        closure was composed from a removed one (``dep[y]``: storages whose traversal steps
        onto y). A cached closure's evicted neighbours are always cached too, so the walk
        stops at storages that are not cached."""
        if not cache:
            return
        stack = [y for y in start if y in cache]
        while stack:
            y = stack.pop()
            if cache.pop(y, None) is not None:
                stack.extend(dep[y])  # uncached ones are popped as no-ops

    def _set_comp(self, s: int, c) -> None:
        """Storage ``s``'s compute became ``c``: keep the numpy copy and the weight table."""
        k = self.s2d[s]
        if self._ints:
            delta = c - int(self.comp_np[k])
            if delta:
                self.wtab[256 * (k >> 3) + self.wbyte[k & 7]] += delta
        self.comp_np[k] = c

    def _weight(self, mask: int):
        """Sum of storage compute over the bits of ``mask``."""
        if self._ints:
            # integer sums are exact in any order: few bits are summed from the top bit
            # down, many through the byte table
            if mask.bit_count() <= 32:
                st_comp, d2s, sbit = self.st_comp, self.d2s, self.sbit
                c = 0
                while mask:
                    s = d2s[mask.bit_length() - 1]
                    c += st_comp[s]
                    mask ^= sbit[s]
                return c
            nb = (mask.bit_length() + 7) >> 3
            np = self._np
            idx = self.woff[:nb] + np.frombuffer(mask.to_bytes(nb, "little"), dtype=np.uint8)
            return int(np.add.reduce(self.wtab.take(idx)))
        # other costs: summed in increasing storage order exactly as before (a float sum
        # depends on its order; numpy's sum over the selected values in that order)
        if mask.bit_count() <= 24:
            st_comp, d2s = self.st_comp, self.d2s
            c = 0
            while mask:
                low = mask & -mask
                c += st_comp[d2s[low.bit_length() - 1]]
                mask ^= low
            return c
        np = self._np
        bits = np.unpackbits(np.frombuffer(mask.to_bytes(self._nbytes, "little"), dtype=np.uint8),
                             bitorder="little")[: len(self.comp_np)]
        return self.comp_np[bits.astype(bool)].sum().item()

    def _bind_regions(self) -> None:
        """(Re)create the closure and rebuild functions (they bind the state, and the
        acyclic or general path, when created)."""
        self._clo_f = self._make_closure(self.adj_c, self.cl_f, self.ibit_f, self.log_f, self.vi_f)
        self._clo_r = self._make_closure(self.adj_p, self.cl_r, self.ibit_r, self.log_r, self.vi_r)
        self._rb_f = self._make_rebuild(True)
        self._rb_r = self._make_rebuild(False)

    def _make_closure(self, adj, memo: dict, ibit, log: list, vi: list):
        """The closure function of one direction: ``clo(e)`` returns the closure of the
        evicted storage ``e``: the evicted storages reachable from ``e`` through evicted
        storages (``e`` included; interior, ``ibit`` bits) and the unpinned material
        storages adjacent to them (frontier, ``sbit`` bits), as one int, memoized in
        ``memo``. It recurses depth first (run() raises the recursion limit). A cached
        closure read on the way first gets the pending updates of ``log`` (``vi``: the log
        position each is up to date with). Unless the storage graph is known to be acyclic
        (then the log stays empty), storages on the current path are marked with a sentinel
        and meeting one raises _Cycle (aliasing can create a cycle); an exception removes
        the marks again."""
        st_mat, st_pin, sbit = self.st_mat, self.st_pin, self.sbit
        get = memo.get
        replay = self._replay

        if self._acyclic:
            def clo(u):
                c = ibit[u]
                n = len(log)
                for v in adj[u]:
                    if st_mat[v]:
                        if not st_pin[v]:
                            c |= sbit[v]
                    elif v != u:
                        g = get(v)
                        if g is None:
                            g = clo(v)
                        elif vi[v] != n:
                            g = memo[v] = replay(g, vi[v], log)
                            vi[v] = n
                        c |= g
                memo[u] = c
                vi[u] = n
                return c
            return clo

        busy = -1

        def clo(u):
            memo[u] = busy
            c = ibit[u]
            try:
                for v in adj[u]:
                    if st_mat[v]:
                        if not st_pin[v]:
                            c |= sbit[v]
                    elif v != u:
                        g = get(v)
                        if g is None:
                            g = clo(v)
                        elif g == busy:
                            raise _Cycle()
                        c |= g
            except _Cycle:
                del memo[u]
                raise
            memo[u] = c
            return c
        return clo

    def _get_closure(self, e: int, forward: bool) -> int:
        """The closure of the evicted storage ``e`` as one int (see _make_closure)."""
        memo, log, vi = (self.cl_f, self.log_f, self.vi_f) if forward else (self.cl_r, self.log_r, self.vi_r)
        c = memo.get(e)
        if c is None:
            return (self._clo_f if forward else self._clo_r)(e)
        if vi[e] != len(log):
            c = memo[e] = self._replay(c, vi[e], log)
            vi[e] = len(log)
        return c

    def _closure(self, e: int, forward: bool):
        """(interior, frontier) bitmasks of the evicted storage ``e``."""
        c = self._get_closure(e, forward)
        return c >> self._W, c & self._fmask

    def _rebuild(self, base: int, forward: bool) -> None:
        """Recompute base's region from scratch for the current material state: the
        evicted storages reachable from it through evicted storages (interior, a bitmask)
        and the unpinned material storages met on the way (frontier, base excluded): the
        union of the closures of its evicted neighbours and its material neighbours."""
        (self._rb_f if forward else self._rb_r)(base)

    def _make_rebuild(self, forward: bool):
        """The rebuild function of one direction (see _rebuild), with its state bound."""
        if forward:
            adj, memo, clo, log, vi = self.adj_c, self.cl_f, self._clo_f, self.log_f, self.vi_f
            R_int, R_front, R_c, with_int = self.rg_int, self.rg_front, self.rg_c, self.fwd_interior
        else:
            adj, memo, clo, log, vi = self.adj_p, self.cl_r, self._clo_r, self.log_r, self.vi_r
            R_int, R_front, R_c, with_int = self.rr_int, self.rr_front, self.rr_c, True
        get = memo.get
        st_mat, st_pin, sbit = self.st_mat, self.st_pin, self.sbit
        W, FM = self._W, self._fmask
        replay, weight, traverse = self._replay, self._weight, self._traverse

        def rebuild(base):
            n = len(log)
            c = 0
            try:
                for u in adj[base]:
                    if st_mat[u]:
                        if not st_pin[u]:
                            c |= sbit[u]
                    else:
                        g = get(u)
                        if g is None:
                            g = clo(u)
                        elif vi[u] != n:
                            g = memo[u] = replay(g, vi[u], log)
                            vi[u] = n
                        c |= g
                imask = c >> W
                fmask = c & FM
            except _Cycle:
                imask, fmask = traverse(base, adj)
            b = sbit[base]
            if fmask & b:
                fmask ^= b
            R_front[base] = fmask
            if with_int:
                R_int[base] = imask
                R_c[base] = weight(imask)
        return rebuild

    def _traverse(self, base: int, adj):
        """Plain traversal (used when the evicted storage graph has a cycle)."""
        st_mat, st_pin, sbit = self.st_mat, self.st_pin, self.sbit
        interior: set = set()
        imask = fmask = 0
        stack = [base]
        while stack:
            for us in adj[stack.pop()]:
                if st_mat[us]:
                    if not st_pin[us]:
                        fmask |= sbit[us]
                elif us not in interior:
                    interior.add(us)
                    imask |= sbit[us]
                    stack.append(us)
        return imask, fmask

    def _absorb_into(self, fs: int, owners: int, forward: bool) -> None:
        """simrd's Region.absorb for the just-evicted storage ``fs`` and every unpinned
        owner in the mask ``owners``, in increasing storage order: fs (on the owner's
        frontier) moves into the owner's interior with fs's own interior; fs's frontier
        joins the owner's frontier; the compute of the newly added storages (fs always
        counted) is added. ``forward``: the owners' forward regions absorb fs's forward
        region (owners = fs's backward frontier), else the backward ones."""
        if not owners:
            return
        d2s, sbit, st_pin = self.d2s, self.sbit, self.st_pin
        order = []
        while owners:
            x = d2s[owners.bit_length() - 1]
            owners ^= sbit[x]
            order.append(x)
        order.reverse()
        if forward:
            R_int, R_front, R_c, with_int = self.rg_int, self.rg_front, self.rg_c, self.fwd_interior
        else:
            R_int, R_front, R_c, with_int = self.rr_int, self.rr_front, self.rr_c, True
        bit = sbit[fs]
        weight = self._weight
        ints = self._ints
        comp_fs = self.st_comp[fs]
        for o in order:
            if st_pin[o]:
                continue
            frontier = R_front[o]
            if not frontier & bit:
                raise RegionInvariantError(
                    f"{self.trace.path}: heuristic {self.h}: simrd's region invariant fails (absorb: storage "
                    f"{fs} is not on the frontier of storage {o}); simrd asserts the same condition, so this "
                    f"replay has no defined result; a heuristic without regions (dtr-eqclass, dtr-local, lru) "
                    f"can replay it")
            R_front[o] = (frontier ^ bit) | R_front[fs]
            if with_int:
                interior = R_int[o]
                diff = ((R_int[fs] | interior) ^ interior) | bit
                R_int[o] = interior | diff
                # integer costs: a diff of fs alone (the common case) weighs fs's compute
                R_c[o] += comp_fs if ints and diff == bit else weight(diff)

    # heuristics -------------------------------------------------------------
    def cost_of(self, s: int):
        """The heuristic's eviction cost of storage ``s`` now (for explanations)."""
        h = self.h
        size = self.st_size[s]
        stale = self.clock - self.st_last[s]
        comp = self.st_comp[s]
        if h in ("dtr", "ab-e-size-stale", "ab-e-size", "ab-e-stale", "ab-e", "msps", "belady") \
                or h.startswith("lookahead-"):
            e = comp + self.rg_c[s] + self.rr_c[s]
            if h == "msps":
                return (comp + self.rr_c[s]) / size if size > 0 else INF
            if h == "ab-e-size":
                return e / size if size > 0 else INF
            if h == "ab-e-stale":
                return e / stale if stale > 0 else INF
            if h == "ab-e":
                return e
            den = size * stale
            return e / den if den > 0 else INF
        if h.startswith("dtr-eqclass") or h.startswith("ab-eq"):
            e = self._eq_cost(s)
            if h == "ab-eq-size":
                return e / size if size > 0 else INF
            if h == "ab-eq-stale":
                return e / stale if stale > 0 else INF
            if h == "ab-eq":
                return e
            den = size * stale
            return e / den if den > 0 else INF
        if h in ("dtr-local", "ab-local-size-stale"):
            den = size * stale
            return comp / den if den > 0 else INF
        if h == "ab-local-size":
            return comp / size if size > 0 else INF
        if h == "ab-local-stale":
            return comp / stale if stale > 0 else INF
        if h == "ab-local":
            return comp
        if h == "lru":
            return self.st_last[s]
        if h in ("size", "ab-size"):
            return 1 / size if size > 0 else INF
        if h == "ab-size-stale":
            den = size * stale
            return 1 / den if den > 0 else INF
        if h == "ab-stale":
            return 1 / stale if stale > 0 else INF
        return 0.0  # random

    def _choose(self) -> int:
        h = self.h
        pool = self.pool
        if h == "dtr" or h == "ab-e-size-stale":
            clock = self.clock
            st_size, st_last, st_comp, rg_c, rr_c = self.st_size, self.st_last, self.st_comp, self.rg_c, self.rr_c
            best, bs = INF, None
            for s in pool:
                den = st_size[s] * (clock - st_last[s])
                cost = (st_comp[s] + (rg_c[s] + rr_c[s])) / den if den > 0 else INF
                if cost <= best:
                    best, bs = cost, s
                if cost == 0:
                    break
            return bs
        if h == "dtr-local" or h == "ab-local-size-stale":
            clock = self.clock
            st_size, st_last, st_comp = self.st_size, self.st_last, self.st_comp
            best, bs = INF, None
            for s in pool:
                den = st_size[s] * (clock - st_last[s])
                cost = st_comp[s] / den if den > 0 else INF
                if cost <= best:
                    best, bs = cost, s
                if cost == 0:
                    break
            return bs
        if h == "lru":
            st_last = self.st_last
            best, bs = INF, None
            for s in pool:
                cost = st_last[s]
                if cost <= best:
                    best, bs = cost, s
                if cost == 0:
                    break
            return bs
        if h == "dtr-eqclass" or h == "ab-eq-size-stale":
            clock = self.clock
            st_size, st_last, st_comp = self.st_size, self.st_last, self.st_comp
            adj_p, adj_c, ev, ecn, par, val = self.adj_p, self.adj_c, self.evicted, self.st_ecn, \
                self.uf_parent, self.uf_val
            find = self._find
            best, bs = INF, None
            for s in pool:
                c = st_comp[s]
                ap, ac = adj_p[s], adj_c[s]
                if not (ap.isdisjoint(ev) and ac.isdisjoint(ev)):
                    roots = set()
                    add = roots.add
                    for n in (ap | ac) & ev:
                        if n != s:
                            e = ecn[n]
                            p = par[e]
                            # a root, or a child of one, is its class without find() (which
                            # would not change the tree there)
                            add(e if p == -1 else p if par[p] == -1 else find(e))
                    for r in roots:
                        c = c + val[r]
                den = st_size[s] * (clock - st_last[s])
                cost = c / den if den > 0 else INF
                if cost <= best:
                    best, bs = cost, s
                if cost == 0:
                    break
            return bs
        if h == "size" or h == "ab-size":
            st_size = self.st_size
            best, bs = INF, None
            for s in pool:
                size = st_size[s]
                cost = 1 / size if size > 0 else INF
                if cost <= best:
                    best, bs = cost, s
            return bs
        if h == "msps":
            st_size, st_comp, rr_c = self.st_size, self.st_comp, self.rr_c
            best, bs = INF, None
            for s in pool:
                size = st_size[s]
                cost = (st_comp[s] + rr_c[s]) / size if size > 0 else INF
                if cost <= best:
                    best, bs = cost, s
                if cost == 0:
                    break
            return bs
        if h == "random" or h == "ab-random":
            keys = list(pool)
            return keys[self.rng.randrange(0, len(keys))]
        if self.lookahead is not None:
            return self._choose_lookahead()
        cost_of = self.cost_of
        best, bs = INF, None
        for s in pool:
            cost = cost_of(s)
            if cost <= best:
                best, bs = cost, s
            if cost == 0:
                break
        return bs

    def _choose_lookahead(self) -> int:
        """Lookahead with a horizon of H operators (the next use of a storage is the next
        top-level operator reading one of its tensors, or the final pin):

        * candidates not needed within the next H operators go first, least h_DTR
          among them;
        * otherwise ``lookahead-H``: least e*(s) / (size x distance to next use), i.e.
          h_DTR with staleness replaced by the known future; ``belady``: the candidate
          needed furthest in the future (ties: least h_DTR), Belady's rule.
        """
        H = self.lookahead
        rank = self.op_rank
        now = rank[self.pos]
        pure = self.pure_belady
        best_key, bs = None, None
        size, comp, rg_c, rr_c = self.st_size, self.st_comp, self.rg_c, self.rr_c
        for s in self.pool:
            nu = self._next_use(s)
            dist = INF if nu == INF else rank[nu] - now
            if dist > H:
                key = (0, self.cost_of_dtr(s))
            elif pure:
                key = (1, -dist, self.cost_of_dtr(s))
            else:
                den = size[s] * (dist + 1)
                e = comp[s] + (rg_c[s] + rr_c[s])
                key = (1, e / den if den > 0 else INF)
            if best_key is None or key <= best_key:
                best_key, bs = key, s
        return bs

    def cost_of_dtr(self, s: int):
        size = self.st_size[s]
        den = size * (self.clock - self.st_last[s])
        e = self.st_comp[s] + (self.rg_c[s] + self.rr_c[s])
        return e / den if den > 0 else INF

    # ------------------------------------------------------------ results
    def summary(self) -> dict:
        return {"clock": self.clock, "peak": self.peak, "evictions": self.evictions,
                "eager_evictions": self.eager_evictions, "remat_compute": self.remat_compute,
                "model_compute": self.model_compute, "recomputations": self.remat_count}


def baseline(trace: DTRTrace) -> dict:
    """simrd's baseline: RuntimeV1 with an infinite budget (nothing evicted; a storage is
    banished when its external refs reach 0, pinned constants included).

    Returns baseline_memory (peak of memory usage sampled after each allocation),
    baseline_compute (sum of op costs), const_memory, bottleneck_memory (max over ops of
    output bytes plus the own bytes of every argument, as simrd computes it)."""
    n = trace.n_tensors
    t_storage = [-1] * n
    st_size = [0] * n
    st_rext = [0] * n
    st_mat = [False] * n
    mem = peak = comp = const = bottleneck = 0
    ops = trace.ops
    for kind, x in trace.schedule:
        if kind == COMPUTE:
            op = ops[x]
            for i, t in enumerate(op.results):
                a = op.aliases[i]
                s = t if a == -1 else t_storage[op.args[a]]
                t_storage[t] = s
                st_size[t] = op.sizes[i]
                st_rext[s] += 1
                st_mat[s] = True
            total = sum(op.sizes)
            mem += total
            if mem > peak:
                peak = mem
            comp += op.cost
            if op.is_constant:
                const += total
            b = total
            for p in op.args:
                b += st_size[p]
            if b > bottleneck:
                bottleneck = b
            for p in op.args:
                s = t_storage[p]
                if st_rext[s] == 0 and st_mat[s]:
                    st_mat[s] = False
                    mem -= st_size[s]
        elif kind == GET:
            st_rext[t_storage[x]] += 1
        elif kind == RELEASE:
            s = t_storage[x]
            st_rext[s] -= 1
            if st_rext[s] == 0 and st_mat[s]:
                st_mat[s] = False
                mem -= st_size[s]
    return {"baseline_memory": peak, "baseline_compute": comp, "const_memory": const,
            "bottleneck_memory": bottleneck}
