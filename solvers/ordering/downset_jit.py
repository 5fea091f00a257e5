"""The depth-first down-set decision (:func:`.downset_dp.downset_decide`) compiled with numba.

Same search, same answer: depth-first over down-sets from the empty set, children tried in
order of (resident change, run bytes, operator), free moves with ``theta`` as the limit, a
visited set (a down-set once reached is either on the path or leads nowhere within theta),
and the lookahead prune (:class:`.downset_dp.Lookahead`) after the visited mark. What
changes is the representation only:

* a down-set is a fixed-width bitset (``W = ceil(n / 64)`` words of uint64) instead of a
  Python int; the tables (:class:`.downset_dp.DPTables`: run bytes, allocated bytes, the
  frees of each operator with the masks of their other readers, predecessor masks,
  successors) become flat arrays built from the same ``DPTables`` object, so both searches
  read identical numbers;
* the visited set is an open-addressing hash table of exact keys (every word compared: a
  fingerprint could merge two down-sets and prune a live one, so none is used); it grows by
  doubling and is bounded by ``max_table_bytes`` (the search stops, ``exact=False``, when it
  would not fit);
* the search runs in chunks of ``chunk`` new states; between chunks Python checks the time
  limit and Ctrl-C, so both stop the search with ``exact=False`` and nothing claimed.

A found order is re-evaluated with :func:`memsched.formulations.order_peak` by the caller
(:func:`.downset_dp.downset_decide`); a peak above theta would be a bug and raises.

Complexity: per state O(ready x (W + frees)) for the children and free moves, O(n) for
the lookahead vector, O(W) per hash probe; memory O(states x W) for the visited set and
O(n x (n + W)) for the path.
"""
from __future__ import annotations

import os

import numpy as np

try:  # pragma: no cover - depends on the environment
    if os.environ.get("MEMSCHED_DP_KERNEL", "").lower() == "python":
        raise ImportError("python DP forced")
    from numba import njit

    AVAILABLE = True
except ImportError:  # pragma: no cover
    AVAILABLE = False

    def njit(*a, **k):
        def wrap(f):
            return f
        return wrap

__all__ = ["AVAILABLE", "JitTables", "decide"]

# result codes of _dfs
RUNNING, FOUND, EXHAUSTED, STATE_CAP, GROW = 0, 1, 2, 3, 4
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


def _to_words(m: int, W: int) -> np.ndarray:
    return np.frombuffer(m.to_bytes(8 * W, "little"), dtype="<u8").astype(np.uint64)


