"""The canonical search of :mod:`.exact` compiled with numba (when numba is importable).

Same rules, same order of candidates, same proofs (docs/arena.md) as the numpy engine
``exact._Search``, less the dynamic decomposition; the state lives in arrays with undo logs so
that a search can stop after a node budget and resume (time limits are checked between
chunks by the caller). ``ENGINE`` is "numba" or "numpy"; the environment variable
``MEMSCHED_ARENA_ENGINE=numpy`` forces the numpy engine (the tests run both).
"""
from __future__ import annotations

import os

import numpy as np

try:  # pragma: no cover - depends on the environment
    if os.environ.get("MEMSCHED_ARENA_ENGINE", "").lower() == "numpy":
        raise ImportError("numpy engine forced")
    from numba import njit

    ENGINE = "numba"
except ImportError:  # pragma: no cover
    ENGINE = "numpy"

    def njit(*a, **k):
        def wrap(f):
            return f
        return wrap

__all__ = ["ENGINE", "FOUND", "EXHAUSTED", "BUDGET", "KernelState", "search_chunk"]

FOUND, EXHAUSTED, BUDGET = 1, 0, 2
BIG = np.int64(1) << np.int64(60)


@njit(cache=True)
def _before(i, j, keys, nk):
    """Static preorder comparison: keys descending, then index ascending."""
    for q in range(nk):
        if keys[i, q] != keys[j, q]:
            return keys[i, q] > keys[j, q]
    return i < j


@njit(cache=True)
def _rerank(lab, grp, unpl, first, last, tot, wid, area, size, heur, rank, rl_i, rl_v, st, gbuf, tmp, keys):
    """Give the unplaced buffers of group ``lab`` fresh ranks 0.. by the preorder ``heur`` (codes:
    0 width, 1 area, 2 largest current section total (unplaced sizes), 3 size; all descending),
    logging the old ranks for the frame's undo."""
    n = grp.shape[0]
    nk = heur.shape[0]
    cnt = 0
    for c in range(n):
        if unpl[c] and grp[c] == lab:
            gbuf[cnt] = c
            for q in range(nk):
                h = heur[q]
                if h == 0:
                    v = wid[c]
                elif h == 1:
                    v = area[c]
                elif h == 2:
                    v = 0
                    for s in range(first[c], last[c]):
                        if tot[s] > v:
                            v = tot[s]
                else:
                    v = size[c]
                keys[c, q] = v
            cnt += 1
    # bottom-up merge sort of gbuf[:cnt]
    w = 1
    src = gbuf
    dst = tmp
    while w < cnt:
        i = 0
        while i < cnt:
            a = i
            am = min(i + w, cnt)
            b = am
            bm = min(i + 2 * w, cnt)
            k = i
            while a < am and b < bm:
                if _before(src[b], src[a], keys, nk):
                    dst[k] = src[b]
                    b += 1
                else:
                    dst[k] = src[a]
                    a += 1
                k += 1
            while a < am:
                dst[k] = src[a]
                a += 1
                k += 1
            while b < bm:
                dst[k] = src[b]
                b += 1
                k += 1
            i += 2 * w
        src, dst = dst, src
        w *= 2
    top = st[15]
    for r in range(cnt):
        c = src[r]
        rl_i[top] = c
        rl_v[top] = rank[c]
        top += 1
        rank[c] = r
    st[15] = top


@njit(cache=True)
def _unrank(rank, rl_i, rl_v, st, upto):
    top = st[15]
    while top > upto:
        top -= 1
        rank[rl_i[top]] = rl_v[top]
    st[15] = top


