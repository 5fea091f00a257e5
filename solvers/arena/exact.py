"""The exact anytime arena planner.

Search (one component at a time; see docs/arena.md for the proofs):

* **Canonical solutions.** Some optimal placement is *left-justified* (every buffer sits
  on a conflicting buffer's top, or at 0) and, listed by (offset, static rank), can be
  built by placing each next buffer at its *minimum offset* ``minoff[b]`` (the highest
  top of the placed buffers it conflicts with). The search branches only on which buffer
  comes next, in non-decreasing offset order (ties by rank) — MiniMalloc's canonical
  form (Moffitt, ASPLOS 2023).
* **Dominance.** A buffer is not placed at an offset at or above ``min_height`` (the
  lowest ``minoff + size`` of an unplaced buffer): that buffer could drop below it.
  A placed buffer that conflicts with no unplaced buffer ("hatless") ends the branching
  at its node once its subtree fails.
* **Section inference.** In every section the unplaced buffers stack above
  ``max(offset of the last placed buffer, lowest minoff among them)``; their total
  must fit under the capacity.
* **Components.** Time points no buffer crosses split the instance; each part is solved
  alone and the arena is the largest part's.
* **Anytime.** Greedy plans first (:mod:`.greedy`); then a feasibility search at the
  lower bound (static orders in round robin with doubling node limits), then a branch
  and bound that lowers the capacity under each placement it finds (its own capacity
  minimization, not a bisection over yes/no); an exhausted search proves its bound.
* **CP-SAT backstop** (``method="auto"`` after the search times out on a part, or
  ``"cpsat"``): ``AddNoOverlap2D`` with a redundant ``AddCumulative``, hinted with the
  best plan, bounded below by the proven bound.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from memsched.solvers.engines.cpsat import solve_cpsat

from .bounds import max_live
from .buffers import Buffer, check_buffers, components, conflicts, sections_of
from .check import check_placement
from .greedy import best_greedy
from .kernel import ENGINE, EXHAUSTED, FOUND, KernelState

__all__ = ["ArenaResult", "solve_arena", "PREORDERS", "METHODS"]

PREORDERS = ("WAT", "TAW", "TWA")
METHODS = ("auto", "search", "cpsat", "greedy")


@dataclass
class ArenaResult:
    """A placement and what is proven about it.

    ``status``: "optimal" (arena proven minimal), "feasible" (a placement, within
    ``capacity`` when one was given, not proven minimal), "infeasible" (proven: no
    placement fits ``capacity``), "timeout" (no placement within ``capacity`` found and
    none ruled out), "interrupted" (Ctrl-C: the best placement found so far, or None, not
    proven minimal). ``lower_bound`` is proven for the whole instance."""

    buffers: list[Buffer]
    offsets: list[int] | None
    arena_size: int | None
    lower_bound: int
    status: str
    capacity: int | None
    wall_s: float
    method: str
    max_live: int
    greedy_size: int
    nodes: int = 0
    extra: dict = field(default_factory=dict)

    def offset_map(self) -> dict[str, int]:
        if self.offsets is None:
            return {}
        return {b.id: o for b, o in zip(self.buffers, self.offsets)}


class _Abort(Exception):
    """Node limit reached (the search under this order is incomplete)."""


class _Timeout(Exception):
    pass


class _Part:
    """One component prepared for the search: numpy arrays over its buffers."""

    def __init__(self, bufs: list[Buffer]):
        self.bufs = bufs
        n = self.n = len(bufs)
        self.size = np.array([b.size for b in bufs], dtype=np.int64)
        sec = sections_of(bufs)
        self.sec = sec
        adj = conflicts(bufs)
        self.ov = [np.array(a, dtype=np.int64) for a in adj]
        flat, starts = [], []
        for mem in sec.members:
            starts.append(len(flat))
            flat.extend(mem)
        self.flat = np.array(flat, dtype=np.int64)
        self.starts = np.array(starts, dtype=np.int64)
        self.fsize = self.size[self.flat]
        self.starts_ext = np.append(self.starts, len(flat))
        self.fsec = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(self.starts_ext))
        # the section range a placement of b can change: b's and its conflicts' sections
        self.a0 = [min([sec.first[i]] + [sec.first[j] for j in adj[i]]) for i in range(n)]
        self.a1 = [max([sec.last[i]] + [sec.last[j] for j in adj[i]]) for i in range(n)]
        tot = [sum(bufs[i].size for i in mem) for mem in sec.members]
        self.total = [max((tot[s] for s in range(sec.first[i], sec.last[i])), default=0) for i in range(n)]
        self.lb = max(tot, default=0)
        self.gcd = math.gcd(*[b.size for b in bufs]) or 1  # every least arena is a multiple of it

    def rank(self, heuristic: str, among=None, tot=None) -> np.ndarray:
        """Static preorder: W width, A area, T largest section total, Z size; all descending,
        ties by index. With ``among`` (buffer indices) and ``tot`` (current section totals of
        the unplaced buffers): ranks 0.. for those buffers only, T taken from ``tot`` (the
        preorder a group gets when the search splits; other entries are -1)."""
        b = self.bufs
        sec = self.sec
        idx = range(self.n) if among is None else [int(i) for i in among]

        def key(i):
            k = []
            for c in heuristic:
                w = b[i].upper - b[i].lower
                if c == "T":
                    v = self.total[i] if tot is None else int(max(tot[sec.first[i]:sec.last[i]], default=0))
                else:
                    v = {"W": w, "A": w * b[i].size, "Z": b[i].size}[c]
                k.append(-v)
            k.append(i)
            return k

        order = sorted(idx, key=key)
        r = np.full(self.n, -1, dtype=np.int64)
        r[order] = np.arange(len(order))
        return r


class _Search:
    """Depth-first canonical search on one part for placements with height <= ``cap``.
    With ``improve``, every placement found lowers ``cap`` below it and the search goes
    on (branch and bound); without, the first placement ends the search."""

    BIG = np.int64(1) << 60

    def __init__(self, part: _Part, cap: int, rank: np.ndarray, deadline: float, node_limit: int | None,
                 improve: bool, heur: str = "WAT"):
        self.p = part
        self.cap = cap
        self.rank = rank
        self.heur = heur
        self.deadline = deadline
        self.node_limit = node_limit
        self.improve = improve
        self.nodes = 0
        self.off = np.full(part.n, -1, dtype=np.int64)
        self.best: np.ndarray | None = None
        self.best_height: int | None = None
        # cross[k]: unplaced buffers crossing the boundary between sections k and k+1
        sec = part.sec
        cross = np.zeros(max(sec.count - 1, 0), dtype=np.int64)
        for f, l in zip(sec.first, sec.last):
            if l - 1 > f:
                cross[f:l - 1] += 1
        self.cross = cross
        self.first_np = np.array(sec.first, dtype=np.int64)

    def run(self) -> bool:
        """True when a placement was found; raises _Abort/_Timeout when cut short."""
        p = self.p
        minoff = np.zeros(p.n, dtype=np.int64)
        unpl = np.ones(p.n, dtype=bool)
        low, tot = self._sections(minoff, unpl)
        if self._need(low, tot, 0) > self.cap:
            return self.best is not None
        if self._dfs(minoff, unpl, low, tot, p.n, -1, -1):
            self.best = self.off.copy()
            self.best_height = int((self.off + p.size).max())
        return self.best is not None

    def _sub(self, minoff, unpl) -> bool:
        """Solve one independent group of unplaced buffers: the canonical order restarts (offset -1)
        under the preorder recomputed from the group's current section totals."""
        low, tot = self._sections(minoff, unpl)
        if self._need(low, tot, 0) > self.cap:
            return False
        old = self.rank
        self.rank = self.p.rank(self.heur, np.flatnonzero(unpl), tot)
        try:
            return self._dfs(minoff, unpl, low, tot, int(unpl.sum()), -1, -1)
        finally:
            self.rank = old

    def _sections(self, minoff, unpl):
        """Per section: the lowest minoff of its unplaced buffers, and their total size."""
        p = self.p
        fu = unpl[p.flat]
        low = np.minimum.reduceat(np.where(fu, minoff[p.flat], self.BIG), p.starts)
        tot = np.add.reduceat(np.where(fu, p.fsize, 0), p.starts)
        return low, tot

    @staticmethod
    def _need(low, tot, o) -> int:
        """The least capacity the unplaced buffers need, section by section: they all sit at or
        above max(o, their lowest minoff) and are pairwise disjoint within a section."""
        return int(np.where(tot > 0, np.maximum(low, o) + tot, 0).max())

    strong = True

    def _stacked(self, minoff, unpl, fl, f0, o, cap) -> bool:
        """Section inference by thresholds: in a section, the unplaced buffers whose minimum
        offset is >= m all lie in [max(o, m), cap), so their sizes sum to <= cap - max(o, m)."""
        p = self.p
        mask = unpl[fl]
        if not mask.any():
            return True
        f = fl[mask]
        m = minoff[f]
        sg = p.fsec[f0:f0 + len(fl)][mask]
        order = np.lexsort((-m, sg))
        m, sg, sz = m[order], sg[order], p.size[f][order]
        cs = np.cumsum(sz)
        head = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]])
        base = np.repeat(cs[head] - sz[head], np.diff(np.r_[head, len(sg)]))
        return int((np.maximum(m, o) + cs - base).max()) <= cap

    def _dfs(self, minoff, unpl, low, tot, left, last_off, last_rank) -> bool:
        self.nodes += 1
        if self.node_limit is not None and self.nodes > self.node_limit:
            raise _Abort
        if (self.nodes & 255) == 0 and time.perf_counter() > self.deadline:
            raise _Timeout
        p = self.p
        if left == 0:
            if not self.improve:
                return True
            h = int((self.off + p.size).max())
            self.best, self.best_height = self.off.copy(), h
            self.cap = h - 1
            return False
        U = np.flatnonzero(unpl)
        mo = minoff[U]
        mh = (mo + p.size[U]).min()
        rk = self.rank[U]
        ok = (mo < mh) & ((mo > last_off) | ((mo == last_off) & (rk > last_rank)))
        cand = U[ok]
        if cand.size == 0:
            return False
        cand = cand[np.argsort(minoff[cand] * p.n + self.rank[cand], kind="stable")]
        size = p.size
        first, last = p.sec.first, p.sec.last
        # need(o) = max(A, o + T) before a child's own effects (see _need)
        has = tot > 0
        A = int((low + tot)[has].max())
        T = int(tot.max())
        for b in cand.tolist():
            o = int(minoff[b])
            sb = int(size[b])
            top = o + sb
            cap = self.cap
            if top > cap:
                continue
            s0, s1 = first[b], last[b]
            # cheap necessary test: in b's sections the rest stacks on b's top
            if top + int(tot[s0:s1].max()) - sb > cap:
                continue
            if A > cap or o + T > cap:
                break  # o only grows along the candidate list
            ovb = p.ov[b]
            ovu = ovb[unpl[ovb]] if ovb.size else ovb
            nm = minoff
            if ovu.size:
                nm = minoff.copy()
                nm[ovu] = np.maximum(nm[ovu], top)
            nu = unpl.copy()
            nu[b] = False
            # the child's section data: only sections in [a0, a1) can change
            a0, a1 = p.a0[b], p.a1[b]
            f0 = p.starts_ext[a0]
            fl = p.flat[f0:p.starts_ext[a1]]
            nlow = low.copy()
            nlow[a0:a1] = np.minimum.reduceat(np.where(nu[fl], nm[fl], self.BIG), p.starts[a0:a1] - f0)
            ntot = tot.copy()
            ntot[s0:s1] -= sb
            if self._need(nlow, ntot, o) <= cap and (not self.strong or self._stacked(nm, nu, fl, f0, o, cap)):
                self.off[b] = o
                cross = self.cross
                if s1 - 1 > s0:
                    cross[s0:s1 - 1] -= 1
                groups = None
                if not self.improve and s1 - 1 > s0 and left > 2:
                    z = s0 + np.flatnonzero(cross[s0:s1 - 1] == 0)
                    if z.size:
                        rest = np.flatnonzero(nu)
                        gid = np.searchsorted(z, self.first_np[rest], side="left")
                        if gid.min() != gid.max():
                            groups = [rest[gid == g] for g in np.unique(gid)]
                if groups is None:
                    ok = self._dfs(nm, nu, nlow, ntot, left - 1, o, int(self.rank[b]))
                else:
                    # independent parts: each must succeed, none needs another's alternatives
                    ok = True
                    for g in groups:
                        gm = np.zeros(p.n, dtype=bool)
                        gm[g] = True
                        if not self._sub(nm, gm):
                            ok = False
                            self.off[nu] = -1
                            break
                if s1 - 1 > s0:
                    cross[s0:s1 - 1] += 1
                if ok:
                    return True
                self.off[b] = -1
            if ovu.size == 0:
                break  # hatless: no sibling can succeed where this one failed
        return False


