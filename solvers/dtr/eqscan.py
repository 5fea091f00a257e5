"""h_DTR-EqClass's eviction scan compiled with numba (integer costs; docs/dtr.md section 2).

Profiled on TreeLSTM (0.15, 0.3, 0.6; cProfile), the pool scan of
:data:`.heuristics.E_EQ_EN` is 78 % of an h_DTR-EqClass replay: about 350 pool entries
per eviction, nearly all with evicted neighbours (2.6 on average), each costing a few
dictionary-free but interpreted steps. :class:`EqKernel` keeps array mirrors of what the
scan reads (the union-find's parents and values, the class node of every storage, its
bytes and compute, and every storage's neighbours as linked lists of edges) and
:func:`scan` evaluates the same cost for every pool entry in pool order, with the same
rule (the last storage of least cost, ``<=``; a cost of exactly 0 ends the scan).

Exactness. The Python scan computes ``e / d`` with Python integers (true division,
correctly rounded) and compares floats. The kernel computes ``e`` and ``d`` exactly in
int64 and divides them as float64, which is the same correctly rounded value as long
as both are at most 2**53 in magnitude (each converts exactly, and one IEEE division
rounds once). When a value could leave that range the kernel returns -2 and the caller
runs the Python scan for that choice instead. The mirrors' union-find is compressed
independently of the Python lists; roots (and so class values) depend only on the
sequence of merges, which both apply alike. Sums of class values are integers, exact in
any order. A neighbour listed twice (a storage both parent and child of s) is harmless:
its class is counted once, as the Python scan counts each distinct root once.
"""
from __future__ import annotations

import os
from array import array

import numpy as np

try:  # pragma: no cover - depends on the environment
    if os.environ.get("MEMSCHED_DTR_EQ_KERNEL", "").lower() == "python":
        raise ImportError("python scan forced")
    from numba import njit

    AVAILABLE = True
except ImportError:  # pragma: no cover
    AVAILABLE = False

    def njit(*a, **k):
        def wrap(f):
            return f
        return wrap

__all__ = ["AVAILABLE", "EqKernel", "scan", "DENOMINATORS"]

EXACT = 1 << 53  # float64 holds every integer of magnitude up to 2**53 exactly
UNSAFE = -2
# denominator modes of the eq heuristics (heuristics.py): size x staleness, size, staleness, none
DENOMINATORS = {"size[s] * (clock - last[s])": 0, "size[s]": 1, "clock - last[s]": 2, None: 3}


@njit(cache=True)
def _root(par, q):
    r = q
    while par[r] != -1:
        r = par[r]
    while par[q] != -1 and par[q] != r:  # compress the mirror (roots do not change)
        nxt = par[q]
        par[q] = r
        q = nxt
    return r


@njit(cache=True)
def scan(keys, last, clock, size, comp, head, nxt, to, ecn, par, val, mark, stamp, mode):
    """Index in ``keys`` (the pool in order) of the storage h_DTR-EqClass evicts, or -2
    when an operand leaves the exactly representable range (the caller falls back)."""
    inf = np.inf
    best = inf
    bi = -1
    st = stamp[0]
    for i in range(keys.shape[0]):
        s = keys[i]
        e = comp[s]
        st += 1
        k = head[s]
        while k != -1:
            n = to[k]
            if n != s:
                q = ecn[n]
                if q != -1:
                    r = _root(par, q)
                    if mark[r] != st:
                        mark[r] = st
                        e += val[r]
            k = nxt[k]
        if e > EXACT or e < -EXACT:
            stamp[0] = st
            return UNSAFE
        if mode == 3:
            c = float(e)
        else:
            lst = last[s]
            if mode == 1:
                d = size[s]
                c = e / d if d > 0 else inf
            elif lst == -inf:
                # clock - last is +inf: d is +inf (size > 0 or staleness only), e / d is 0;
                # size 0 times inf is nan, not > 0: cost INF
                if mode == 2 or size[s] > 0:
                    c = 0.0
                else:
                    c = inf
            else:
                stale = clock - int(lst)
                if mode == 2:
                    d = stale
                else:
                    sz = size[s]
                    if stale > 0 and sz > 0 and sz > EXACT // stale:
                        stamp[0] = st
                        return UNSAFE
                    d = sz * stale
                c = e / d if d > 0 else inf
        if c <= best:
            best = c
            bi = i
        if c == 0:
            break
    stamp[0] = st
    return bi


