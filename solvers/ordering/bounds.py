"""Lower bounds on the optimal peak of a plain operator order (no recomputation).

Every bound here is a number that no topological order of the graph can beat
under the project's memory semantics (formulations/evaluator.py, orders turned
into schedules by ``Schedule.from_order``). Proofs: docs/bounds.md.

* ``initial``: the bytes resident before the first operator (all graph inputs).
* ``per_op``: for each operator v, its inputs + outputs + workspace + the pinned
  and required graph inputs, which are resident whenever v runs.
* ``final``: when the last operator (a sink) runs, every required output is resident;
  the least such moment over the sinks (training graphs: all parameter gradients).
* ``trap`` (forward trap bound): when v runs, the operators already run form a
  down-closed set S that contains every ancestor of v and no descendant of v;
  the memory is ``resident(S) + out(v) + ws(v)`` and the minimum of
  ``resident(S)`` over all such S is a minimum cut (a closure problem) on the
  operators incomparable with v, solved with OR-Tools' max-flow
  (:class:`TrapSolver`). Operators whose memory in a known order is at most the
  best value so far are skipped. The trap value of v is exactly the least
  memory any order has while v runs.
* ``reverse``: the valid "seen from the end" bound (min over the up-closed sets
  of operators from v on). It equals the forward trap value operator by operator
  (docs/bounds.md proves this and shows why running the forward bound on the
  *reversed graph* -- ``naive_reversed_graph_bound``, never reported -- is
  unsound); it is computed on its own network as an independent check.
* ``pair``: for two incomparable operators u, v, either u runs before v or after;
  in each case both moments are trapped with the extra precedence, and the
  bound is the smaller of the two cases' maxima. Only pairs that can raise the
  bound are tried, within a time budget.
* ``precedence`` (shaving with learned precedences, optional): to show that no
  order has peak <= theta, a pair whose one order already forces a trap above
  theta gets the opposite precedence; traps are recomputed with the learned
  precedences until one exceeds theta (proof) or nothing changes
  (:func:`precedence_refutes`, :func:`precedence_bound`).

``bound_report(graph)`` runs them all and returns
``{"lower_bound": best, "bounds": {name: {"value": v, "wall_s": s}}}``.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from memsched.formulations import Graph

from .heuristics import run_heuristics

__all__ = [
    "REACH_MASK_MAX_OPS", "Reach", "reachability", "initial_bound", "final_bound", "per_op_bound", "TrapSolver", "trap_solver", "step_memory",
    "order_step_memory", "trap_values", "trap_bound", "reverse_trap_value", "reverse_bound", "naive_reversed_graph_bound",
    "pair_bound", "precedence_refutes", "precedence_bound",
    "bound_report",
]


# ----------------------------------------------------------------- structure
@dataclass
class Reach:
    """Ancestor / descendant sets of every operator as Python-int bitmasks."""

    topo: list[int]
    anc: list[int]
    desc: list[int]

    def n_anc(self, v: int) -> int:
        return self.anc[v].bit_count()

    def n_desc(self, v: int) -> int:
        return self.desc[v].bit_count()

    def comparable(self, u: int, v: int) -> bool:
        return bool((self.anc[v] >> u) & 1 or (self.desc[v] >> u) & 1)


#: Above this many operators no ancestor / descendant bitmasks are built (they take
#: about n^2 / 4 bytes: 100 MB at 20,000 operators, 2.5 GB at 10^5); the trap solver
#: then finds each query's ancestors and descendants by a search, and the bounds that
#: need the masks for all operators at once (learned precedences) are skipped.
REACH_MASK_MAX_OPS = 20_000


def reachability(g: Graph) -> Reach | None:
    """Ancestors and descendants of every operator, O(n * edges / 64) time and
    O(n^2 / 8) bytes; ``None`` when the graph has more than :data:`REACH_MASK_MAX_OPS`
    operators."""
    cached = getattr(g, "_memsched_reach", None)
    if cached is not None:
        return cached
    if g.n_ops > REACH_MASK_MAX_OPS:
        return None
    topo = g.topological_order()
    anc, desc = g.reach_masks()
    r = Reach(topo, anc, desc)
    g._memsched_reach = r
    return r


def initial_bound(g: Graph) -> int:
    """Memory of the initial state: every graph input is resident before the first event."""
    return g.resident_at_start()


def per_op_bound(g: Graph) -> int:
    """max over operators of inputs + outputs + workspace + the never-freed graph inputs,
    and the initial state."""
    always = g.always_resident_idx()
    c = sum(g.size[j] for j in always)
    best = initial_bound(g)
    for v in range(g.n_ops):
        s = c + g.workspace[v]
        for j in g.op_in[v]:
            if j not in always:
                s += g.size[j]
        for j in g.op_out[v]:
            s += g.size[j]
        best = max(best, s)
    return best


def final_bound(g: Graph) -> int:
    """The moment the last operator runs: some sink v (no successor) runs last, after every
    other operator; then every required output is resident (plain orders never free one),
    with the never-freed graph inputs, v's other inputs (v reads them), v's other outputs
    and v's workspace. The bound is the least of these over the sinks, O(n + E)."""
    if g.n_ops == 0:
        return initial_bound(g)
    kept = g.kept_idx()
    always = g.always_resident_idx()
    base = g.always_resident() + sum(g.size[j] for j in g.output_idx if j not in always)
    succ = g.op_succ()
    best = None
    for v in range(g.n_ops):
        if succ[v]:
            continue
        extra = g.workspace[v]
        for j in g.op_in[v]:
            if j not in kept:
                extra += g.size[j]
        for j in g.op_out[v]:
            if j not in kept:
                extra += g.size[j]
        if best is None or extra < best:
            best = extra
    return base + best