@njit(cache=True)
def _start_group(grp, unpl, first, last, st, f_L, f_m, f_j, f_o, f_r, d_lo, d_lr, d, k,
                 tot, wid, area, size, heur, rank, rl_i, rl_v, gbuf, tmp, keys):
    """Make the next non-empty group of frame k active at depth d; False when none is left.
    The group restarts the canonical order (offset -1, rank -1) under fresh ranks computed
    from the current section totals (docs/arena.md, "Components and dynamic decomposition").
    ``st[16]`` (the split mode) selects it: 2 (the default) restart and re-rank; 1 restart with
    the static ranks; 0 continue from the split's offset and rank with the static ranks (the
    search before the restart). All three are complete; 0 and 1 exist for the measured ablation."""
    n = grp.shape[0]
    while f_j[k] < f_m[k]:
        lab = f_L[k] + f_j[k]
        cnt = 0
        lo = 1 << 60
        hi = -1
        for c in range(n):
            if unpl[c] and grp[c] == lab:
                cnt += 1
                if first[c] < lo:
                    lo = first[c]
                if last[c] > hi:
                    hi = last[c]
        if cnt > 0:
            st[12] = lab
            st[9] = d
            st[10] = lo
            st[11] = hi
            st[2] = cnt
            if st[16] == 0:  # ablation only: continue from the split's (offset, rank), old ranks
                d_lo[d] = f_o[k]
                d_lr[d] = f_r[k]
            else:
                d_lo[d] = -1
                d_lr[d] = -1
            if st[16] == 2:
                _rerank(lab, grp, unpl, first, last, tot, wid, area, size, heur, rank, rl_i, rl_v, st, gbuf, tmp,
                        keys)
            return True
        f_j[k] += 1
    return False


