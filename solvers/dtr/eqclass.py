"""Equivalence classes of evicted storages for h_DTR-EqClass (simrd's ``DTREqClass`` and
the ``ab-eq*`` ablations).

h_DTR-EqClass (Kirisame et al., ICLR 2021, appendix) approximates e*(s) by the total
compute of the connected components ("equivalence classes") of evicted storages next to
s. As in simrd the classes are a union-find that merges on eviction and is never split:
a rematerialized storage lowers its class's value by its compute and leaves it. A new
storage gets a class node of value 0 when its operator is issued and is immaterial until
the operator runs (so a parent evicted during the parents' recomputation cascade merges
it into its class; found by the simrd oracle, docs/dtr.md).

:class:`EqClassMixin` reads the runtime core's ``adj_c``, ``adj_p``, ``evicted`` and
``st_comp``; used only by :class:`memsched.solvers.dtr.runtime.Runtime`.
"""
from __future__ import annotations

__all__ = ["EqClassMixin"]


class EqClassMixin:
    """Union-find of evicted storages (``uf_parent``, ``uf_val``; ``st_ecn[s]``: the node
    of storage s, -1 when material)."""

    def _init_eq(self) -> None:
        self.st_ecn = [-1] * self.trace.n_tensors
        self.uf_parent: list[int] = []
        self.uf_val: list = []
        # integer costs: per storage, the set of its evicted neighbours (itself excluded),
        # kept up to date on eviction, materialization and new edges (_eq_evicted,
        # _eq_materialized, _eq_new_edges), read by the cost scan (heuristics.E_EQ_EN)
        # instead of (adj_p[s] | adj_c[s]) & evicted; float costs keep the set algebra (a
        # float sum over the classes depends on their order)
        ints = all(isinstance(c, int) for c in self.o_cost)
        self.st_en = [set() for _ in range(self.trace.n_tensors)] if ints else None
        # the compiled scan's array mirrors (integer costs; solvers/dtr/eqscan.py)
        self._eqk = None
        if ints and getattr(self, "eq_kernel", False):
            from . import eqscan
            from .heuristics import spec

            mode = eqscan.DENOMINATORS.get(spec(self.h).denominator)
            if eqscan.AVAILABLE and mode is not None:
                self._eqk = eqscan.EqKernel(self.trace.n_tensors, mode)

    def _eq_issue(self, s: int) -> None:
        """A new storage ``s`` is issued: a class node of value 0, counted as evicted until
        its operator runs."""
        self.st_ecn[s] = len(self.uf_parent)
        self.uf_parent.append(-1)
        self.uf_val.append(0)
        self.evicted.add(s)
        k = self._eqk
        if k is not None:
            k.ecn[s] = k.nn
            k.node(0)

    def _eq_materialized(self, rst) -> None:
        """The storages ``rst`` were made material: each lowers its class's value by its
        compute and leaves its class (the class is not split)."""
        ecn = self.st_ecn
        en = self.st_en
        k = self._eqk
        for s in rst:
            e = ecn[s]
            if e != -1:
                r = self._find(e)
                self.uf_val[r] = self.uf_val[r] - self.st_comp[s]
                ecn[s] = -1
                if k is not None:
                    k.set_val(r, self.uf_val[r])
                    k.ecn[s] = -1
            if en is not None:
                for n in self.adj_p[s]:
                    en[n].discard(s)
                for n in self.adj_c[s]:
                    en[n].discard(s)
                en[s].discard(s)

    def _eq_evicted(self, s: int) -> None:
        """Storage ``s`` was evicted: a new node of value comp(s), merged with the class of
        every evicted neighbour."""
        node = len(self.uf_parent)
        self.uf_parent.append(-1)
        self.uf_val.append(self.st_comp[s])
        self.st_ecn[s] = node
        k = self._eqk
        if k is not None:
            k.ecn[s] = node
            k.node(self.st_comp[s])
        en = self.st_en
        if en is not None:
            for n in self.adj_p[s]:
                if n != s:
                    en[n].add(s)
            for n in self.adj_c[s]:
                if n != s:
                    en[n].add(s)
        for n in self._evicted_neighbors(s):
            left = self._find(self.st_ecn[n])
            r = self._find(node)
            if left != r:
                self.uf_parent[left] = r
                self.uf_val[r] = self.uf_val[left] + self.uf_val[r]
                if k is not None:
                    k.par[left] = r
                    k.set_val(r, self.uf_val[r])

    def _eq_new_edges(self, ps: int, rs) -> None:
        """New storage edges ps -> rs: each end that is evicted is an evicted neighbour of
        the other."""
        en, ev = self.st_en, self.evicted
        ps_ev = ps in ev
        for r in rs:
            if r != ps:
                if r in ev:
                    en[ps].add(r)
                if ps_ev:
                    en[r].add(ps)

    def _eq_pick(self, pool, clock) -> int:
        """The compiled scan (solvers/dtr/eqscan.py) for pools of 8 storages or more, the
        Python scan otherwise or when the kernel cannot decide exactly."""
        if len(pool) >= 8:
            s = self._eqk.choose(pool, clock)
            if s is not None:
                return s
        return self._py_pick(pool, clock)

    def _find(self, e: int) -> int:
        """Root of node ``e`` (path compression)."""
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
        """The evicted storages adjacent to ``s`` (its class's cost is in the heuristics
        table, :data:`.heuristics.E_EQ`)."""
        out = (self.adj_p[s] | self.adj_c[s]) & self.evicted
        out.discard(s)
        return out
