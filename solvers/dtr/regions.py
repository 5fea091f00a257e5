"""Regions e*(s) of the DTR heuristic: simrd's incrementally maintained regions, made fast.

h_DTR (Kirisame et al., ICLR 2021, section 4) prices an evictable storage s by
e*(s): its own compute plus that of the evicted storages it would have to recompute
with it, reached through evicted storages from s (forward over children: ``rg_*``,
backward over parents: ``rr_*``). simrd maintains these regions incrementally (absorb on
eviction, rebuild of the rematerialized storages and of the storages on their
frontiers); :class:`RegionsMixin` does exactly the same (same decisions, checked against
unmodified simrd, tests/test_dtr_oracle.py), with exactness-preserving savings described
in docs/dtr.md section 2:

* regions and closures are bitmasks over a dense numbering of the storage roots;
* the closures a rebuild reads are cached across operators and invalidated exactly
  (:meth:`RegionsMixin._changed`, :meth:`RegionsMixin._drop`);
* on acyclic storage graphs, evictions and leaf materializations become logged exact
  updates applied lazily when a cached closure is read (:meth:`_evicted_now`,
  :meth:`_materialized`, :meth:`_replay`).

The mixin reads the runtime core's state (``st_mat``, ``st_pin``, ``st_comp``,
``adj_c``, ``adj_p``) and is used only by :class:`memsched.solvers.dtr.runtime.Runtime`.
"""
from __future__ import annotations

from memsched.formulations.errors import MemschedError
from memsched.instances.dtr_trace import COMPUTE, DTRTrace

__all__ = ["RegionsMixin", "RegionInvariantError", "storage_dag"]


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

    def copy(self) -> "_Log":
        c = _Log()
        c.extend(self)
        c.bm = self.bm[:]
        return c


def storage_dag(trace: DTRTrace) -> bool:
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


class RegionsMixin:
    """The region machinery of :class:`Runtime` (regions heuristics: h_DTR, MSPS, the
    ``ab-e*`` ablations, lookahead); see the module docstring."""

    def _init_regions(self, closure_cache: bool) -> None:
        """Region state for ``self.trace``: per storage, its forward (``rg_int``,
        ``rg_front``, ``rg_c``: interior mask, frontier mask, interior compute) and backward
        (``rr_*``) region; the dense bit numbering; the weight tables; the closure caches
        and their update logs.

        Complexity: O(n) lists for n tensors, plus O(n) for the storage-graph check."""
        import numpy as np

        n = self.trace.n_tensors
        ops = self.trace.ops
        self.rg_int, self.rg_front, self.rg_c = [0] * n, [0] * n, [0] * n
        self.rr_int, self.rr_front, self.rr_c = [0] * n, [0] * n, [0] * n
        # regions as bitmasks (Python ints) over a dense numbering of the storages:
        # storage roots (outputs that alias nothing) numbered in increasing id order, so
        # a mask is narrower than one over tensor ids and lists its storages in the same
        # order (sbit[s] = 1 << dense(s), d2s[dense] = s)
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
        self._acyclic = storage_dag(self.trace)
        self._init_closure_cache(closure_cache)
        self._bind_regions()

    def _init_closure_cache(self, closure_cache: bool) -> None:
        """Closures of evicted storages (forward over adj_c, backward over adj_p), kept
        across operators and invalidated exactly (see _changed); ``closure_cache=False``:
        rebuilt per operator, the reference the tests compare with. Pending exact updates
        of cached closures (see _evicted_now, _materialized): per direction a log of
        records and, per cached closure, the log position it is up to date with."""
        n = self.trace.n_tensors
        self.closure_cache = closure_cache
        self.cl_f: dict = {}
        self.cl_r: dict = {}
        self.log_f = _Log()
        self.log_r = _Log()
        self.vi_f = [0] * n
        self.vi_r = [0] * n

    def _regions_new_edges(self, ps: int, rs) -> None:
        """New storage edges ps -> rs (an operator's argument storage to its result
        storages): the forward closure of ps and the backward closures of rs, and every
        cached closure built on them, are stale."""
        self._drop((ps,), self.cl_f, self.adj_p)
        self._drop(rs, self.cl_r, self.adj_c)

    def _regions_materialized(self, rst) -> None:
        """The storages ``rst`` were just made material by one operator: update the
        cached closures, rebuild both regions of each of them, then rebuild the regions of
        the (unpinned) storages on their frontiers, as simrd does.

        Complexity: one rebuild per storage of the frontiers (a union of cached closures)."""
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

    def _regions_evicted(self, s: int) -> None:
        """Storage ``s`` was just evicted: update the cached closures, let the regions on
        s's frontiers absorb s (simrd's Region.absorb, forward pass first), and clear s's
        own regions."""
        if self._acyclic:
            self._evicted_now(s)
        else:
            self._changed(s)
        rg_front = self.rg_front
        rr_front = self.rr_front
        self._absorb_into(s, rr_front[s], True)
        self._absorb_into(s, rg_front[s], False)  # read after the first pass, as simrd does
        self.rg_int[s] = 0
        rg_front[s] = 0
        self.rg_c[s] = 0
        self.rr_int[s] = 0
        rr_front[s] = 0
        self.rr_c[s] = 0

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