class _KSearch:
    """The same search run by the compiled kernel (:mod:`.kernel`), in chunks of nodes so that
    node limits and the deadline are honoured between chunks."""

    CHUNK = 20000

    def __init__(self, part: _Part, cap: int, rank: np.ndarray, deadline: float, node_limit: int | None,
                 improve: bool, heur: str = "WAT", split_mode: int = 2):
        self.k = KernelState(part, cap, rank, improve, heur, split_mode)
        self.deadline = deadline
        self.node_limit = node_limit
        self.improve = improve
        self.best: np.ndarray | None = None
        self.best_height: int | None = None

    @property
    def nodes(self) -> int:
        return self.k.nodes

    @property
    def cap(self) -> int:
        return self.k.cap

    def _take_best(self):
        if self.improve and self.k.st[7] >= 0 and (self.best_height is None or self.k.st[7] < self.best_height):
            self.best, self.best_height = self.k.best_off.copy(), int(self.k.st[7])

    def run(self) -> bool:
        while True:
            budget = self.CHUNK
            if self.node_limit is not None:
                budget = min(budget, self.node_limit - self.nodes)
                if budget <= 0:
                    raise _Abort
            r = self.k.run(budget)
            self._take_best()
            if r == FOUND:
                self.best = self.k.off.copy()
                self.best_height = int((self.k.off + self.k.size).max())
                return True
            if r == EXHAUSTED:
                return self.best is not None
            if self.node_limit is not None and self.nodes >= self.node_limit:
                raise _Abort
            if time.perf_counter() > self.deadline:
                raise _Timeout