class JitTables:
    """:class:`.downset_dp.DPTables` (and the lookahead's base and rows) as arrays."""

    def __init__(self, T, L):
        n = T.n
        W = max(1, (n + 63) // 64)
        self.n, self.W = n, W
        self.pred = np.zeros((n, W), dtype=np.uint64)
        for v in range(n):
            self.pred[v] = _to_words(T.pred_mask[v], W)
        ptr = [0]
        idx: list[int] = []
        for v in range(n):
            idx.extend(T.succ[v])
            ptr.append(len(idx))
        self.su_ptr = np.asarray(ptr, dtype=np.int64)
        self.su_idx = np.asarray(idx, dtype=np.int64)
        self.run = np.asarray(T.run, dtype=np.int64)
        self.alloc = np.asarray(T.alloc, dtype=np.int64)
        fptr = [0]
        fmask: list[np.ndarray] = []
        fsize: list[int] = []
        for v in range(n):
            for m, sz in T.frees[v]:
                fmask.append(_to_words(m, W))
                fsize.append(sz)
            fptr.append(len(fsize))
        self.fr_ptr = np.asarray(fptr, dtype=np.int64)
        self.fr_mask = np.asarray(fmask, dtype=np.uint64).reshape(len(fsize), W)
        self.fr_size = np.asarray(fsize, dtype=np.int64)
        self.full = _to_words(T.full, W)
        self.look = L is not None
        if L is not None:
            self.base = np.asarray(L.base, dtype=np.int64)
            self.Wm = np.ascontiguousarray(L.W, dtype=np.int64)
        else:
            self.base = np.zeros(n, dtype=np.int64)
            self.Wm = np.zeros((1, 1), dtype=np.int64)


@njit(cache=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@njit(cache=True)
def _bits_of(words, out):
    """The set bits of ``words`` in increasing order into ``out``; returns their count."""
    k = 0
    for w in range(words.shape[0]):
        x = words[w]
        while x != 0:
            low = x & (~x + np.uint64(1))
            out[k] = w * 64 + np.int64(_popcount(low - np.uint64(1)))
            k += 1
            x ^= low
    return k


@njit(cache=True)
def _within(mask, S, vw, vb):
    """Whether every bit of ``mask`` is in S plus the operator of word ``vw``, bit ``vb``."""
    for w in range(S.shape[0]):
        done = S[w] | vb if w == vw else S[w]
        if mask[w] & ~done:
            return False
    return True


@njit(cache=True)
def _step(S, v, fr_ptr, fr_mask, fr_size, run, alloc):
    """(run bytes of v, change of resident bytes) for v at the down-set S (DPTables.step)."""
    vw, vb = v // 64, np.uint64(1) << np.uint64(v % 64)
    freed = 0
    for k in range(fr_ptr[v], fr_ptr[v + 1]):
        if _within(fr_mask[k], S, vw, vb):
            freed += fr_size[k]
    return run[v], alloc[v] - freed


@njit(cache=True)
def _new_ready(S, ready, v, out, pred, su_ptr, su_idx):
    """DPTables.new_ready into ``out`` (``out`` may be ``ready``)."""
    vw, vb = v // 64, np.uint64(1) << np.uint64(v % 64)
    for w in range(S.shape[0]):
        out[w] = ready[w]
    out[vw] &= ~vb
    for k in range(su_ptr[v], su_ptr[v + 1]):
        s = su_idx[k]
        if _within(pred[s], S, vw, vb):
            out[s // 64] |= np.uint64(1) << np.uint64(s % 64)


@njit(cache=True)
def _free_moves(S, ready, res, theta, mv, snap, bits, tmp, fr_ptr, fr_mask, fr_size, run, alloc, pred, su_ptr,
                su_idx):
    """_free_moves of downset_dp with limit theta, in place on S and ready; the moved
    operators into ``mv``. Returns (res, number moved)."""
    W = S.shape[0]
    m = 0
    changed = True
    while changed:
        anyr = False
        for w in range(W):
            if ready[w] != 0:
                anyr = True
                break
        if not anyr:
            break
        changed = False
        for w in range(W):
            snap[w] = ready[w]
        nb = _bits_of(snap, bits)
        for i in range(nb):
            v = bits[i]
            r, delta = _step(S, v, fr_ptr, fr_mask, fr_size, run, alloc)
            if delta <= 0 and res + r <= theta:
                _new_ready(S, ready, v, tmp, pred, su_ptr, su_idx)
                for w in range(W):
                    ready[w] = tmp[w]
                S[v // 64] |= np.uint64(1) << np.uint64(v % 64)
                res += delta
                mv[m] = v
                m += 1
                changed = True
    return res, m


@njit(cache=True)
def _hash(S):
    h = np.uint64(0x9E3779B97F4A7C15)
    for w in range(S.shape[0]):
        h = (h ^ S[w]) * np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@njit(cache=True)
def _equal(a, b):
    for w in range(a.shape[0]):
        if a[w] != b[w]:
            return False
    return True


@njit(cache=True)
def _insert(keys, used, S):
    """Insert S into the table; True when it was not there. The table has a free slot."""
    cap = used.shape[0]
    W = S.shape[0]
    i = np.int64(_hash(S) & np.uint64(cap - 1))
    while used[i]:
        if _equal(keys[i], S):
            return False
        i = (i + 1) & (cap - 1)
    used[i] = True
    for w in range(W):
        keys[i, w] = S[w]
    return True


@njit(cache=True)
def _rehash(keys, used, nkeys, nused):
    for i in range(used.shape[0]):
        if used[i]:
            _insert(nkeys, nused, keys[i])


@njit(cache=True)
def _children(S, ready, res, theta, out, bits, dl, rn, fr_ptr, fr_mask, fr_size, run, alloc):
    """The available operators whose run stays within theta, sorted by (resident change, run
    bytes, operator) as downset_decide sorts them, into ``out``; returns their count."""
    nb = _bits_of(ready, bits)
    k = 0
    for i in range(nb):
        v = bits[i]
        r, d = _step(S, v, fr_ptr, fr_mask, fr_size, run, alloc)
        if res + r > theta:
            continue
        # insertion sort on (d, r, v)
        j = k
        while j > 0 and (dl[j - 1] > d or (dl[j - 1] == d and (rn[j - 1] > r or (rn[j - 1] == r and out[j - 1] > v)))):
            dl[j] = dl[j - 1]
            rn[j] = rn[j - 1]
            out[j] = out[j - 1]
            j -= 1
        dl[j] = d
        rn[j] = r
        out[j] = v
        k += 1
    return k


@njit(cache=True)
def _dfs(st, theta, chunk, max_states, look, stS, stR, stRes, stCond, kids, nk, kpos, ops_at, ops_len, pops,
         keys, used, full, fr_ptr, fr_mask, fr_size, run, alloc, pred, su_ptr, su_idx, Wm, scratch, iscr):
    """Run the search for up to ``chunk`` new states. ``st`` = [top, stored, count]: the
    stack top, the states counted as downset_decide counts them, the table's entries.
    Returns a code (RUNNING: chunk done, FOUND: stS[top] is full, EXHAUSTED, STATE_CAP,
    GROW: the table must grow before the next insertion)."""
    W = full.shape[0]
    n = run.shape[0]
    nS = scratch[0]
    nR = scratch[1]
    snap = scratch[2]
    tmp = scratch[3]
    bits = iscr[0]
    mv = iscr[1]
    dl = iscr[2]
    rn = iscr[3]
    top = st[0]
    new = 0
    cap = used.shape[0]
    while top >= 0:
        if _equal(stS[top], full):
            st[0] = top
            return FOUND
        if kpos[top] >= nk[top]:
            top -= 1
            continue
        if new >= chunk:
            st[0] = top
            return RUNNING
        if 10 * (st[2] + 1) > 7 * cap:
            st[0] = top
            return GROW
        v = kids[top, kpos[top]]
        kpos[top] += 1
        r, delta = _step(stS[top], v, fr_ptr, fr_mask, fr_size, run, alloc)
        _new_ready(stS[top], stR[top], v, nR, pred, su_ptr, su_idx)
        for w in range(W):
            nS[w] = stS[top, w]
        nS[v // 64] |= np.uint64(1) << np.uint64(v % 64)
        nres = stRes[top] + delta
        nres, m = _free_moves(nS, nR, nres, theta, mv, snap, bits, tmp, fr_ptr, fr_mask, fr_size, run, alloc, pred,
                              su_ptr, su_idx)
        if not _insert(keys, used, nS):
            continue
        st[2] += 1
        st[1] += 1
        new += 1
        if st[1] > max_states:
            st[0] = top
            return STATE_CAP
        d = top + 1
        if look:
            mx = -(1 << 62)
            for u in range(n):
                c = stCond[top, u] + Wm[v, u]
                for i in range(m):
                    c += Wm[mv[i], u]
                stCond[d, u] = c
                if c > mx:
                    mx = c
            if mx > theta:
                continue  # marked seen: no completion of nS stays within theta
        for w in range(W):
            stS[d, w] = nS[w]
            stR[d, w] = nR[w]
        stRes[d] = nres
        ops_at[d] = ops_at[top] + ops_len[top]
        pops[ops_at[d]] = v
        for i in range(m):
            pops[ops_at[d] + 1 + i] = mv[i]
        ops_len[d] = 1 + m
        nk[d] = _children(nS, nR, nres, theta, kids[d], bits, dl, rn, fr_ptr, fr_mask, fr_size, run, alloc)
        kpos[d] = 0
        top = d
    st[0] = top
    return EXHAUSTED


def decide(T, L, theta: int, S0: int, r0: int, res0: int, mv0, c0, *, max_states: int, deadline: float | None,
           max_table_bytes: int, chunk: int = 20_000, interrupted=None):
    """Run the compiled search from the state after the initial free moves (``S0``,
    ``r0``, ``res0``, moved ``mv0``, lookahead vector ``c0`` or None).

    Returns
    -------
    (order or None, code, states)
        ``code``: "found", "exhausted", "state cap", "memory cap", "time limit" or
        "interrupted"; ``states`` counted as :func:`.downset_dp.downset_decide` counts them.
    """
    import time

    J = JitTables(T, L)
    n, W = J.n, J.W
    D = n + 2
    stS = np.zeros((D, W), dtype=np.uint64)
    stR = np.zeros((D, W), dtype=np.uint64)
    stRes = np.zeros(D, dtype=np.int64)
    stCond = np.zeros((D, n if J.look else 1), dtype=np.int64)
    kids = np.zeros((D, max(n, 1)), dtype=np.int64)
    nk = np.zeros(D, dtype=np.int64)
    kpos = np.zeros(D, dtype=np.int64)
    ops_at = np.zeros(D, dtype=np.int64)
    ops_len = np.zeros(D, dtype=np.int64)
    pops = np.zeros(n + 1, dtype=np.int64)
    scratch = np.zeros((4, W), dtype=np.uint64)
    iscr = np.zeros((4, max(n, 1)), dtype=np.int64)
    stS[0] = _to_words(S0, W)
    stR[0] = _to_words(r0, W)
    stRes[0] = res0
    if J.look:
        stCond[0] = np.asarray(c0, dtype=np.int64)
    ops_len[0] = len(mv0)
    pops[: len(mv0)] = np.asarray(list(mv0), dtype=np.int64)
    nk[0] = _children(stS[0], stR[0], np.int64(res0), np.int64(theta), kids[0], iscr[0], iscr[2], iscr[3],
                      J.fr_ptr, J.fr_mask, J.fr_size, J.run, J.alloc)
    cap = 1 << 12
    keys = np.zeros((cap, W), dtype=np.uint64)
    used = np.zeros(cap, dtype=np.bool_)
    _insert(keys, used, stS[0])
    st = np.array([0, 1, 1], dtype=np.int64)
    while True:
        code = _dfs(st, np.int64(theta), np.int64(chunk), np.int64(max_states), J.look, stS, stR, stRes, stCond,
                    kids, nk, kpos, ops_at, ops_len, pops, keys, used, J.full, J.fr_ptr, J.fr_mask, J.fr_size, J.run,
                    J.alloc, J.pred, J.su_ptr, J.su_idx, J.Wm, scratch, iscr)
        states = int(st[1])
        if code == FOUND:
            top = int(st[0])
            k = int(ops_at[top] + ops_len[top])
            return [int(x) for x in pops[:k]], "found", states
        if code == EXHAUSTED:
            return None, "exhausted", states
        if code == STATE_CAP:
            return None, "state cap", states
        if code == GROW:
            ncap = 2 * used.shape[0]
            if ncap * (W * 8 + 1) > max_table_bytes:
                return None, "memory cap", states
            nkeys = np.zeros((ncap, W), dtype=np.uint64)
            nused = np.zeros(ncap, dtype=np.bool_)
            _rehash(keys, used, nkeys, nused)
            keys, used = nkeys, nused
        if interrupted is not None and interrupted():
            return None, "interrupted", states
        if deadline is not None and time.perf_counter() > deadline:
            return None, "time limit", states