@njit(cache=True)
def search_chunk(size, rank, ovp, ovi, first, last, secp, seci, a0, a1,
                 minoff, unpl, low, tot, off, st, grp, cross, zeros,
                 f_d1, f_pl, f_pb, f_pg0, f_pg1, f_rl, f_o, f_r, f_L, f_m, f_j,
                 wid, area, heur, rl_i, rl_v, gbuf, tmp, keys,
                 d_lo, d_lr, d_A, d_T, d_cnt, d_pos, d_b, d_hat, d_mlog, d_llog, cand,
                 mlog_i, mlog_v, llog_i, llog_v, best_off, budget):
    """Run the depth-first search for at most ``budget`` nodes. ``st``: [depth, phase, left,
    cap, improve, mlog top, llog top, best height, nodes, base depth, group's first section,
    group's end section, active group label, frames, next label, rank log top, split mode]. Candidates are
    the unplaced buffers of the active group. A placement that leaves the group's unplaced
    buffers in independent groups (no unplaced buffer crosses a section boundary between them)
    opens a frame: the groups are solved one after the other, each restarting the canonical
    order under a preorder recomputed from the current section totals; a group that fails
    fails the split's child, and its alternatives inside earlier groups are never enumerated.
    Returns FOUND / EXHAUSTED / BUDGET."""
    n = size.shape[0]
    S = tot.shape[0]
    big = np.int64(1) << np.int64(60)
    d = st[0]
    phase = st[1]
    mtop = st[5]
    ltop = st[6]
    nodes = 0
    while True:
        left = st[2]
        cap = st[3]
        if phase == 0:  # enter the node at depth d
            if nodes >= budget:
                st[0] = d; st[1] = phase; st[5] = mtop; st[6] = ltop
                st[8] += nodes
                return 2
            nodes += 1
            if left == 0:
                if st[4] == 0:
                    # the active group is placed: the next group of the innermost frame, or close it
                    done = True
                    while st[13] > 0:
                        k = st[13] - 1
                        f_j[k] += 1
                        if _start_group(grp, unpl, first, last, st, f_L, f_m, f_j, f_o, f_r, d_lo, d_lr, d, k,
                                        tot, wid, area, size, heur, rank, rl_i, rl_v, gbuf, tmp, keys):
                            done = False
                            break
                        # every group of frame k placed: back to its parent group (all placed too)
                        _unrank(rank, rl_i, rl_v, st, f_rl[k])
                        for c in range(n):
                            if grp[c] >= f_L[k] and grp[c] < f_L[k] + f_m[k]:
                                grp[c] = f_pl[k]
                        st[12] = f_pl[k]
                        st[9] = f_pb[k]
                        st[10] = f_pg0[k]
                        st[11] = f_pg1[k]
                        st[2] = 0
                        st[13] -= 1
                    if not done:
                        nodes -= 1  # the group's root is entered below
                        continue
                    st[0] = d; st[1] = 2; st[5] = mtop; st[6] = ltop
                    st[8] += nodes
                    return 1
                h = 0
                for i in range(n):
                    if off[i] + size[i] > h:
                        h = off[i] + size[i]
                for i in range(n):
                    best_off[i] = off[i]
                st[7] = h
                st[3] = h - 1
                phase = 2
                continue
            act = st[12]
            g0 = st[10]
            g1 = st[11]
            mh = big
            for c in range(n):
                if unpl[c] and grp[c] == act:
                    v = minoff[c] + size[c]
                    if v < mh:
                        mh = v
            lo = d_lo[d]
            lr = d_lr[d]
            k = 0
            for c in range(n):
                if unpl[c] and grp[c] == act:
                    m = minoff[c]
                    if m < mh and (m > lo or (m == lo and rank[c] > lr)):
                        cand[d, k] = c
                        k += 1
            for i in range(1, k):  # insertion sort by (minoff, rank)
                x = cand[d, i]
                mx = minoff[x]
                rx = rank[x]
                j = i - 1
                while j >= 0:
                    y = cand[d, j]
                    if minoff[y] > mx or (minoff[y] == mx and rank[y] > rx):
                        cand[d, j + 1] = y
                        j -= 1
                    else:
                        break
                cand[d, j + 1] = x
            d_cnt[d] = k
            d_pos[d] = 0
            A = 0
            T = 0
            for s in range(S):
                t = tot[s]
                if t > 0:
                    if low[s] + t > A:
                        A = low[s] + t
                    if t > T and g0 <= s < g1:
                        T = t
            d_A[d] = A
            d_T[d] = T
            phase = 1
        elif phase == 1:  # try the next child of the node at depth d
            act = st[12]
            g0 = st[10]
            g1 = st[11]
            pushed = False
            while d_pos[d] < d_cnt[d]:
                b = cand[d, d_pos[d]]
                d_pos[d] += 1
                o = minoff[b]
                sb = size[b]
                top = o + sb
                if top > cap:
                    continue
                if d_A[d] > cap or o + d_T[d] > cap:
                    d_pos[d] = d_cnt[d]
                    break
                s0 = first[b]
                s1 = last[b]
                mx = 0
                for s in range(s0, s1):
                    if tot[s] > mx:
                        mx = tot[s]
                if top + mx - sb > cap:
                    continue
                # place b at o, logging what changes
                d_mlog[d] = mtop
                d_llog[d] = ltop
                hat = True
                r0 = s0  # the sections whose data can change: b's and those of raised buffers
                r1 = s1
                for q in range(ovp[b], ovp[b + 1]):
                    c = ovi[q]
                    if unpl[c]:
                        hat = False
                        if minoff[c] < top:
                            mlog_i[mtop] = c
                            mlog_v[mtop] = minoff[c]
                            mtop += 1
                            minoff[c] = top
                            if first[c] < r0:
                                r0 = first[c]
                            if last[c] > r1:
                                r1 = last[c]
                unpl[b] = False
                for s in range(s0, s1):
                    tot[s] -= sb
                for s in range(s0, s1 - 1):
                    cross[s] -= 1
                for s in range(r0, r1):
                    m = big
                    for q in range(secp[s], secp[s + 1]):
                        c = seci[q]
                        if unpl[c] and minoff[c] < m:
                            m = minoff[c]
                    if m != low[s]:
                        llog_i[ltop] = s
                        llog_v[ltop] = low[s]
                        ltop += 1
                        low[s] = m
                # only sections in [r0, r1) changed; the others passed max(A, o + T) <= cap above
                ok = True
                for s in range(r0, r1):
                    t = tot[s]
                    if t > 0:
                        l = low[s]
                        if o > l and g0 <= s < g1:  # only this group continues above o
                            l = o
                        if l + t > cap:
                            ok = False
                            break
                off[b] = o
                d_b[d] = b
                d_hat[d] = hat
                if ok:
                    d += 1
                    st[2] = left - 1
                    d_lo[d] = o
                    d_lr[d] = rank[b]
                    phase = 0
                    pushed = True
                    if st[4] == 0 and left - 1 > 1 and s1 - 1 > s0:
                        nz = 0
                        for s in range(s0, s1 - 1):
                            if cross[s] == 0:
                                zeros[nz] = s
                                nz += 1
                        if nz > 0:
                            g = -1
                            split = False
                            for c in range(n):
                                if unpl[c] and grp[c] == act:
                                    cnt = 0  # the zero boundaries left of c: its group
                                    for zi in range(nz):
                                        if zeros[zi] < first[c]:
                                            cnt += 1
                                    if g == -1:
                                        g = cnt
                                    elif cnt != g:
                                        split = True
                                        break
                            if split:
                                k = st[13]
                                f_d1[k] = d
                                f_pl[k] = act
                                f_pb[k] = st[9]
                                f_pg0[k] = g0
                                f_pg1[k] = g1
                                f_rl[k] = st[15]
                                f_o[k] = o
                                f_r[k] = rank[b]
                                f_L[k] = st[14]
                                f_m[k] = nz + 1
                                f_j[k] = 0
                                st[14] += nz + 1
                                for c in range(n):
                                    if unpl[c] and grp[c] == act:
                                        cnt = 0
                                        for zi in range(nz):
                                            if zeros[zi] < first[c]:
                                                cnt += 1
                                        grp[c] = f_L[k] + cnt
                                st[13] = k + 1
                                _start_group(grp, unpl, first, last, st, f_L, f_m, f_j, f_o, f_r, d_lo, d_lr,
                                             d, k,
                                             tot, wid, area, size, heur, rank, rl_i, rl_v, gbuf, tmp, keys)
                    break
                # undo
                off[b] = -1
                while ltop > d_llog[d]:
                    ltop -= 1
                    low[llog_i[ltop]] = llog_v[ltop]
                while mtop > d_mlog[d]:
                    mtop -= 1
                    minoff[mlog_i[mtop]] = mlog_v[mtop]
                for s in range(s0, s1):
                    tot[s] += sb
                for s in range(s0, s1 - 1):
                    cross[s] += 1
                unpl[b] = True
                if hat:
                    d_pos[d] = d_cnt[d]
            if not pushed:
                phase = 2
        else:  # the node at depth d is done: back to its parent, undo the parent's choice
            if d == st[9]:
                if st[13] == 0:
                    st[0] = d; st[1] = phase; st[5] = mtop; st[6] = ltop
                    st[8] += nodes
                    return 0
                # a group of the innermost frame has no completion: the split's child fails
                k = st[13] - 1
                _unrank(rank, rl_i, rl_v, st, f_rl[k])
                while d > f_d1[k]:
                    d -= 1
                    b = d_b[d]
                    off[b] = -1
                    while ltop > d_llog[d]:
                        ltop -= 1
                        low[llog_i[ltop]] = llog_v[ltop]
                    while mtop > d_mlog[d]:
                        mtop -= 1
                        minoff[mlog_i[mtop]] = mlog_v[mtop]
                    for s in range(first[b], last[b]):
                        tot[s] += size[b]
                    for s in range(first[b], last[b] - 1):
                        cross[s] += 1
                    unpl[b] = True
                cnt = 0
                for c in range(n):
                    if grp[c] >= f_L[k] and grp[c] < f_L[k] + f_m[k]:
                        grp[c] = f_pl[k]
                    if unpl[c] and grp[c] == f_pl[k]:
                        cnt += 1
                st[12] = f_pl[k]
                st[9] = f_pb[k]
                st[10] = f_pg0[k]
                st[11] = f_pg1[k]
                st[2] = cnt
                st[13] = k
                continue  # phase 2 again, now at the split's child depth in the parent group
            d -= 1
            st[2] = left + 1
            b = d_b[d]
            off[b] = -1
            while ltop > d_llog[d]:
                ltop -= 1
                low[llog_i[ltop]] = llog_v[ltop]
            while mtop > d_mlog[d]:
                mtop -= 1
                minoff[mlog_i[mtop]] = mlog_v[mtop]
            for s in range(first[b], last[b]):
                tot[s] += size[b]
            for s in range(first[b], last[b] - 1):
                cross[s] += 1
            unpl[b] = True
            if d_hat[d]:
                d_pos[d] = d_cnt[d]
            phase = 1