def _make_search(part: _Part, cap: int, heur: str, deadline: float, node_limit: int | None, improve: bool,
                 split_mode: int = 2):
    """The compiled engine when numba is present and the arrays stay small, else numpy; the
    search under the static preorder ``heur`` (also used for the groups of a split).
    ``split_mode`` (compiled engine only, for the measured ablation): how a group starts after a
    split, 2 restart under a recomputed preorder (the default), 1 restart, 0 continue."""
    rank = part.rank(heur)
    if split_mode != 2 and ENGINE != "numba":
        raise RuntimeError("split modes other than 2 need the compiled engine (numba)")
    if ENGINE == "numba" and KernelState.fits(part):
        return _KSearch(part, cap, rank, deadline, node_limit, improve, heur, split_mode)
    return _Search(part, cap, rank, deadline, node_limit, improve, heur)


def _cpsat(part: _Part, lb: int, ub: int, hint, deadline: float, seed: int = 0):
    """CP-SAT on one part: least height in [lb, ub]. Returns (offsets|None, height|None, proven, bound)."""
    from ortools.sat.python import cp_model

    left = deadline - time.perf_counter()
    if left <= 0.05:
        return None, None, False, lb
    bufs = part.bufs
    m = cp_model.CpModel()
    h = m.NewIntVar(lb, ub, "arena")
    xs, ys, offs = [], [], []
    for i, b in enumerate(bufs):
        o = m.NewIntVar(0, max(ub - b.size, 0), f"o{i}")
        offs.append(o)
        ys.append(m.NewIntervalVar(o, b.size, o + b.size, f"y{i}"))
        xs.append(m.NewFixedSizeIntervalVar(b.lower, b.upper - b.lower, f"x{i}"))
        m.Add(o + b.size <= h)
        if hint is not None:
            m.AddHint(o, int(hint[i]))
    m.AddNoOverlap2D(xs, ys)
    m.AddCumulative(xs, [b.size for b in bufs], h)  # redundant: the max-live bound inside the model
    m.Minimize(h)
    run = solve_cpsat(m, time_limit=float(left), workers=1, seed=seed, name="cpsat-arena")
    s = run.solver
    if run.status == "infeasible":
        return None, None, True, ub + 1
    if not run.has_solution:
        return None, None, False, lb
    bound = max(lb, int(s.BestObjectiveBound()))
    return [int(s.Value(o)) for o in offs], int(s.Value(h)), run.status == "optimal", bound