# ------------------------------------------------------------------ min cuts
def _mask_to_bool(m: int, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros(0, dtype=bool)
    b = np.frombuffer(m.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(b, bitorder="little")[:n].astype(bool)


class TrapSolver:
    """Minimum of ``resident(S)`` over down-closed operator sets S with prescribed
    members and non-members, as a minimum cut (a closure problem).

    ``resident(S)`` is the memory held right after the operators of S ran (frees after
    last use): a tensor counts if it was produced in S (or is a graph input) and is
    pinned, required, or still has a consumer outside S.

    For each query the operators split into IN (forced into S: the ancestors of the
    forced ones), OUT (forced out: the descendants) and the free ones F; only F gets
    nodes. Network (source side = S): op node x_u for u in F (1 = u in S); tensor
    node z_t (1 = every consumer of t ran) for each non-kept tensor whose consumers are
    not all decided. Arcs: u -> sink with the bytes of u's outputs that may stay
    resident; source -> z_t (size t); z_t -> c for each free consumer c (inf);
    c -> p for free c and free predecessor p (inf: down-closure). Then
    ``resident(S) = cut + const`` where const counts the tensors decided by IN/OUT
    alone and subtracts the bytes of free-produced tensors that own a z node.
    The network of a query is built with numpy and solved with OR-Tools' max-flow.
    """

    def __init__(self, g: Graph):
        self.g = g
        n, nt = g.n_ops, g.n_tensors
        self.n = n
        self.reach = reachability(g)  # None on large graphs: per-query searches instead
        self.pred, self.succ = g.op_pred(), g.op_succ()
        kept = g.kept_idx()
        self.t_prod = np.array(g.producer, dtype=np.int64)
        self.t_size = np.array(g.size, dtype=np.int64)
        self.t_kept = np.zeros(nt, dtype=bool)
        for j in kept:
            self.t_kept[j] = True
        ent_t, ent_c = [], []
        for j in range(nt):
            for c in g.consumers[j]:
                ent_t.append(j)
                ent_c.append(c)
        self.ent_t = np.array(ent_t, dtype=np.int64)
        self.ent_c = np.array(ent_c, dtype=np.int64)
        self.t_ncons = np.bincount(self.ent_t, minlength=nt) if ent_t else np.zeros(nt, dtype=np.int64)
        ec, ep = [], []
        for c, ps in enumerate(g.op_pred()):
            for p in ps:
                ec.append(c)
                ep.append(p)
        self.e_child = np.array(ec, dtype=np.int64)
        self.e_par = np.array(ep, dtype=np.int64)
        self.INF = int(self.t_size.sum()) * 2 + 1
        self.prod = np.where(self.t_prod < 0, n, self.t_prod)  # graph inputs -> pseudo-operator n
        self.run = [sum(g.size[j] for j in g.op_out[v]) + g.workspace[v] for v in range(n)]
        self.n_solves = 0

    @staticmethod
    def _closure(m: int, table) -> int:
        """m together with table[v] for every bit v of m."""
        out = m
        mm = m
        while mm:
            b = mm & -mm
            out |= table[b.bit_length() - 1]
            mm ^= b
        return out

    def closure_in(self, m: int) -> int:
        """m with all its ancestors."""
        if self.reach is None:
            return self._bool_to_mask(self._search(list(self._mask_set(m)), self.pred))
        return self._closure(m, self.reach.anc)

    def closure_out(self, m: int) -> int:
        """m with all its descendants."""
        if self.reach is None:
            return self._bool_to_mask(self._search(list(self._mask_set(m)), self.succ))
        return self._closure(m, self.reach.desc)

    def _search(self, seeds: list[int], adj) -> np.ndarray:
        """Boolean array of the seeds and everything reachable from them along ``adj``
        (O(size of the result + its edges); used when there are no bitmasks)."""
        seen = bytearray(self.n)
        stack = []
        for x in seeds:
            if not seen[x]:
                seen[x] = 1
                stack.append(x)
        while stack:
            x = stack.pop()
            for y in adj[x]:
                if not seen[y]:
                    seen[y] = 1
                    stack.append(y)
        return np.frombuffer(bytes(seen), dtype=np.uint8).astype(bool)

    @staticmethod
    def _bool_to_mask(b: np.ndarray) -> int:
        return int.from_bytes(np.packbits(b, bitorder="little").tobytes(), "little") if len(b) else 0

    def state(self, v: int, extra_in: int = 0, extra_out: int = 0):
        """int8 state of every operator for the moment v runs (0 = before: the ancestors
        of v and of ``extra_in``; 2 = after: v, its descendants and those of
        ``extra_out``; 1 = free), or None if the two sides meet."""
        n = self.n
        st = np.ones(n, dtype=np.int8)
        if self.reach is not None:
            r = self.reach
            fin = r.anc[v] | self.closure_in(extra_in) if extra_in else r.anc[v]
            fout = (r.desc[v] | (1 << v)) | (self.closure_out(extra_out) if extra_out else 0)
            if fin & fout:
                return None
            st[_mask_to_bool(fin, n)] = 0
            st[_mask_to_bool(fout, n)] = 2
            return st
        bin_ = self._search(list(self.pred[v]) + list(self._mask_set(extra_in)), self.pred)
        bout = self._search([v] + list(self._mask_set(extra_out)), self.succ)
        if (bin_ & bout).any():
            return None
        st[bin_] = 0
        st[bout] = 2
        return st

    def min_resident_masks(self, in_mask: int, out_mask: int, want_set: bool = False):
        """min resident(S) over down-closed S ⊇ in_mask with S ∩ out_mask = ∅; the masks
        must already be closed (ancestors / descendants). None if they intersect."""
        if in_mask & out_mask:
            return (None, None) if want_set else None
        n = self.n
        st = np.ones(n, dtype=np.int8)
        st[_mask_to_bool(in_mask, n)] = 0
        st[_mask_to_bool(out_mask, n)] = 2
        return self.min_resident_state(st, want_set)

    def min_resident_state(self, st_ops: np.ndarray, want_set: bool = False):
        """min resident(S) over down-closed S containing the operators of state 0 and none
        of state 2 (``st_ops``: int8 per operator, the two sides already closed).
        One vectorized pass over the precomputed tensor / edge arrays, then a max-flow
        on the free operators only."""
        from ortools.graph.python import max_flow

        n = self.n
        st = np.empty(n + 1, dtype=np.int8)  # 0 = IN, 1 = free, 2 = OUT; index n = graph input
        st[:n] = st_ops
        st[n] = 0
        prod = self.prod
        pst = st[prod]
        cst = st[self.ent_c]
        nt = len(self.t_size)
        cnt_out = np.bincount(self.ent_t, weights=(cst == 2), minlength=nt) if len(cst) else np.zeros(nt)
        cnt_free = np.bincount(self.ent_t, weights=(cst == 1), minlength=nt) if len(cst) else np.zeros(nt)
        size, kept = self.t_size, self.t_kept
        stay = kept | (cnt_out > 0)  # resident for sure once produced (if produced in S)
        const = int(size[(pst == 0) & stay].sum())
        znode_t = (~stay) & (cnt_free > 0) & (pst <= 1)
        prod_free = pst == 1
        pay = prod_free & (stay | znode_t)
        const -= int(size[prod_free & znode_t].sum())
        free_ops = np.nonzero(st[:n] == 1)[0]
        if len(free_ops) == 0:
            res = const
            return (res, self._state_set(st_ops)) if want_set else res
        node = np.full(n, -1, dtype=np.int64)
        node[free_ops] = np.arange(2, 2 + len(free_ops))
        zt = np.nonzero(znode_t)[0]
        znode = np.full(nt, -1, dtype=np.int64)
        znode[zt] = np.arange(2 + len(free_ops), 2 + len(free_ops) + len(zt))
        INF = self.INF
        tails, heads, caps = [], [], []
        # op -> sink
        w = np.bincount(prod[pay], weights=size[pay], minlength=n + 1)[:n] if pay.any() else np.zeros(n)
        fo = free_ops[w[free_ops] > 0]
        tails.append(node[fo]); heads.append(np.ones(len(fo), dtype=np.int64)); caps.append(w[fo].astype(np.int64))
        # source -> z
        tails.append(np.zeros(len(zt), dtype=np.int64)); heads.append(znode[zt]); caps.append(size[zt])
        # z -> free consumer
        sel = znode_t[self.ent_t] & (cst == 1)
        tails.append(znode[self.ent_t[sel]]); heads.append(node[self.ent_c[sel]])
        caps.append(np.full(int(sel.sum()), INF, dtype=np.int64))
        # closure among free ops
        if len(self.e_child):
            sel = (st[self.e_child] == 1) & (st[self.e_par] == 1)
            tails.append(node[self.e_child[sel]]); heads.append(node[self.e_par[sel]])
            caps.append(np.full(int(sel.sum()), INF, dtype=np.int64))
        mf = max_flow.SimpleMaxFlow()
        mf.add_arcs_with_capacity(np.concatenate(tails).astype(np.int32), np.concatenate(heads).astype(np.int32),
                                  np.concatenate(caps).astype(np.int64))
        status = mf.solve(0, 1)
        self.n_solves += 1
        if status != mf.OPTIMAL:  # pragma: no cover
            raise RuntimeError(f"max-flow failed with status {status}")
        res = int(mf.optimal_flow()) + const
        if not want_set:
            return res
        side = self._state_set(st_ops)
        inv = {int(k): int(u) for u, k in zip(free_ops, node[free_ops])}
        side.update(inv[x] for x in mf.get_source_side_min_cut() if x in inv)
        return res, side

    @staticmethod
    def _state_set(st_ops: np.ndarray) -> set[int]:
        return set(int(x) for x in np.nonzero(st_ops == 0)[0])

    @staticmethod
    def _mask_set(m: int) -> set[int]:
        out = set()
        while m:
            b = m & -m
            out.add(b.bit_length() - 1)
            m ^= b
        return out

    def trap(self, v: int, extra_in: int = 0, extra_out: int = 0, want_set: bool = False):
        """Least memory while v runs, over all states with ``extra_in`` before v and
        ``extra_out`` after v (masks of operators; closed here). None if contradictory."""
        st = self.state(v, extra_in, extra_out)
        if st is None:
            return (None, None) if want_set else None
        out = self.min_resident_state(st, want_set)
        if want_set:
            val, side = out
            return (None if val is None else val + self.run[v]), side
        return None if out is None else out + self.run[v]


def trap_solver(g: Graph) -> TrapSolver:
    ts = getattr(g, "_memsched_trap", None)
    if ts is None:
        ts = TrapSolver(g)
        g._memsched_trap = ts
    return ts


def step_memory(g: Graph, order) -> list[int]:
    """Memory while each operator runs in ``order`` (indexed by operator), by the evaluator."""
    from memsched.formulations import COMPUTE, Schedule, evaluate

    sched = Schedule.from_order(g, order)
    ev = evaluate(g, sched)
    mem = [0] * g.n_ops
    for (kind, x), m in zip(sched.events, ev.timeline):
        if kind == COMPUTE:
            mem[x] = m
    return mem


def order_step_memory(g: Graph, order) -> list[int]:
    """The same numbers as :func:`step_memory` (memory while each operator runs in the
    plain ``order``, frees after last use, indexed by operator) by one direct pass in
    O(n + E), without building the schedule; ``order`` must be a topological order of
    all operators (the bounds use it only to skip operators, the tests compare it with
    the evaluator)."""
    n = g.n_ops
    pos = [0] * n
    for k, i in enumerate(order):
        pos[i] = k
    keep = g.kept_idx()
    size, producer, consumers = g.size, g.producer, g.consumers
    free_at = [0] * n
    live = 0
    for j in range(g.n_tensors):
        p = producer[j]
        last = -1
        for c in consumers[j]:
            if pos[c] > last:
                last = pos[c]
        if p == -1:
            if j in keep or last != -1:
                live += size[j]  # resident from the start (else freed before the first step)
        elif pos[p] > last:
            last = pos[p]
        if j not in keep and last != -1:
            free_at[last] += size[j]
    mem = [0] * n
    op_out, ws = g.op_out, g.workspace
    for k, v in enumerate(order):
        out = 0
        for j in op_out[v]:
            out += size[j]
        mem[v] = live + out + ws[v]
        live += out - free_at[k]
    return mem


def least_step_memory(g: Graph, orders) -> list[int]:
    """Per operator, the least memory while it runs over the given orders (an upper bound
    on its trap value, used to skip operators whose trap cannot raise the bound)."""
    ub = None
    for o in orders:
        m = order_step_memory(g, o)
        ub = m if ub is None else [min(a, b) for a, b in zip(ub, m)]
    return ub


def trap_values(g: Graph) -> list[int]:
    """Forward trap value of every operator: the least memory any order has while v runs."""
    ts = trap_solver(g)
    return [ts.trap(v) for v in range(g.n_ops)]


def _note(info: dict | None, **kw) -> None:
    if info is not None:
        info.update(kw)


def trap_bound(g: Graph, orders=None, want_critical: bool = False, *, time_budget: float | None = None,
               info: dict | None = None, clock=time.perf_counter):
    """max(initial state, max over v of the forward trap value of v).

    ``orders``: known orders; the memory of v in any order is an upper bound on v's trap
    value, so operators whose least such memory is at most the best value found so far
    are skipped (they cannot raise the maximum). Operators are tried in decreasing order
    of that memory; with ``time_budget`` (seconds, checked before every min cut) the
    maximum over the operators tried so far is returned, which is still a lower bound
    (each trap value is one); ``info`` then gets ``complete`` False. ``clock``: the
    budget's clock (wall time by default; ``time.process_time`` measures this process's
    CPU time, steadier on a shared machine). Returns the bound, or with
    ``want_critical`` (bound, critical operator or -1)."""
    t0 = clock()
    n = g.n_ops
    best, crit = initial_bound(g), -1
    if n == 0:
        _note(info, complete=True, queries=0)
        return (best, crit) if want_critical else best
    ts = trap_solver(g)
    if orders is None:
        orders = [g.given_order()]
    ub = least_step_memory(g, orders)
    # the per-operator bound is a free lower bound of each trap value
    queries, complete = 0, True
    for v in sorted(range(n), key=lambda u: -ub[u]):
        if ub[v] <= best:
            break
        if time_budget is not None and clock() - t0 > time_budget:
            complete = False
            break
        t = ts.trap(v)
        queries += 1
        if t > best:
            best, crit = t, v
    _note(info, complete=complete, queries=queries)
    return (best, crit) if want_critical else best


# ------------------------------------------------------------ reverse view
def reverse_trap_value(g: Graph, v: int) -> int:
    """The bound seen from the end of the schedule, computed independently of the forward
    network: minimum over up-closed sets U (the operators from v on: v, all descendants
    of v, no ancestor of v) of the bytes of tensors produced outside U that are kept or
    have a consumer in U, plus v's outputs and workspace. Closure network with U on the
    source side: u_x = 1 iff x in U; a tensor t produced by p (not kept, with consumers)
    costs size*([some consumer in U] - [p in U]); a node w_t >= u_c for each consumer c
    carries the first term, an arc source -> p of capacity size the second (minus a
    constant); a kept tensor costs size*[p not in U]. Equal to the forward trap value
    (docs/bounds.md)."""
    from ortools.graph.python import max_flow

    ts = trap_solver(g)
    n = g.n_ops
    st = np.empty(n + 1, dtype=np.int8)  # 0 = before v (out of U), 1 = free, 2 = in U; n = graph input
    st[:n] = ts.state(v)
    st[n] = 0
    prod = ts.prod
    pst = st[prod]
    cst = st[ts.ent_c]
    nt = len(ts.t_size)
    size, kept = ts.t_size, ts.t_kept
    cnt_in = np.bincount(ts.ent_t, weights=(cst == 2), minlength=nt) if len(cst) else np.zeros(nt)
    cnt_free = np.bincount(ts.ent_t, weights=(cst == 1), minlength=nt) if len(cst) else np.zeros(nt)
    has = (size > 0) & (pst <= 1)
    const = int(size[has & kept & (pst == 0)].sum())
    norm = has & ~kept & (ts.t_ncons > 0)
    const += int(size[norm & (cnt_in > 0)].sum())
    wnode_t = norm & (cnt_in == 0) & (cnt_free > 0)
    src_p = has & (pst == 1) & (kept | norm)  # arc source -> p of capacity size
    const -= int(size[has & (pst == 1) & norm].sum())
    free_ops = np.nonzero(st[:n] == 1)[0]
    INF = ts.INF
    val = const
    if len(free_ops):
        node = np.full(n + 1, -1, dtype=np.int64)
        node[free_ops] = np.arange(2, 2 + len(free_ops))
        wt = np.nonzero(wnode_t)[0]
        wnode = np.full(nt, -1, dtype=np.int64)
        wnode[wt] = np.arange(2 + len(free_ops), 2 + len(free_ops) + len(wt))
        sp = np.nonzero(src_p)[0]
        sel = wnode_t[ts.ent_t] & (cst == 1)
        esel = (st[ts.e_child] == 1) & (st[ts.e_par] == 1) if len(ts.e_child) else np.zeros(0, dtype=bool)
        tails = np.concatenate([np.zeros(len(sp), dtype=np.int64), wnode[wt], node[ts.ent_c[sel]],
                                node[ts.e_par[esel]] if len(esel) else np.zeros(0, dtype=np.int64)])
        heads = np.concatenate([node[prod[sp]], np.ones(len(wt), dtype=np.int64), wnode[ts.ent_t[sel]],
                                node[ts.e_child[esel]] if len(esel) else np.zeros(0, dtype=np.int64)])
        caps = np.concatenate([size[sp], size[wt], np.full(int(sel.sum()) + int(esel.sum()), INF, dtype=np.int64)])
        if len(tails):
            mf = max_flow.SimpleMaxFlow()
            mf.add_arcs_with_capacity(tails.astype(np.int32), heads.astype(np.int32), caps.astype(np.int64))
            mf.solve(0, 1)
            val += int(mf.optimal_flow())
    return val + ts.run[v]


def reverse_bound(g: Graph, orders=None, *, time_budget: float | None = None, info: dict | None = None) -> int:
    """max(initial state, max over v of the reverse trap value), skipping operators whose
    memory in a known order is at most the best value so far, within ``time_budget``
    (as ``trap_bound``)."""
    t0 = time.perf_counter()
    n = g.n_ops
    best = initial_bound(g)
    if n == 0:
        _note(info, complete=True, queries=0)
        return best
    ub = least_step_memory(g, orders or [g.given_order()])
    queries, complete = 0, True
    for v in sorted(range(n), key=lambda u: -ub[u]):
        if ub[v] <= best:
            break
        if time_budget is not None and time.perf_counter() - t0 > time_budget:
            complete = False
            break
        best = max(best, reverse_trap_value(g, v))
        queries += 1
    _note(info, complete=complete, queries=queries)
    return best


def naive_reversed_graph_bound(g: Graph) -> int:
    """The UNSOUND bound: the forward trap bound of the graph with every edge reversed
    (each operator keeping its own output size). Exposed only so that the tests and the
    docs can show a counterexample; never part of ``bound_report``."""
    pred = g.op_pred()
    nodes = [(g.ops[i].name, sum(g.size[j] for j in g.op_out[i]), g.cost[i]) for i in range(g.n_ops)]
    edges = [(g.ops[v].name, g.ops[p].name) for v in range(g.n_ops) for p in pred[v]]
    rg = Graph.from_single_output(nodes, edges, name=g.name + "_reversed")
    return max([initial_bound(rg)] + trap_values(rg))


# ------------------------------------------------------------------ pairs
def _pair_candidates(n: int, hot: list[int], mems: list[list[int]], best: int, r, out_of_time):
    """Incomparable pairs (a hot operator and a partner) whose estimate, the least over the
    known orders of the larger of the two memories, exceeds ``best``: at most 100,000, best
    first, as ``(-estimate, u, v)``; partners are every operator or, on large graphs, the
    highest-memory ones (about 200,000 pairs listed). Returns (candidates, complete)."""
    hot_set = set(hot)
    complete = True
    pool = range(n)
    if hot and n * len(hot) > 200_000:
        pool = sorted(range(n), key=lambda v: -max(m[v] for m in mems))[:max(1, 200_000 // len(hot))]
        complete = False
    cands: list = []  # a min-heap of the max_cands best (est, u, v)
    max_cands = 100_000
    steps = 0
    for u in hot:
        if out_of_time():
            return sorted(((-e, a, b) for e, a, b in cands)), False
        cu = (r.anc[u] | r.desc[u]) if r is not None else 0
        for v in pool:
            steps += 1
            if steps & 4095 == 0 and out_of_time():
                return sorted(((-e, a, b) for e, a, b in cands)), False
            if v == u or (v in hot_set and v < u) or (cu >> v) & 1:
                continue
            est = min(max(m[u], m[v]) for m in mems)
            if est > best:
                if len(cands) < max_cands:
                    heapq.heappush(cands, (est, u, v))
                elif est > cands[0][0]:
                    heapq.heapreplace(cands, (est, u, v))
                    complete = False
    return sorted(((-e, a, b) for e, a, b in cands)), complete


def _pair_value(ts: "TrapSolver", u: int, v: int, best: int, out_of_time) -> int | None:
    """The pair value ``min over the two cases of max(trap(second | first before),
    trap(first | second after))`` when it may exceed ``best``, else None (a case already at
    most ``best``, or time ran out inside the pair: no claim). A contradictory case (the
    trap solver returns None) is impossible and drops out of the minimum."""
    cases = []
    for first, second in ((u, v), (v, u)):
        if cases and out_of_time():  # the pair is left unfinished: no claim from it
            return None
        a1 = ts.trap(second, extra_in=1 << first)
        if a1 is None:
            cases.append(None)
            continue
        if a1 > best:
            cases.append(a1)
            continue
        a2 = ts.trap(first, extra_out=1 << second)
        cases.append(None if a2 is None else max(a1, a2))
        if cases[-1] is not None and cases[-1] <= best:
            return None
    vals = [c for c in cases if c is not None]
    return min(vals) if vals else None


def pair_bound(g: Graph, orders=None, base: int | None = None, time_budget: float = 0.3,
               max_pairs: int | None = None, *, info: dict | None = None, max_hot: int = 512,
               clock=time.perf_counter) -> int:
    """Pair trap bound: for incomparable u, v every order runs u before v or v before u;
    with u before v the moment of v has u (and its ancestors) in its state and the moment
    of u has v (and its descendants) outside, so that case costs at least
    ``max(trap(v | u before), trap(u | v after))``; the bound is the smaller case, and the
    maximum over pairs (and over ``base``, a known lower bound).

    Only pairs that can raise the bound are tried: in every known order the larger of the
    two operators' memories must exceed the current bound (so one of them is among the
    operators above the bound in some order; only the ``max_hot`` highest of those are
    used, their partners are all operators or, on large graphs, the highest-memory ones
    (about 200,000 pairs listed), and the 100,000 best candidates kept). Pairs are tried in decreasing
    order of that estimate until ``time_budget`` seconds or ``max_pairs`` pairs. The
    budget is checked from the first step on (the trap bound when ``base`` is None, the
    memories of the known orders, every candidate pair listed): the result is then the
    best bound so far, never a wrong one. Without bitmasks (large graphs) comparable
    pairs are not filtered out beforehand; for them one case is contradictory and the
    other costs at most the trap bound, so they never raise it."""
    t0 = clock()

    def out_of_time() -> bool:
        return clock() - t0 > time_budget

    n = g.n_ops
    best = trap_bound(g, orders, time_budget=time_budget, clock=clock) if base is None else base
    if n < 2:
        _note(info, complete=True, pairs=0)
        return best
    ts = trap_solver(g)
    r = ts.reach
    mems = []
    for o in (orders or [g.given_order()]):
        if out_of_time():
            _note(info, complete=False, pairs=0)
            return best
        mems.append(order_step_memory(g, o))
    # a pair can raise the bound only if, in every known order, one of its two operators
    # runs above it: so one of them is "hot" (above the bound in some order)
    hot = [v for v in range(n) if max(m[v] for m in mems) > best]
    complete = True
    if len(hot) > max_hot:
        hot = sorted(hot, key=lambda v: -max(m[v] for m in mems))[:max_hot]
        complete = False
    cands, complete_list = _pair_candidates(n, hot, mems, best, r, out_of_time)
    complete = complete and complete_list
    tried = 0
    for negest, u, v in cands:
        if -negest <= best:
            break
        if out_of_time() or (max_pairs is not None and tried >= max_pairs):
            complete = False
            break
        tried += 1
        val = _pair_value(ts, u, v, best, out_of_time)
        if val is not None:
            best = max(best, val)
    _note(info, complete=complete, pairs=tried)
    return best


# ------------------------------------------------------- last of a set
def last_of_set_value(g: Graph, X, *, floor: int | None = None, ts: "TrapSolver | None" = None,
                      out_of_time=None) -> int | None:
    """The least memory, over all orders, while the last-run operator of the set ``X``
    runs (docs/bounds.md, section 4a): the minimum over the maximal operators w of X (no
    descendant in X) of the trap value of w with ``X - {w}`` forced before it.

    With ``floor``: stops and returns None as soon as some w gives a value ``<= floor``
    (the set cannot raise a bound that is already ``floor``); also None when
    ``out_of_time()`` becomes true. One minimum cut per maximal operator of X."""
    X = sorted(set(X))
    if not X:
        return None
    ts = ts or trap_solver(g)
    xmask = 0
    for u in X:
        xmask |= 1 << u
    best = None
    for w in X:
        if out_of_time is not None and out_of_time():
            return None
        rest = xmask & ~(1 << w)
        if ts.closure_out(1 << w) & rest:
            continue  # w has a descendant in X: it never runs last among X
        val = ts.trap(w, extra_in=rest)
        if val is None:
            continue
        if best is None or val < best:
            best = val
        if floor is not None and best <= floor:
            return None
    return best


def last_of_set_bound(g: Graph, orders=None, base: int | None = None, *, time_budget: float = 2.0,
                      max_sets: int = 16, info: dict | None = None) -> int:
    """max(base, max over the sets X_t of :func:`last_of_set_value`), where X_t is the set
    of operators producing a required output of at least t bytes, for the ``max_sets``
    largest such sizes t. On training graphs X_t is "every weight gradient of at least t
    bytes": at the moment the last of them runs, all of them are resident with the
    parameters, and the minimum cut decides which smaller gradients can still wait (their
    inputs held instead). A set whose last operator in some known order already runs at
    or below the bound is skipped (it cannot raise it). Sound at any stop: each value is
    the least memory of some moment of every order; ``time_budget`` checked before every
    minimum cut."""
    t0 = time.perf_counter()
    best = base if base is not None else max(initial_bound(g), final_bound(g))
    n = g.n_ops
    if n == 0:
        return best
    ts = trap_solver(g)
    sizes = sorted({g.size[j] for j in g.output_idx if g.producer[j] != -1}, reverse=True)[:max_sets]
    mems = [order_step_memory(g, o) for o in (orders or [g.given_order()])]
    poss = []
    for o in (orders or [g.given_order()]):
        pos = [0] * n
        for k, v in enumerate(o):
            pos[v] = k
        poss.append(pos)

    def out_of_time() -> bool:
        return time.perf_counter() - t0 > time_budget

    tried, complete = 0, True
    for t in sizes:
        if out_of_time():
            complete = False
            break
        X = sorted({g.producer[j] for j in g.output_idx if g.producer[j] != -1 and g.size[j] >= t})
        if len(X) < 2:
            continue  # a single operator's value is its trap value (the trap bound)
        # in a known order the last operator of X runs with memory >= the value: skip if <= best
        if any(mem[max(X, key=pos.__getitem__)] <= best for mem, pos in zip(mems, poss)):
            continue
        tried += 1
        val = last_of_set_value(g, X, floor=best, ts=ts, out_of_time=out_of_time)
        if val is not None and val > best:
            best = val
        elif val is None and out_of_time():
            complete = False
            break
    _note(info, complete=complete, sets=tried)
    return best


# ----------------------------------------------------------------- report
def _heuristic_orders(g: Graph) -> list[list[int]]:
    """Cheap known orders used only to skip operators whose trap cannot matter."""
    return [order for _, order, _ in run_heuristics(g, ["given", "greedy", "lpmf", "dfs"])]


def bound_report(g: Graph, *, pair_budget: float = 0.3, shave_budget: float = 0.0,
                 trap_budget: float | None = None, last_budget: float = 1.0) -> dict:
    """All lower bounds with their wall times:
    ``{"graph", "operators", "lower_bound", "bounds": {name: {"value", "wall_s"[, "note"]}}}``.
    ``shave_budget`` > 0 adds the learned-precedence bound (bisection up to the best
    heuristic order's peak) within that many seconds; ``last_budget`` limits the last-of-set
    bound (seconds). ``trap_budget`` limits the trap and
    reverse bounds each (seconds; default: no limit up to :data:`REACH_MASK_MAX_OPS`
    operators, 10 s above). A bound stopped by its budget, or skipped, keeps a
    valid value (the best so far, or the bound it started from) and says why in
    ``note``."""
    out: dict = {}

    def timed(name, f):
        t = time.perf_counter()
        inf: dict = {}
        v = f(inf)
        out[name] = {"value": int(v), "wall_s": round(time.perf_counter() - t, 6)}
        if inf.get("skipped"):
            out[name]["note"] = inf["skipped"]
        elif inf.get("complete") is False:
            out[name]["note"] = "stopped by its time budget: best value so far"
        return v

    if trap_budget is None and g.n_ops > REACH_MASK_MAX_OPS:
        trap_budget = 10.0
    t = time.perf_counter()
    orders = _heuristic_orders(g)
    prep = time.perf_counter() - t
    timed("initial", lambda inf: initial_bound(g))
    timed("per_op", lambda inf: per_op_bound(g))
    timed("final", lambda inf: final_bound(g))
    tr = timed("trap", lambda inf: trap_bound(g, orders, time_budget=trap_budget, info=inf))
    timed("reverse", lambda inf: reverse_bound(g, orders, time_budget=trap_budget, info=inf))
    pb = timed("pair", lambda inf: pair_bound(g, orders, base=tr, time_budget=pair_budget, info=inf))
    timed("last_of_set", lambda inf: last_of_set_bound(g, orders, base=initial_bound(g), time_budget=last_budget,
                                                       info=inf))
    if shave_budget > 0 and g.n_ops:
        ub = min(step_max for step_max in (max(step_memory(g, o)) for o in orders))
        timed("precedence", lambda inf: precedence_bound(g, pb, ub, time_budget=shave_budget, info=inf))
    best = max(b["value"] for b in out.values())
    return {"graph": g.name, "operators": g.n_ops, "lower_bound": best, "bounds": out,
            "orders_wall_s": round(prep, 6)}




# ------------------------------------------------- learned precedences
def precedence_refutes(g: Graph, theta: int, *, time_budget: float = 5.0, max_rounds: int = 20) -> bool | None:
    """Shaving with learned precedences: True if it proves that no order has peak <= theta,
    False if it found nothing more, None if the time budget ran out
    (:func:`learn_precedences`, docs/bounds.md, section 4)."""
    return learn_precedences(g, theta, time_budget=time_budget, max_rounds=max_rounds)[0]


def learn_precedences(g: Graph, theta: int, *, time_budget: float = 5.0, max_rounds: int = 20,
                      initial: list[int] | None = None) -> tuple[bool | None, list[int] | None]:
    """Learn the precedences that every order of peak <= theta obeys.

    For incomparable u, v: if "u before v" forces a trap value above theta (the trap of v
    with u and the learned predecessors of v in its state, or the trap of u with v and the
    learned successors of u outside), then every order of peak <= theta runs v before u:
    learn that precedence (and its transitive consequences). A trap above theta with the
    learned precedences, or a pair refuted both ways, proves that no order has peak <=
    theta. Repeats until nothing new is learned (docs/bounds.md, section 4).

    ``initial``: a relation returned by an earlier call at some theta' >= theta on the same
    graph (the fixpoint or a partial one). Every order of peak <= theta has peak <= theta',
    so it obeys that relation; the search starts from it instead of the ancestors alone
    (fewer pairs to test, stronger states; docs/bounds.md 4c).

    Returns
    -------
    (status, before)
        ``(True, None)``: no order has peak <= theta. ``(False, before)``: the fixpoint, no
        refutation. ``(None, before)``: the time budget ran out first. ``before[v]`` is a
        bitmask of operators that run before v in every order of peak <= theta (its
        ancestors and the learned ones; each learned precedence holds on its own, so a
        partial result is as valid as the fixpoint). ``(None, None)`` when the graph is too
        large for the bitmasks."""
    t0 = time.perf_counter()
    n = g.n_ops
    if initial_bound(g) > theta:
        return True, None
    ts = trap_solver(g)
    r = ts.reach
    if r is None:  # learned precedences are kept as bitmasks of all operators
        return None, None
    before = list(r.anc)  # closed sets of operators known to run before v
    after = list(r.desc)
    if initial is not None:  # closed under transitivity already (add_prec keeps it so)
        if len(initial) != n:
            raise ValueError(f"learn_precedences: initial relation has {len(initial)} entries, the graph {n} operators")
        before = [a | b for a, b in zip(before, initial)]
        for v in range(n):
            m = before[v]
            while m:
                low = m & -m
                after[low.bit_length() - 1] |= 1 << v
                m ^= low

    def add_prec(a: int, b: int) -> None:  # a before b, with transitive closure
        A = before[a] | (1 << a)
        Bm = after[b] | (1 << b)
        m = Bm
        while m:
            low = m & -m
            x = low.bit_length() - 1
            before[x] |= A
            m ^= low
        m = A
        while m:
            low = m & -m
            x = low.bit_length() - 1
            after[x] |= Bm
            m ^= low

    for _ in range(max_rounds):
        states = {}
        for v in range(n):
            if time.perf_counter() - t0 > time_budget:
                return None, before
            if before[v] & after[v] or (before[v] >> v) & 1:
                return True, None  # contradictory precedences: no order within theta
            val = ts.min_resident_masks(before[v], after[v] | (1 << v), want_set=True)
            if val[0] is None:
                return True, None
            if val[0] + ts.run[v] > theta:
                return True, None
            states[v] = val[1]
        learned = 0
        for u in range(n):
            for v in range(u + 1, n):
                if ((before[v] | after[v]) >> u) & 1:
                    continue
                if time.perf_counter() - t0 > time_budget:
                    return None, before
                refuted = []
                for a, b in ((u, v), (v, u)):  # try "a before b"
                    bad = False
                    if a not in states[b]:
                        x = ts.min_resident_masks(before[b] | before[a] | (1 << a), after[b] | (1 << b))
                        bad = x is None or x + ts.run[b] > theta
                    if not bad and b in states[a]:
                        x = ts.min_resident_masks(before[a], after[a] | after[b] | (1 << b) | (1 << a))
                        bad = x is None or x + ts.run[a] > theta
                    refuted.append(bad)
                if refuted[0] and refuted[1]:
                    return True, None
                if refuted[0]:
                    add_prec(v, u)
                    learned += 1
                elif refuted[1]:
                    add_prec(u, v)
                    learned += 1
        if not learned:
            return False, before
    return False, before


def precedence_bound(g: Graph, lower: int, upper: int, *, time_budget: float = 5.0, info: dict | None = None) -> int:
    """Raise the proven lower bound ``lower`` (< ``upper``, a known order's peak) with
    :func:`precedence_refutes`: galloping upwards from ``lower`` (a refutation of theta
    proves peak >= theta + 1 and is cheap; a failure costs a full fixpoint and shrinks
    the step). Skipped (``lower`` returned) above :data:`REACH_MASK_MAX_OPS` operators."""
    t0 = time.perf_counter()
    lo = lower
    if g.n_ops > REACH_MASK_MAX_OPS:
        _note(info, skipped=f"skipped: more than {REACH_MASK_MAX_OPS} operators (needs O(n^2) bitmasks)")
        return lo
    step = max(1, (upper - lower) // 64)
    while lo < upper:
        left = time_budget - (time.perf_counter() - t0)
        if left <= 0:
            break
        th = min(lo + step - 1, upper - 1)
        res = precedence_refutes(g, th, time_budget=left)
        if res is True:
            lo = th + 1
            step *= 2
        elif res is False and step > 1:
            step = max(1, step // 4)
        else:
            break
    return lo