class KernelState:
    """Arrays of one search (one part, one capacity, one preorder)."""

    def __init__(self, part, cap: int, rank: np.ndarray, improve: bool, heur: str = "WAT", split_mode: int = 2):
        n = part.n
        sec = part.sec
        i64 = np.int64
        self.size = part.size.astype(i64)
        self.rank = rank.astype(i64)
        deg = [len(a) for a in part.ov]
        self.ovp = np.zeros(n + 1, dtype=i64)
        self.ovp[1:] = np.cumsum(deg)
        self.ovi = np.concatenate(part.ov).astype(i64) if n and self.ovp[-1] else np.zeros(1, dtype=i64)
        self.first = np.array(sec.first, dtype=i64)
        self.last = np.array(sec.last, dtype=i64)
        self.secp = part.starts_ext.astype(i64)
        self.seci = part.flat.astype(i64)
        self.a0 = np.array(part.a0, dtype=i64)
        self.a1 = np.array(part.a1, dtype=i64)
        self.minoff = np.zeros(n, dtype=i64)
        self.unpl = np.ones(n, dtype=np.bool_)
        self.low = np.zeros(sec.count, dtype=i64)
        self.tot = np.add.reduceat(part.fsize, part.starts).astype(i64) if sec.count else np.zeros(0, dtype=i64)
        self.off = np.full(n, -1, dtype=i64)
        self.st = np.array([0, 0, n, cap, 1 if improve else 0, 0, 0, -1, 0, 0, 0, sec.count, 0, 0, 1, 0, split_mode],
                           dtype=i64)
        self.grp = np.zeros(n, dtype=i64)
        self.zeros = np.zeros(sec.count + 1, dtype=i64)
        self.frames = [np.zeros(n + 1, dtype=i64) for _ in range(11)]
        # per-group preorders (recomputed at each group start; old ranks logged for the undo)
        self.wid = np.array([b.upper - b.lower for b in part.bufs], dtype=i64)
        self.area = self.wid * self.size
        self.heur = np.array(["WATZ".index(c) for c in heur], dtype=i64)
        self.rl_i = np.zeros(n * (n + 1) // 2 + 1, dtype=i64)
        self.rl_v = np.zeros(n * (n + 1) // 2 + 1, dtype=i64)
        self.gbuf = np.zeros(n + 1, dtype=i64)
        self.gtmp = np.zeros(n + 1, dtype=i64)
        self.keys = np.zeros((n + 1, max(len(heur), 1)), dtype=i64)
        self.cross = np.zeros(max(sec.count - 1, 0) + 1, dtype=i64)
        for f, l in zip(sec.first, sec.last):
            if l - 1 > f:
                self.cross[f:l - 1] += 1
        self.d_lo = np.full(n + 1, -1, dtype=i64)
        self.d_lr = np.full(n + 1, -1, dtype=i64)
        self.d_A = np.zeros(n + 1, dtype=i64)
        self.d_T = np.zeros(n + 1, dtype=i64)
        self.d_cnt = np.zeros(n + 1, dtype=i64)
        self.d_pos = np.zeros(n + 1, dtype=i64)
        self.d_b = np.zeros(n + 1, dtype=i64)
        self.d_hat = np.zeros(n + 1, dtype=np.bool_)
        self.d_mlog = np.zeros(n + 1, dtype=i64)
        self.d_llog = np.zeros(n + 1, dtype=i64)
        self.cand = np.zeros((n + 1, max(n, 1)), dtype=i64)
        self.mlog_i = np.zeros(int(self.ovp[-1]) + 1, dtype=i64)
        self.mlog_v = np.zeros(int(self.ovp[-1]) + 1, dtype=i64)
        m = int((self.a1 - self.a0).sum()) + 1
        self.llog_i = np.zeros(m, dtype=i64)
        self.llog_v = np.zeros(m, dtype=i64)
        self.best_off = np.full(n, -1, dtype=i64)

    @staticmethod
    def fits(part) -> bool:
        """Whether the arrays stay small (else the numpy engine is used)."""
        return part.n <= 4000 and (part.n + 1) * part.n <= 16_000_000

    def run(self, budget: int) -> int:
        return int(search_chunk(self.size, self.rank, self.ovp, self.ovi, self.first, self.last, self.secp,
                                self.seci, self.a0, self.a1, self.minoff, self.unpl, self.low, self.tot, self.off,
                                self.st, self.grp, self.cross, self.zeros, *self.frames, self.wid, self.area,
                                self.heur, self.rl_i, self.rl_v, self.gbuf, self.gtmp, self.keys, self.d_lo, self.d_lr, self.d_A, self.d_T, self.d_cnt, self.d_pos, self.d_b,
                                self.d_hat, self.d_mlog, self.d_llog, self.cand, self.mlog_i, self.mlog_v,
                                self.llog_i, self.llog_v, self.best_off, np.int64(budget)))

    @property
    def nodes(self) -> int:
        return int(self.st[8])

    @property
    def cap(self) -> int:
        return int(self.st[3])