def _cpsat_fit(part: _Part, cap: int, hint, seconds: float, seed: int = 0):
    """CP-SAT feasibility on one part (no objective): ("feasible", offsets) / ("infeasible", None)
    / ("unknown", None) within ``seconds``."""
    from ortools.sat.python import cp_model

    bufs = part.bufs
    m = cp_model.CpModel()
    xs, ys, offs = [], [], []
    for i, b in enumerate(bufs):
        if b.size > cap:
            return "infeasible", None
        o = m.NewIntVar(0, cap - b.size, f"o{i}")
        offs.append(o)
        ys.append(m.NewFixedSizeIntervalVar(o, b.size, f"y{i}"))
        xs.append(m.NewFixedSizeIntervalVar(b.lower, b.upper - b.lower, f"x{i}"))
        if hint is not None:
            m.AddHint(o, min(int(hint[i]), cap - b.size))
    m.AddNoOverlap2D(xs, ys)
    m.AddCumulative(xs, [b.size for b in bufs], cap)  # redundant: the max-live bound
    run = solve_cpsat(m, time_limit=max(float(seconds), 0.01), workers=1, seed=seed, name="cpsat-arena-fit")
    if run.has_solution:
        return "feasible", [int(run.solver.Value(o)) for o in offs]
    if run.status == "infeasible":
        return "infeasible", None
    return "unknown", None