class EqKernel:
    """Array mirrors of the state h_DTR-EqClass's scan reads, kept by the runtime at the
    points where its lists change (EqClassMixin, Runtime.compute, Runtime._add_edges)."""

    def __init__(self, n: int, mode: int):
        self.mode = mode
        # last access per storage: an array('d') the runtime writes beside st_last (item
        # writes to it are cheap) and a numpy view of the same buffer for the kernel;
        # clocks stay below 2**53 (checked per choice), so the doubles are exact
        self.last_arr = array("d", [-np.inf]) * n
        self.last = np.frombuffer(self.last_arr, dtype=np.float64)
        self.size = np.zeros(n, dtype=np.int64)
        self.comp = np.zeros(n, dtype=np.int64)
        self.ecn = np.full(n, -1, dtype=np.int64)
        self.head = np.full(n, -1, dtype=np.int64)
        cap = max(64, 2 * n)
        self.nxt = np.empty(cap, dtype=np.int64)
        self.to = np.empty(cap, dtype=np.int64)
        self.ne = 0
        self.par = np.empty(cap, dtype=np.int64)
        self.val = np.empty(cap, dtype=np.int64)
        self.mark = np.zeros(cap, dtype=np.int64)
        self.nn = 0
        self.stamp = np.zeros(1, dtype=np.int64)
        self.ok = True  # False once a value leaves int64-safe range: the Python scan takes over

    def copy(self) -> "EqKernel":
        c = object.__new__(EqKernel)
        c.__dict__.update(self.__dict__)
        for k in ("size", "comp", "ecn", "head", "nxt", "to", "par", "val", "mark", "stamp"):
            setattr(c, k, getattr(self, k).copy())
        c.last_arr = array("d", self.last_arr)
        c.last = np.frombuffer(c.last_arr, dtype=np.float64)
        return c

    def set_storage(self, s: int, size: int, comp) -> None:
        if abs(size) > EXACT or abs(comp) > EXACT:
            self.ok = False
            return
        self.size[s] = size
        self.comp[s] = comp

    def set_comp(self, s: int, comp) -> None:
        if abs(comp) > EXACT:
            self.ok = False
            return
        self.comp[s] = comp

    def node(self, v) -> None:
        """Append a union-find node of value ``v`` (the Python list's next index)."""
        i = self.nn
        if i >= self.par.shape[0]:
            cap = 2 * self.par.shape[0]
            for k in ("par", "val", "mark"):
                a = getattr(self, k)
                b = np.zeros(cap, dtype=np.int64)
                b[: a.shape[0]] = a
                setattr(self, k, b)
        self.par[i] = -1
        self.set_val(i, v)
        self.nn = i + 1

    def set_val(self, r: int, v) -> None:
        if abs(v) > EXACT:
            self.ok = False
            return
        self.val[r] = v

    def edge(self, a: int, b: int) -> None:
        """b joins a's neighbour list."""
        k = self.ne
        if k >= self.to.shape[0]:
            cap = 2 * self.to.shape[0]
            for name in ("nxt", "to"):
                x = getattr(self, name)
                y = np.empty(cap, dtype=np.int64)
                y[: x.shape[0]] = x
                setattr(self, name, y)
        self.to[k] = b
        self.nxt[k] = self.head[a]
        self.head[a] = k
        self.ne = k + 1

    def choose(self, pool, clock):
        """The storage the scan chooses in ``pool`` (not empty), or None when the kernel
        cannot decide exactly (the caller runs the Python scan)."""
        n = len(pool)
        if not self.ok or not (-EXACT <= clock <= EXACT):
            return None
        keys = np.fromiter(pool, dtype=np.int64, count=n)
        i = scan(keys, self.last, clock, self.size, self.comp, self.head, self.nxt, self.to, self.ecn, self.par,
                 self.val, self.mark, self.stamp, self.mode)
        return None if i < 0 else int(keys[i])


def warm() -> float:
    """Load (or compile) the kernel now; seconds taken. A process pays this once, at its
    first compiled choice; benchmarks call it before timing."""
    import time

    t = time.perf_counter()
    if AVAILABLE:
        z = np.zeros(2, dtype=np.int64)
        scan(z[:1], np.zeros(2), 1, z, z, np.full(2, -1, dtype=np.int64), z, z, np.full(2, -1, dtype=np.int64),
             z.copy(), z.copy(), z.copy(), np.zeros(1, dtype=np.int64), 0)
    return time.perf_counter() - t