def _up(x: int, g: int) -> int:
    """The least multiple of ``g`` that is >= ``x`` (every least arena is a multiple of the sizes'
    gcd: docs/arena.md, "Granularity")."""
    return -(-x // g) * g


def _fit(part: _Part, goal: int, deadline: float, method: str, stats: dict, split_mode: int = 2):
    """Is there a placement of height <= ``goal``? The static preorders in round robin with doubling
    node limits (a run that finishes under its limit is complete); in ``auto`` CP-SAT takes a turn
    in each round with a quarter of the time the round's searches took. Returns
    ("found", offsets, height) / ("exhausted", None, None) (proven: none) / ("unknown", None, None)."""
    limit = max(2 * part.n, 64)
    rnd = 0
    s = None
    try:
        while True:
            t_round = time.perf_counter()
            for h in PREORDERS:
                s = _make_search(part, goal, h, deadline, limit, improve=False, split_mode=split_mode)
                try:
                    found = s.run()
                except _Abort:
                    stats["nodes"] = stats.get("nodes", 0) + s.nodes
                    continue
                stats["nodes"] = stats.get("nodes", 0) + s.nodes
                if found:
                    return "found", s.best.tolist(), s.best_height
                return "exhausted", None, None
            s = None
            t_spent = time.perf_counter() - t_round
            if method == "auto" and t_spent >= 0.4:
                budget = min(deadline - time.perf_counter(), t_spent / 4)
                if budget <= 0:
                    return "unknown", None, None
                st, o2 = _cpsat_fit(part, goal, None, budget, seed=rnd)
                stats["cpsat_rounds"] = stats.get("cpsat_rounds", 0) + 1
                if st == "feasible":
                    stats["cpsat_solved"] = True
                    return "found", o2, max(o + b.size for o, b in zip(o2, part.bufs))
                if st == "infeasible":
                    stats["cpsat_solved"] = True
                    return "exhausted", None, None
            if time.perf_counter() >= deadline:
                return "unknown", None, None
            limit *= 2
            rnd += 1
    except _Timeout:
        if s is not None:
            stats["nodes"] = stats.get("nodes", 0) + s.nodes
        return "unknown", None, None


def _solve_part(part: _Part, capacity: int | None, minimize: bool, method: str, deadline: float, stats: dict,
                incumbent=None):
    """Returns (offsets|None, height|None, proven lower bound on this part's arena)."""
    g = part.gcd
    lb = _up(part.lb, g)
    name, off, top = best_greedy(part.bufs, stop_at=lb)
    best_off, best_h = list(off), top
    stats["greedy"] = max(stats.get("greedy", 0), top)
    if incumbent is not None:
        h_inc = max((o + b.size for o, b in zip(incumbent, part.bufs)), default=0)
        if h_inc < best_h:
            best_off, best_h = list(incumbent), h_inc
    hard_cap = capacity

    def now():
        return time.perf_counter()

    def answer():
        if hard_cap is not None and best_h > hard_cap:
            return None, None, lb
        return best_off, best_h, lb

    if hard_cap is not None and lb > hard_cap:
        return None, None, lb
    if best_h <= lb or method == "greedy":
        return answer()
    try:  # Ctrl-C: the best placement so far and the bound proven so far (status interrupted)
        if method in ("auto", "search"):
            # 1. the question asked: a placement within the capacity, when none is known yet
            if hard_cap is not None and best_h > hard_cap:
                d1 = deadline if not minimize else now() + (deadline - now()) / 2
                r, o2, h2 = _fit(part, hard_cap, d1, method, stats)
                if r == "found":
                    best_off, best_h = list(o2), h2
                elif r == "exhausted":
                    lb = max(lb, _up(hard_cap + 1, g))
                    return None, None, lb
                elif now() >= deadline:
                    stats["timeout"] = True
            if not minimize or best_h <= lb or now() >= deadline:
                if now() >= deadline and best_h > lb and minimize:
                    stats["timeout"] = True
                return answer()
            # 2. minimization, anytime: the fit at the bound (a sixth of the time) ...
            r, o2, h2 = _fit(part, lb, now() + (deadline - now()) / 6, method, stats)
            if r == "found":
                return list(o2), h2, lb
            if r == "exhausted":
                lb = _up(lb + 1, g)
            # ... the branch and bound below the best placement (a fifth of what is left) ...
            top_cap = best_h - 1 if hard_cap is None else min(best_h - 1, hard_cap)
            if best_h > lb and top_cap >= lb:
                s = _make_search(part, top_cap, PREORDERS[0], now() + (deadline - now()) / 5, None, improve=True)
                try:
                    s.run()
                    exhausted = True
                except _Timeout:
                    exhausted = False
                stats["nodes"] = stats.get("nodes", 0) + s.nodes
                if s.best is not None and s.best_height < best_h:
                    best_off, best_h = s.best.tolist(), s.best_height
                if exhausted:
                    lb = max(lb, _up(s.cap + 1, g))  # nothing at or below the final cap exists
            # ... then bisection between the bound and the best placement by fit searches: a found
            # placement lowers the top, an exhausted search raises the proven bound, an unanswered
            # probe only moves the next probe up (no claim). Each probe gets ``slice`` seconds (feasible
            # probes are mostly answered in well under that on the challenging set); when the probes
            # meet, they start again from the proven bound with twice the slice.
            lo_soft = lb
            slice_s = 2.0
            log = stats.setdefault("probe_log", [])
            while best_h > lb and now() < deadline and (hard_cap is None or lb <= hard_cap):
                hi = best_h - 1 if hard_cap is None else min(best_h - 1, hard_cap)
                lo_u, hi_u = _up(lo_soft, g) // g, hi // g
                if lo_u > hi_u:
                    lo_soft, slice_s = lb, 2 * slice_s
                    continue
                mid = (lo_u + hi_u) // 2 * g
                left = deadline - now()
                t_p = now()
                r, o2, h2 = _fit(part, mid, now() + min(left, slice_s), method, stats)
                log.append((mid, r, round(now() - t_p, 2)))
                if r == "found":
                    best_off, best_h = list(o2), h2
                elif r == "exhausted":
                    lb = max(lb, _up(mid + 1, g))
                    lo_soft = max(lo_soft, lb)
                else:
                    lo_soft = mid + g
            stats["probes"] = len(log)
            if best_h > lb and now() >= deadline:
                stats["timeout"] = True
            if best_h <= lb or (hard_cap is not None and lb > hard_cap):
                return answer()
        if method in ("auto", "cpsat") and now() < deadline and (hard_cap is None or lb <= hard_cap):
            ub = best_h if hard_cap is None else min(best_h, hard_cap)
            hint = best_off if best_h <= ub else None
            o2, h2, proven, bnd = _cpsat(part, lb, ub, hint, deadline)
            stats["cpsat"] = True
            if o2 is not None and h2 < best_h:
                best_off, best_h = o2, h2
            lb = max(lb, _up(bnd, g))
            if proven and o2 is not None:
                lb = max(lb, h2)
        return answer()
    except KeyboardInterrupt:
        stats["interrupted"] = True
        return answer()


def solve_arena(buffers, *, capacity: int | None = None, minimize: bool | None = None, method: str = "auto",
                time_limit: float = 60.0, incumbent=None) -> ArenaResult:
    """Place ``buffers``. With no ``capacity``: minimize the arena. With one: find a placement
    within it (``minimize=True``: the least such arena). ``incumbent``: offsets of a placement
    already known (checked by the independent checker; the answer is never worse than it). The
    result is re-checked by :func:`memsched.solvers.arena.check.check_placement` before it is
    returned."""
    from memsched.formulations import MemschedError

    t0 = time.perf_counter()
    bufs = check_buffers(buffers)
    if method not in METHODS:
        raise MemschedError(f"arena method must be one of {', '.join(METHODS)}, got {method!r}")
    if capacity is not None and (not isinstance(capacity, int) or capacity < 0):
        raise MemschedError(f"capacity must be a non-negative integer, got {capacity!r}")
    if minimize is None:
        minimize = capacity is None
    if incumbent is not None:
        incumbent = [int(o) if isinstance(o, np.integer) else o for o in incumbent]
        check_placement(bufs, incumbent)  # PlacementError (a MemschedError) names the buffer
    deadline = t0 + float(time_limit)
    ml = max_live(bufs)
    offsets = [0] * len(bufs)
    lb = ml
    arena = 0
    greedy = 0
    stats: dict = {"parts": 0, "interrupted": False}
    ok = True
    live = [i for i, b in enumerate(bufs) if b.size > 0]
    sub = [bufs[i] for i in live]
    for comp in components(sub):
        part = _Part([sub[i] for i in comp])
        stats["parts"] += 1
        st: dict = {}
        inc = None if incumbent is None else [incumbent[live[i]] for i in comp]
        off, h, plb = _solve_part(part, capacity, minimize, "greedy" if stats.get("interrupted") else method,
                                  deadline, st, inc)
        stats["interrupted"] = stats.get("interrupted", False) or st.get("interrupted", False)
        stats["nodes"] = stats.get("nodes", 0) + st.get("nodes", 0)
        stats["timeout"] = stats.get("timeout", False) or st.get("timeout", False)
        stats["cpsat"] = stats.get("cpsat", False) or st.get("cpsat", False)
        stats["cpsat_rounds"] = stats.get("cpsat_rounds", 0) + st.get("cpsat_rounds", 0)
        stats["cpsat_solved"] = stats.get("cpsat_solved", False) or st.get("cpsat_solved", False)
        stats["probes"] = stats.get("probes", 0) + st.get("probes", 0)
        stats.setdefault("probe_log", []).extend(st.get("probe_log", []))
        greedy = max(greedy, st.get("greedy", 0))
        lb = max(lb, plb)
        if off is None:
            ok = False
            continue
        for k, i in enumerate(comp):
            offsets[live[i]] = int(off[k])
        arena = max(arena, h)
    wall = time.perf_counter() - t0
    if not ok:
        infeasible = capacity is not None and lb > capacity
        status = "infeasible" if infeasible else ("interrupted" if stats["interrupted"] else "timeout")
        return ArenaResult(bufs, None, None, lb, status, capacity, wall, method, ml, greedy, stats.get("nodes", 0),
                           stats)
    size = check_placement(bufs, offsets, capacity)
    if size != arena:
        raise AssertionError(f"arena planner bug: checker size {size} != planner size {arena}")
    if lb > size:
        raise AssertionError(f"arena planner bug: lower bound {lb} above placement {size}")
    status = "optimal" if size == lb else ("interrupted" if stats["interrupted"] else "feasible")
    return ArenaResult(bufs, offsets, size, lb, status, capacity, time.perf_counter() - t0, method, ml, greedy,
                       stats.get("nodes", 0), stats)


class ArenaTimeout(Exception):
    """The canonical search ran out of time (raised by :func:`search_fits` / :func:`search_minimize`)."""


def _per_part(buffers, fn):
    bufs = check_buffers(buffers)
    offsets = [0] * len(bufs)
    live = [i for i, b in enumerate(bufs) if b.size > 0]
    sub = [bufs[i] for i in live]
    top = 0
    for comp in components(sub):
        part = _Part([sub[i] for i in comp])
        off = fn(part)
        if off is None:
            return None, None
        for k, i in enumerate(comp):
            offsets[live[i]] = int(off[k])
        top = max(top, max(int(o) + b.size for o, b in zip(off, part.bufs)))
    return offsets, top


def search_fits(buffers, capacity: int, *, preorder: str = "WAT", time_limit: float = 60.0):
    """The canonical search alone (no greedy, no CP-SAT, no node limits): offsets of a
    placement within ``capacity``, or None when the exhausted search proves there is none."""
    deadline = time.perf_counter() + time_limit

    def fn(part):
        s = _make_search(part, capacity, preorder, deadline, None, improve=False)
        try:
            return s.best if s.run() else None
        except _Timeout:
            raise ArenaTimeout(f"no answer within {time_limit} s") from None

    return _per_part(buffers, fn)[0]


def search_minimize(buffers, *, preorder: str = "WAT", time_limit: float = 60.0):
    """The branch and bound alone, started from the trivial stack (every buffer on top of
    the previous one): (offsets, arena) of a least arena."""
    deadline = time.perf_counter() + time_limit

    def fn(part):
        cap = int(part.size.sum())
        s = _make_search(part, cap, preorder, deadline, None, improve=True)
        try:
            s.run()
        except _Timeout:
            raise ArenaTimeout(f"no proof within {time_limit} s") from None
        return s.best

    return _per_part(buffers, fn)
