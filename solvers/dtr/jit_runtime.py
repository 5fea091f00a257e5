"""A compiled replay engine for the region heuristics (h_DTR, MSPS, the ``ab-e*`` ablations).

:class:`memsched.solvers.dtr.runtime.Runtime` is the reference: this module makes exactly its
decisions, for the configuration the sweeps use, in numba-compiled code (docs/dtr.md section 2,
"Compiled replay engine"). Supported (:func:`supported`, :func:`trace_tables`): a heuristic of
policy ``least`` whose state is the regions (``dtr``, ``msps``, ``ab-e-size-stale``,
``ab-e-size``, ``ab-e-stale``, ``ab-e``), the eager runtime, byte counting or an
address-aware allocator (``first-fit``, ``best-fit``, ``caching``: the decisions of
:class:`.allocator.AllocRuntime`), integer costs and sizes, an acyclic storage graph
(:func:`.regions.storage_dag`), every operator issued once, no record mode, no
``pin_extra``, no ``evict_first``, no workspace. Anything else (``coop`` included), and any
run that meets a value outside the exactly handled range, is replayed by the Python runtime
instead (:func:`run` returns None; :func:`memsched.solvers.dtr.replay.replay` and
:func:`memsched.solvers.dtr.allocator.replay_alloc` do this themselves).

What is compiled, and why it is the same replay:

* The commands, ``materialize`` (an explicit frame stack instead of recursion: the same
  steps in the same order: stamp the parents, lock the defined ones, materialize and lock
  the undefined ones in argument order, free, compute, unlock in argument order, the
  thrash test, the early-stop try), eager release, pins, the eviction loop with the
  budget-equivalence interval (``eq_lo`` / ``eq_hi``), the early-stop lower bound.
* The eviction pool: a doubly linked list in insertion order (a Python dict's order: an
  insertion appends, a deletion unlinks, assigning an existing key leaves it in place).
  ``choose`` scans it in order and keeps the last storage of least cost (``<=``), stopping
  at a cost of exactly 0; INF when the denominator is <= 0.
* Costs: Python divides two ints with correct rounding (half to even). The numerator
  (integer compute sums) must stay <= 2**53 (else the run falls back); a denominator <= 2**53
  is divided as float64 (both operands convert exactly, one rounding: the same value); a
  larger one (size x staleness up to 2**63) by an exact long division with round-half-even
  (:func:`div_rn`); a product past int64 makes the run fall back.
* Regions (simrd's incrementally maintained e*(s), :mod:`.regions`) as fixed-width bitsets
  over the dense storage numbering with a per-row range of possibly non-zero words; the
  closure cache, its exact drops and its logged updates (eviction records carry a copy of
  the evicted storage's closure, materialization records the checks) exactly as
  :class:`.regions.RegionsMixin` keeps them (acyclic path). Absorption stays simrd's
  incremental update. Every set operation is a set operation (union, difference, bit
  tests), so the order of adjacency lists does not matter; absorption walks owners in
  increasing storage order as the Python code does; weights are integer sums (any order).
  When a log's buffers are full, the closures of that direction are all dropped and the log
  is reset: a dropped closure is recomputed from the state when next read, which is what the
  cache guarantees a cached one equals (``Runtime(..., closure_cache=False)``).
* Allocators (:class:`.allocator.AllocRuntime`): after the byte check, a block per output
  (not an alias, > 0 bytes) in order; when one finds none, the blocks got are freed, one
  storage is evicted by the same heuristic choice (an eviction for want of a block) and the
  placement is tried again; with the pool empty the run fails with ``fragmentation``; an
  output whose sibling is resident has its block freed at once; an evicted storage's block is
  freed. The arena (first-fit, best-fit) keeps its free blocks as a sorted array (address,
  size) with :class:`.allocator.Arena`'s scan, split and coalescing (next, then previous);
  the caching allocator keeps each segment as a linked list of blocks in address order and
  the free blocks as an unordered list (its best fit breaks every tie by segment id and
  offset, so the order of the scan does not matter). Every comparison of a value with the
  budget (the arena's top-block fit and best-fit choice, the caching segment reserve before
  and after releasing the cached segments) is recorded as :meth:`.AllocRuntime._test` does.

The state lives in numpy arrays, so a run is executed in chunks (a work budget per call)
and the caller checks its deadline between chunks: a ``timeout`` gives outcome
'unresolved' as the Python runtime's TimeoutError does. ``MEMSCHED_DTR_JIT=python`` (or
numba missing) disables the engine.
"""
from __future__ import annotations

import math
import os
import time

import numpy as np

from memsched.instances.dtr_trace import COMPUTE, GET, PIN, RELEASE

try:  # pragma: no cover - depends on the environment
    if os.environ.get("MEMSCHED_DTR_JIT", "").lower() == "python":
        raise ImportError("python runtime forced")
    from numba import njit
    from numba.cpython.unsafe.numbers import trailing_zeros

    AVAILABLE = True
except ImportError:  # pragma: no cover
    AVAILABLE = False

    def njit(*a, **k):
        def wrap(f):
            return f
        return wrap

    def trailing_zeros(x):
        x = int(x)
        return (x & -x).bit_length() - 1

__all__ = ["AVAILABLE", "SUPPORTED_HEURISTICS", "JitRun", "supported", "trace_tables", "run", "warm", "div_rn"]

# heuristic -> denominator mode (0: size x staleness, 1: size, 2: staleness, 3: none) and
# whether the forward region keeps its interior (MSPS reads only the backward one)
SUPPORTED_HEURISTICS = {"dtr": (0, 1), "ab-e-size-stale": (0, 1), "ab-e-size": (1, 1), "ab-e-stale": (2, 1),
                        "ab-e": (3, 1), "msps": (1, 0)}
EXACT = 1 << 53
SAFE = 1 << 52  # clock, remat and model compute stay below (sums with them stay exact in float64)
I64MAX = (1 << 63) - 1
NEVER = -(1 << 62)  # last access of a storage never accessed (Python: -inf)

# ---------------------------------------------------------------- array layouts
# per-storage fields, ST[field, dense storage]
SIZE, COMP, MAT, RINT, REXT, PINNED, LAST, RCF, RCR, PPREV, PNEXT, INPOOL, HEADC, HEADP, CACHF, CACHR, VIF, VIR, \
    MARK, BLK, BSZ = range(21)
NSTF = 21
# per-tensor fields, TI[field, tensor] (static) and TD[field, tensor] (dynamic)
T_OP, T_ST, T_CADD, T_LAST, T_IDX = range(5)
D_DEF, D_EX = range(2)
# per-operator fields, OPI[field, op]
O_COST, O_TOTAL, O_ALO, O_AHI, O_RLO, O_RHI = range(6)
# scalars SC[...]
(S_CLOCK, S_MEM, S_PEAK, S_EVICT, S_EAGER, S_MODEL, S_REMAT, S_RCOUNT, S_EQLO, S_EQHI, S_POS, S_DEPTH, S_K,
 S_PEND, S_PENDX, S_SP, S_PHEAD, S_PTAIL, S_PN, S_NEDGE, S_NCF, S_NCR, S_LOGF, S_LOGR, S_SNAPF, S_SNAPR, S_CHKF,
 S_CHKR, S_NBF, S_NBR, S_STATUS, S_FKIND, S_FOP, S_FREQ, S_FMEM, S_FSHORT, S_FCLOCK, S_FDEPTH, S_FPOS, S_FLB,
 S_FREMAT, S_ECHECKS, S_BUDGET, S_STAMP, S_OPSTAMP, S_UNDTOP, S_WORK, S_FLUSHES, S_BAIL,
 # the allocator (address-aware runs): evictions for want of a block, the arena's free-block count, the
 # caching allocator's reserved total, next segment id, live segments, free blocks, node and slot stacks
 S_FRAGEV, S_NF, S_RESV, S_NEXTSID, S_NLIVE, S_NFREEL, S_NODEHI, S_NODEREC, S_SEGHI, S_SEGREC) = range(59)
NSC = 59
# float scalars SF[...]
F_LIMIT, F_ESNEXT, F_ESSTEP = range(3)
# configuration CFG[...]
C_DEN, C_FWDINT, C_EARLY, C_N, C_M, C_W, C_NSCHED, C_CAPR, C_CAPS, C_CAPC, C_CAPZ, C_ALLOC, C_CAPA, C_CAPN, \
    C_CAPG = range(15)
# frames FR[frame, field]
FR_T, FR_REMAT, FR_PHASE, FR_I, FR_ULO, FR_UN, FR_WAIT = range(7)
# row kinds of ROWS[kind, direction, storage, word]: closure frontier / interior, region
# frontier / interior (direction 0: forward over children, 1: backward over parents)
K_CF, K_CI, K_RF, K_RI = range(4)
# log records LR[direction, record, field]
L_PART, L_X, L_KIND, L_SFLO, L_SFHI, L_SFOFF, L_SILO, L_SIHI, L_SIOFF, L_CLO, L_CHI = range(11)
NLF = 11
# statuses
RUNNING, DONE, OOM, THRASH, EARLY, BAIL, YIELD, FRAG = range(8)
OUTCOMES = {DONE: "ok", OOM: "oom", THRASH: "remat_exceeded", EARLY: "thrash_or_oom", FRAG: "fragmentation"}
# allocators (CFG[C_ALLOC]): byte counting, the arena's two policies, the caching allocator
ALLOC_MODES = {"bytes": 0, "first-fit": 1, "best-fit": 2, "caching": 3}
# caching allocator: segment fields CG[field, slot], block (node) fields CN[field, node], list rows of CL
G_SID, G_SIZE, G_SMALL, G_NUSED, G_HEAD, G_LPOS = range(6)
N_SLOT, N_OFF, N_SIZE, N_FREE, N_PREV, N_NEXT, N_FPOS = range(7)
Q_FREEL, Q_LIVE, Q_NODEREC, Q_SEGREC = range(4)
MIB = 1 << 20
# bail-out reasons (the Python runtime replays the run)
BAIL_RANGE, BAIL_INVARIANT, BAIL_STATE = 1, 2, 3

U0 = np.uint64(0)
U1 = np.uint64(1)
U63 = np.uint64(63)
U255 = np.uint64(255)


# ---------------------------------------------------------------- exact division
@njit(cache=True)
def div_rn(e, d):
    """``e / d`` for integers 0 <= e <= 2**53 and 0 < d < 2**63, correctly rounded (half to
    even) as Python's int true division is: a float64 division when d <= 2**53 (exact
    operands, one rounding), else a long division to 53 bits plus guard and sticky bits."""
    if e == 0:
        return 0.0
    if d <= EXACT:
        return float(e) / float(d)
    # here e <= 2**53 < d, so 0 < e / d < 1
    r = np.uint64(e)
    dd = np.uint64(d)
    ex = 0
    while r < dd:  # r < d < 2**63: doubling stays below 2**64
        r = r << U1
        ex -= 1
    m = 1
    r = r - dd
    for _ in range(52):
        r = r << U1
        m = m * 2
        if r >= dd:
            r = r - dd
            m += 1
    r = r << U1
    g = r >= dd
    if g:
        r = r - dd
    if g and (r != U0 or (m & 1) == 1):
        m += 1
        if m == EXACT:
            m = EXACT >> 1
            ex += 1
    return math.ldexp(float(m), ex - 52)


# ---------------------------------------------------------------- bitset rows
# A row is ROWS[r] (W words) with RLO[r] .. RHI[r] bounding its non-zero words (empty when
# RLO >= RHI). Row r = (kind * 2 + direction) * m + storage; rows 8 m and 8 m + 1 are scratch
# rows. Helpers take row indices, never constants: numba compiles one version of each.
# A bit x of a row: word x >> 6, mask U1 << (x & 63).
@njit(cache=True, no_cpython_wrapper=True)
def _row_clear(ROWS, RLO, RHI, r):
    for w in range(RLO[r], RHI[r]):
        ROWS[r, w] = U0
    RLO[r] = 0
    RHI[r] = 0


@njit(cache=True, no_cpython_wrapper=True)
def _row_set(ROWS, RLO, RHI, r, x):
    w = x >> 6
    ROWS[r, w] |= U1 << np.uint64(x & 63)
    lo = RLO[r]
    hi = RHI[r]
    if lo >= hi:
        RLO[r] = w
        RHI[r] = w + 1
    elif w < lo:
        RLO[r] = w
    elif w >= hi:
        RHI[r] = w + 1


@njit(cache=True, no_cpython_wrapper=True)
def _row_or(ROWS, RLO, RHI, rd, SRC, rs, off, lo, hi):
    """Row rd |= the words lo .. hi of a row stored at SRC[rs, off + w - lo] (a row of
    ROWS: SRC = ROWS, off = lo; a copy in a log: its offset)."""
    if lo >= hi:
        return
    for w in range(lo, hi):
        ROWS[rd, w] |= SRC[rs, off + w - lo]
    clo = RLO[rd]
    chi = RHI[rd]
    if clo >= chi:
        RLO[rd] = lo
        RHI[rd] = hi
    else:
        if lo < clo:
            RLO[rd] = lo
        if hi > chi:
            RHI[rd] = hi


@njit(cache=True, no_cpython_wrapper=True)
def _weight_word(WTAB, w, x):
    """Compute of the storages of the bits of word x at word index w: one lookup per
    non-zero byte in WTAB[256 * (8 w + byte index) + byte value] (integer sums)."""
    c = 0
    base = w * 2048
    while x != U0:
        b = x & U255
        if b != U0:
            c += WTAB[base + np.int64(b)]
        x = x >> np.uint64(8)
        base += 256
    return c


# ---------------------------------------------------------------- pool (insertion ordered)
@njit(cache=True, no_cpython_wrapper=True)
def _pool_add(ST, SC, s):
    """``pool[s] = None``: appended when absent, left in place when present."""
    if ST[INPOOL, s]:
        return
    ST[INPOOL, s] = 1
    t = SC[S_PTAIL]
    ST[PPREV, s] = t
    ST[PNEXT, s] = -1
    if t == -1:
        SC[S_PHEAD] = s
    else:
        ST[PNEXT, t] = s
    SC[S_PTAIL] = s
    SC[S_PN] += 1


@njit(cache=True, no_cpython_wrapper=True)
def _pool_remove(ST, SC, s):
    """Unlink s; False when it was not in the pool."""
    if not ST[INPOOL, s]:
        return False
    ST[INPOOL, s] = 0
    p = ST[PPREV, s]
    n = ST[PNEXT, s]
    if p == -1:
        SC[S_PHEAD] = n
    else:
        ST[PNEXT, p] = n
    if n == -1:
        SC[S_PTAIL] = p
    else:
        ST[PPREV, n] = p
    SC[S_PN] -= 1
    return True


@njit(cache=True, no_cpython_wrapper=True)
def _lock(ST, SC, s):
    """Runtime._lock; False when a storage of lock count 0 is not in the pool (where the
    Python runtime fails with a KeyError: the caller bails out)."""
    if ST[RINT, s] == 0:
        if not _pool_remove(ST, SC, s):
            return False
    ST[RINT, s] += 1
    return True


# ---------------------------------------------------------------- closure cache
# Direction D = 0: forward (a closure steps over children, list HEADC; the closures built
# on y's are those of its parents, HEADP); D = 1: backward (HEADP, and HEADC). Per direction:
# cached flag CACHF + D, log position VIF + D, cache size SC[S_NCF + D], log length
# SC[S_LOGF + D] (with its buffers' fill SC[S_SNAPF + D], SC[S_CHKF + D], SC[S_NBF + D]).
@njit(cache=True, no_cpython_wrapper=True)
def _drop(ST, SC, EDG, STK, D, x, deps):
    """regions._drop: with ``deps`` 0, x's cached closure; with 1, the cached closures of the
    storages whose traversal steps onto x (regions._drop(dep[x], ...)); in both cases every
    cached closure built on a dropped one as well."""
    if SC[S_NCF + D] == 0:
        return
    cf = CACHF + D
    dep = HEADP - D
    sp = 0
    if deps == 0:
        if ST[cf, x]:
            ST[cf, x] = 0
            SC[S_NCF + D] -= 1
            STK[sp] = x
            sp += 1
    else:
        e = ST[dep, x]
        while e != -1:
            v = EDG[e, 0]
            e = EDG[e, 1]
            if ST[cf, v]:
                ST[cf, v] = 0
                SC[S_NCF + D] -= 1
                STK[sp] = v
                sp += 1
    while sp > 0:
        sp -= 1
        e = ST[dep, STK[sp]]
        while e != -1:
            v = EDG[e, 0]
            e = EDG[e, 1]
            if ST[cf, v]:
                ST[cf, v] = 0
                SC[S_NCF + D] -= 1
                STK[sp] = v
                sp += 1


@njit(cache=True, no_cpython_wrapper=True)
def _flush(ST, SC, CFG, D):
    """Drop every cached closure of direction D and reset its log (exact: a dropped closure
    is recomputed from the state when read)."""
    for y in range(CFG[C_M]):
        ST[CACHF + D, y] = 0
    SC[S_NCF + D] = 0
    SC[S_LOGF + D] = 0
    SC[S_SNAPF + D] = 0
    SC[S_CHKF + D] = 0
    SC[S_NBF + D] = 0
    SC[S_FLUSHES] += 1


@njit(cache=True, no_cpython_wrapper=True)
def _replay(ST, SC, CFG, ROWS, RLO, RHI, LR, LS, LC, LZ, D, y):
    """Apply the records logged since VI[y] to y's cached closure (regions._replay): a record
    applies iff the closure holds its mark; then mark out, add in, then the checks."""
    m = CFG[C_M]
    n = SC[S_LOGF + D]
    rf = (K_CF * 2 + D) * m + y
    ri = (K_CI * 2 + D) * m + y
    for r in range(ST[VIF + D, y], n):
        x = LR[D, r, L_X]
        row = rf if LR[D, r, L_PART] == 0 else ri
        bx = U1 << np.uint64(x & 63)
        if (ROWS[row, x >> 6] & bx) == U0:
            continue
        ROWS[row, x >> 6] &= ~bx
        if LR[D, r, L_KIND] == 0:  # an eviction: | the evicted storage's closure (a copy)
            _row_or(ROWS, RLO, RHI, rf, LS, D, LR[D, r, L_SFOFF], LR[D, r, L_SFLO], LR[D, r, L_SFHI])
            _row_or(ROWS, RLO, RHI, ri, LS, D, LR[D, r, L_SIOFF], LR[D, r, L_SILO], LR[D, r, L_SIHI])
        else:  # a leaf materialized: x joins the frontier, then the checks
            _row_set(ROWS, RLO, RHI, rf, x)
            for c in range(LR[D, r, L_CLO], LR[D, r, L_CHI]):
                w = LC[D, c, 0]
                bw = U1 << np.uint64(w & 63)
                if (ROWS[rf, w >> 6] & bw) != U0:
                    keep = False
                    for q in range(LC[D, c, 1], LC[D, c, 2]):
                        z = LZ[D, q]
                        if (ROWS[ri, z >> 6] & (U1 << np.uint64(z & 63))) != U0:
                            keep = True
                            break
                    if not keep:
                        ROWS[rf, w >> 6] &= ~bw
    ST[VIF + D, y] = n


@njit(cache=True, no_cpython_wrapper=True)
def _closure(ST, SC, CFG, ROWS, RLO, RHI, EDG, LR, LS, LC, LZ, STK, STKE, POST, D, u):
    """Compute and cache the closure of the evicted, uncached storage u (regions' clo,
    acyclic path): the uncached evicted storages reachable from u through uncached evicted
    storages are found depth first and computed in post-order (descendants first), each as
    its own interior bit, its unpinned material neighbours (frontier) and its evicted
    neighbours' closures (a cached one brought up to date first)."""
    m = CFG[C_M]
    adj = HEADC + D
    cf = CACHF + D
    with_int = D == 1 or CFG[C_FWDINT] == 1
    n = SC[S_LOGF + D]
    SC[S_STAMP] += 1
    stamp = SC[S_STAMP]
    sp = 1
    STK[0] = u
    STKE[0] = ST[adj, u]
    ST[MARK, u] = stamp
    npost = 0
    while sp > 0:
        top = STK[sp - 1]
        e = STKE[sp - 1]
        pushed = False
        while e != -1:
            v = EDG[e, 0]
            e = EDG[e, 1]
            if ST[MAT, v] == 0 and v != top and ST[cf, v] == 0 and ST[MARK, v] != stamp:
                STKE[sp - 1] = e
                ST[MARK, v] = stamp
                STK[sp] = v
                STKE[sp] = ST[adj, v]
                sp += 1
                pushed = True
                break
        if not pushed:
            POST[npost] = top
            npost += 1
            sp -= 1
    for i in range(npost):
        y = POST[i]
        rf = (K_CF * 2 + D) * m + y
        ri = (K_CI * 2 + D) * m + y
        _row_clear(ROWS, RLO, RHI, rf)
        _row_clear(ROWS, RLO, RHI, ri)
        if with_int:
            _row_set(ROWS, RLO, RHI, ri, y)
        e = ST[adj, y]
        while e != -1:
            v = EDG[e, 0]
            e = EDG[e, 1]
            if ST[MAT, v]:
                if not ST[PINNED, v]:
                    _row_set(ROWS, RLO, RHI, rf, v)
            elif v != y:
                if ST[VIF + D, v] != n:
                    _replay(ST, SC, CFG, ROWS, RLO, RHI, LR, LS, LC, LZ, D, v)
                vf = (K_CF * 2 + D) * m + v
                _row_or(ROWS, RLO, RHI, rf, ROWS, vf, RLO[vf], RLO[vf], RHI[vf])
                if with_int:
                    vi = (K_CI * 2 + D) * m + v
                    _row_or(ROWS, RLO, RHI, ri, ROWS, vi, RLO[vi], RLO[vi], RHI[vi])
        ST[cf, y] = 1
        SC[S_NCF + D] += 1
        ST[VIF + D, y] = n


# ---------------------------------------------------------------- regions
@njit(cache=True, no_cpython_wrapper=True)
def _rebuild(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, D, base):
    """Recompute base's region of direction D (regions' rebuild): the union of its
    unpinned material neighbours and its evicted neighbours' closures, base left out of the
    frontier; then the interior's compute."""
    m = CFG[C_M]
    adj = HEADC + D
    with_int = D == 1 or CFG[C_FWDINT] == 1
    n = SC[S_LOGF + D]
    rf = (K_RF * 2 + D) * m + base
    ri = (K_RI * 2 + D) * m + base
    _row_clear(ROWS, RLO, RHI, rf)
    if with_int:
        _row_clear(ROWS, RLO, RHI, ri)
    e = ST[adj, base]
    while e != -1:
        u = EDG[e, 0]
        e = EDG[e, 1]
        if ST[MAT, u]:
            if not ST[PINNED, u]:
                _row_set(ROWS, RLO, RHI, rf, u)
        else:
            if not ST[CACHF + D, u]:
                _closure(ST, SC, CFG, ROWS, RLO, RHI, EDG, LR, LS, LC, LZ, STK, STKE, POST, D, u)
            elif ST[VIF + D, u] != n:
                _replay(ST, SC, CFG, ROWS, RLO, RHI, LR, LS, LC, LZ, D, u)
            uf = (K_CF * 2 + D) * m + u
            _row_or(ROWS, RLO, RHI, rf, ROWS, uf, RLO[uf], RLO[uf], RHI[uf])
            if with_int:
                ui = (K_CI * 2 + D) * m + u
                _row_or(ROWS, RLO, RHI, ri, ROWS, ui, RLO[ui], RLO[ui], RHI[ui])
    ROWS[rf, base >> 6] &= ~(U1 << np.uint64(base & 63))
    if with_int:
        c = 0
        for w in range(RLO[ri], RHI[ri]):
            x = ROWS[ri, w]
            if x != U0:
                c += _weight_word(WTAB, w, x)
        ST[RCF + D, base] = c


@njit(cache=True, no_cpython_wrapper=True)
def _absorb(ST, CFG, ROWS, RLO, RHI, WTAB, OWN, D, fs):
    """simrd's Region.absorb for the evicted fs: every unpinned owner on fs's frontier of the
    other direction, in increasing storage order, moves fs from its frontier of direction D
    into its interior with fs's interior; fs's frontier joins its frontier; the compute of
    the newly added storages (fs always counted) is added. False when fs is not on an
    owner's frontier (the invariant simrd asserts)."""
    m = CFG[C_M]
    with_int = D == 1 or CFG[C_FWDINT] == 1
    own = (K_RF * 2 + 1 - D) * m + fs
    no = 0
    for w in range(RLO[own], RHI[own]):
        x = ROWS[own, w]
        while x != U0:
            OWN[no] = w * 64 + np.int64(trailing_zeros(x))
            no += 1
            x = x & (x - U1)
    wfs = fs >> 6
    bfs = U1 << np.uint64(fs & 63)
    comp_fs = ST[COMP, fs]
    ffs = (K_RF * 2 + D) * m + fs
    ifs = (K_RI * 2 + D) * m + fs
    for i in range(no):
        o = OWN[i]
        if ST[PINNED, o]:
            continue
        fo = (K_RF * 2 + D) * m + o
        if (ROWS[fo, wfs] & bfs) == U0:
            return False
        ROWS[fo, wfs] &= ~bfs
        _row_or(ROWS, RLO, RHI, fo, ROWS, ffs, RLO[ffs], RLO[ffs], RHI[ffs])
        if with_int:
            io = (K_RI * 2 + D) * m + o
            add = comp_fs
            lo = RLO[ifs]
            hi = RHI[ifs]
            for w in range(lo, hi):
                x = ROWS[ifs, w] & ~ROWS[io, w]
                if w == wfs:
                    x = x & ~bfs  # fs itself is counted once, above
                if x != U0:
                    ROWS[io, w] |= x
                    add += _weight_word(WTAB, w, x)
            if lo < hi:
                olo = RLO[io]
                ohi = RHI[io]
                if olo >= ohi:
                    RLO[io] = lo
                    RHI[io] = hi
                else:
                    if lo < olo:
                        RLO[io] = lo
                    if hi > ohi:
                        RHI[io] = hi
            _row_set(ROWS, RLO, RHI, io, fs)
            ST[RCF + D, o] += add
    return True


@njit(cache=True, no_cpython_wrapper=True)
def _evict(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0, STT, TD, s):
    """Runtime._evict (the caller counts eager evictions) with regions._regions_evicted: the
    cached closures holding s's frontier bit get a logged update (s's frontier bit -> s's
    closure, a copy; regions._evicted_now), the regions on s's frontiers absorb s (the
    forward regions of its backward frontier first), s's own regions are cleared. False when
    the absorb invariant fails."""
    m = CFG[C_M]
    W = CFG[C_W]
    ST[MAT, s] = 0
    SC[S_MEM] -= ST[SIZE, s]
    _pool_remove(ST, SC, s)
    for i in range(STT0[s], STT0[s + 1]):
        TD[D_DEF, STT[i]] = 0
    SC[S_EVICT] += 1
    for D in range(2):
        if ST[CACHF + D, s]:
            ST[CACHF + D, s] = 0
            SC[S_NCF + D] -= 1
    for D in range(2):
        if SC[S_NCF + D] == 0:  # nothing cached: the log starts afresh
            SC[S_LOGF + D] = 0
            SC[S_SNAPF + D] = 0
            SC[S_CHKF + D] = 0
            SC[S_NBF + D] = 0
            continue
        found = False
        e = ST[HEADP - D, s]
        while e != -1:
            if ST[CACHF + D, EDG[e, 0]]:
                found = True
                break
            e = EDG[e, 1]
        if not found:
            continue  # no cached closure has s on its frontier
        _closure(ST, SC, CFG, ROWS, RLO, RHI, EDG, LR, LS, LC, LZ, STK, STKE, POST, D, s)
        r = SC[S_LOGF + D]
        used = SC[S_SNAPF + D]
        if r >= CFG[C_CAPR] or used + 2 * W > CFG[C_CAPS]:
            _flush(ST, SC, CFG, D)
            continue
        LR[D, r, L_PART] = 0
        LR[D, r, L_X] = s
        LR[D, r, L_KIND] = 0
        for j in range(2):
            row = ((K_CF + j) * 2 + D) * m + s
            f0 = L_SFLO + 3 * j
            lo = RLO[row]
            hi = RHI[row]
            if hi < lo:
                hi = lo
            LR[D, r, f0] = lo
            LR[D, r, f0 + 1] = hi
            LR[D, r, f0 + 2] = used
            for w in range(lo, hi):
                LS[D, used + w - lo] = ROWS[row, w]
            used += hi - lo
        LR[D, r, L_CLO] = 0
        LR[D, r, L_CHI] = 0
        SC[S_SNAPF + D] = used
        SC[S_LOGF + D] = r + 1
        ST[VIF + D, s] = r + 1
    for D in range(2):
        if not _absorb(ST, CFG, ROWS, RLO, RHI, WTAB, OWN, D, s):
            return False
    for D in range(2):
        for k in range(K_RF, K_RI + 1):
            _row_clear(ROWS, RLO, RHI, (k * 2 + D) * m + s)
        ST[RCF + D, s] = 0
    return True


@njit(cache=True, no_cpython_wrapper=True)
def _regions_materialized(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, RST, nrst):
    """regions._regions_materialized: the cached closures updated (one storage: a logged
    update where it is a leaf of the evicted graph, regions._materialized; several, or not a
    leaf: dropped), both regions of each rebuilt, then the forward regions of the storages on
    their backward frontiers and the backward regions of those on their forward frontiers
    (unpinned; each rebuild reads only the state, so their order does not matter)."""
    m = CFG[C_M]
    for i in range(nrst):
        x = RST[i]
        for D in range(2):
            if ST[CACHF + D, x]:
                ST[CACHF + D, x] = 0
                SC[S_NCF + D] -= 1
        if nrst > 1:
            for D in range(2):  # regions._changed
                _drop(ST, SC, EDG, STK, D, x, nrst - nrst + 1)
            continue
        for D in range(2):
            if SC[S_NCF + D] == 0:  # nothing cached: the log starts afresh
                SC[S_LOGF + D] = 0
                SC[S_SNAPF + D] = 0
                SC[S_CHKF + D] = 0
                SC[S_NBF + D] = 0
                continue
            adj = HEADC + D
            dep = HEADP - D
            leaf = D == 1 or CFG[C_FWDINT] == 1
            if leaf:
                e = ST[adj, x]
                while e != -1:
                    w = EDG[e, 0]
                    e = EDG[e, 1]
                    if ST[MAT, w] == 0 and w != x:
                        leaf = False
                        break
            if not leaf:
                _drop(ST, SC, EDG, STK, D, x, nrst)
                continue
            found = False
            e = ST[dep, x]
            while e != -1:
                if ST[CACHF + D, EDG[e, 0]]:
                    found = True
                    break
                e = EDG[e, 1]
            if not found:
                continue  # no cached closure reaches x
            r = SC[S_LOGF + D]
            c0 = SC[S_CHKF + D]
            z = SC[S_NBF + D]
            c = c0
            full = r >= CFG[C_CAPR]
            e = ST[adj, x]
            while e != -1 and not full:
                w = EDG[e, 0]
                e = EDG[e, 1]
                if w != x and not ST[PINNED, w]:
                    # the check of neighbour w: the storages whose traversal steps onto w
                    if c >= CFG[C_CAPC]:
                        full = True
                        break
                    LC[D, c, 0] = w
                    LC[D, c, 1] = z
                    f = ST[dep, w]
                    while f != -1:
                        if z >= CFG[C_CAPZ]:
                            full = True
                            break
                        LZ[D, z] = EDG[f, 0]
                        z += 1
                        f = EDG[f, 1]
                    LC[D, c, 2] = z
                    c += 1
            if full:
                _flush(ST, SC, CFG, D)
                continue
            LR[D, r, L_PART] = 1
            LR[D, r, L_X] = x
            LR[D, r, L_KIND] = 1
            LR[D, r, L_CLO] = c0
            LR[D, r, L_CHI] = c
            SC[S_CHKF + D] = c
            SC[S_NBF + D] = z
            SC[S_LOGF + D] = r + 1
    m8 = 8 * m
    for D in range(2):
        _row_clear(ROWS, RLO, RHI, m8 + D)
    for i in range(nrst):
        s = RST[i]
        for D in range(2):
            _rebuild(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, D, s)
        for D in range(2):
            # scratch row D: the frontier of direction 1 - D (their direction-D regions)
            fr = (K_RF * 2 + 1 - D) * m + s
            _row_or(ROWS, RLO, RHI, m8 + D, ROWS, fr, RLO[fr], RLO[fr], RHI[fr])
    for D in range(2):
        t = m8 + D
        for w in range(RLO[t], RHI[t]):
            x = ROWS[t, w]
            while x != U0:
                y = w * 64 + np.int64(trailing_zeros(x))
                x = x & (x - U1)
                if not ST[PINNED, y]:
                    _rebuild(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, D, y)


# ---------------------------------------------------------------- eviction choice
@njit(cache=True, no_cpython_wrapper=True)
def _choose(ST, SC, CFG):
    """The storage to evict: the last of least cost in pool order, a cost of 0 stops the
    scan (heuristics.bind's choose). -2: an operand outside the exactly handled range."""
    mode = CFG[C_DEN]
    clock = SC[S_CLOCK]
    best = np.inf
    bs = -1
    s = SC[S_PHEAD]
    while s != -1:
        e = ST[COMP, s] + (ST[RCF, s] + ST[RCR, s])
        if e > EXACT or e < 0:
            return -2
        if mode == 3:
            c = float(e)
        elif mode == 1:
            d = ST[SIZE, s]
            c = div_rn(e, d) if d > 0 else np.inf
        else:
            last = ST[LAST, s]
            if last == NEVER:
                # clock - last is inf: e / inf is 0 (size x inf: nan for size 0, not > 0)
                c = 0.0 if (mode == 2 or ST[SIZE, s] > 0) else np.inf
            else:
                stale = clock - last
                if mode == 2:
                    d = stale
                else:
                    sz = ST[SIZE, s]
                    if stale > 0 and sz > 0 and sz > I64MAX // stale:
                        return -2
                    d = sz * stale
                c = div_rn(e, d) if d > 0 else np.inf
        if c <= best:
            best = c
            bs = s
        if c == 0:
            break
        s = ST[PNEXT, s]
    return bs


# ---------------------------------------------------------------- the early stop's bound
@njit(cache=True, no_cpython_wrapper=True)
def _lower_bound(SCH, OPI, ARGS, TI, TD, SC, CFG, OPSEEN, LBS):
    """Runtime.remat_lower_bound: the summed cost of the distinct operators of the
    undefined existing tensors read at or after the current position, closed under
    undefined arguments, without the operator of the command being executed."""
    pos = SC[S_POS]
    cur = SCH[pos, 1] if SCH[pos, 0] == COMPUTE else -1
    SC[S_OPSTAMP] += 1
    stamp = SC[S_OPSTAMP]
    sp = 0
    for t in range(CFG[C_N]):
        if TD[D_DEF, t] == 0 and TD[D_EX, t] == 1 and TI[T_LAST, t] >= pos:
            LBS[sp] = t
            sp += 1
    c = 0
    while sp > 0:
        sp -= 1
        t = LBS[sp]
        o = TI[T_OP, t]
        if o == cur or OPSEEN[o] == stamp:
            continue
        OPSEEN[o] = stamp
        c += OPI[O_COST, o]
        for i in range(OPI[O_ALO, o], OPI[O_AHI, o]):
            p = ARGS[i]
            if TD[D_DEF, p] == 0:
                LBS[sp] = p
                sp += 1
    return c


# ---------------------------------------------------------------- allocators (AllocRuntime)
# The budget is the allocator's capacity. Every comparison of a value with it goes through
# _test, which records the value as AllocRuntime._test does (eq_lo / eq_hi). Return codes of
# the allocation functions: a block (>= 0), -1 no block, -2 an array is full (the run bails
# out and the Python runtime replays it; never seen with the capacities run() sets).
@njit(cache=True, no_cpython_wrapper=True)
def _test(SC, v):
    """AllocRuntime._test: ``v > budget``, v recorded as a tested value."""
    if v > SC[S_BUDGET]:
        if v < SC[S_EQHI]:
            SC[S_EQHI] = v
        return True
    if v > SC[S_EQLO]:
        SC[S_EQLO] = v
    return False


@njit(cache=True, no_cpython_wrapper=True)
def _arena_alloc(SC, CFG, AF, size):
    """Arena.alloc: the free blocks are AF[0, :nf] (addresses, increasing) and AF[1, :nf]
    (sizes); the top block (the last free block when it ends at the capacity) is reached
    only through the recorded tests ``top + size > budget`` (fit) and, best-fit,
    ``top + s > budget`` (smaller than the smallest lower fitting block of s bytes; ties go
    to the lower block). The block's address, or -1."""
    cap = SC[S_BUDGET]
    nf = SC[S_NF]
    if nf > 0 and AF[0, nf - 1] + AF[1, nf - 1] == cap:
        top = AF[0, nf - 1]
        n = nf - 1
    else:
        top = cap
        n = nf
    best = -1
    bi = -1
    if CFG[C_ALLOC] == 1:  # first-fit: the lowest lower block that fits, else the top block
        for k in range(n):
            if AF[1, k] >= size:
                best = AF[0, k]
                bi = k
                break
        if best == -1 and not _test(SC, top + size):
            best = top
            bi = n
    else:  # best-fit: the smallest (lowest among equals), the top block when strictly smaller
        bs = 0
        for k in range(n):
            s = AF[1, k]
            if s >= size and (best == -1 or s < bs):
                best = AF[0, k]
                bs = s
                bi = k
        if not _test(SC, top + size) and (best == -1 or _test(SC, top + bs)):
            best = top
            bi = n
    if best == -1:
        return -1
    s = AF[1, bi]
    if s > size:  # split: the rest stays free in its place
        AF[0, bi] = best + size
        AF[1, bi] = s - size
    else:
        for k in range(bi, nf - 1):
            AF[0, k] = AF[0, k + 1]
            AF[1, k] = AF[1, k + 1]
        SC[S_NF] = nf - 1
    return best


@njit(cache=True, no_cpython_wrapper=True)
def _arena_free(SC, CFG, AF, addr, size):
    """Arena.free: coalesce with the next free block, then with the previous one. False when
    the free-block array is full."""
    nf = SC[S_NF]
    lo = 0
    hi = nf
    while lo < hi:  # bisect_left
        mid = (lo + hi) >> 1
        if AF[0, mid] < addr:
            lo = mid + 1
        else:
            hi = mid
    i = lo
    nxt = i < nf and AF[0, i] == addr + size
    prv = i > 0 and AF[0, i - 1] + AF[1, i - 1] == addr
    if nxt and prv:
        AF[1, i - 1] += size + AF[1, i]
        for k in range(i, nf - 1):
            AF[0, k] = AF[0, k + 1]
            AF[1, k] = AF[1, k + 1]
        SC[S_NF] = nf - 1
    elif nxt:
        AF[0, i] = addr
        AF[1, i] += size
    elif prv:
        AF[1, i - 1] += size
    else:
        if nf >= CFG[C_CAPA]:
            return False
        for k in range(nf, i, -1):
            AF[0, k] = AF[0, k - 1]
            AF[1, k] = AF[1, k - 1]
        AF[0, i] = addr
        AF[1, i] = size
        SC[S_NF] = nf + 1
    return True


@njit(cache=True, no_cpython_wrapper=True)
def _freel_add(SC, CN, CL, n):
    k = SC[S_NFREEL]
    CL[Q_FREEL, k] = n
    CN[N_FPOS, n] = k
    SC[S_NFREEL] = k + 1


@njit(cache=True, no_cpython_wrapper=True)
def _freel_remove(SC, CN, CL, n):
    k = CN[N_FPOS, n]
    last = SC[S_NFREEL] - 1
    q = CL[Q_FREEL, last]
    CL[Q_FREEL, k] = q
    CN[N_FPOS, q] = k
    CN[N_FPOS, n] = -1
    SC[S_NFREEL] = last


@njit(cache=True, no_cpython_wrapper=True)
def _node_new(SC, CFG, CL):
    """A block record (recycled first); -2 when none is left."""
    if SC[S_NODEREC] > 0:
        SC[S_NODEREC] -= 1
        return CL[Q_NODEREC, SC[S_NODEREC]]
    n = SC[S_NODEHI]
    if n >= CFG[C_CAPN]:
        return -2
    SC[S_NODEHI] = n + 1
    return n


@njit(cache=True, no_cpython_wrapper=True)
def _node_drop(SC, CL, n):
    CL[Q_NODEREC, SC[S_NODEREC]] = n
    SC[S_NODEREC] += 1


@njit(cache=True, no_cpython_wrapper=True)
def _release_cached(SC, CN, CG, CL):
    """CachingAllocator.release_cached: every segment without a used block is released (it
    is one free block then: frees coalesce). False if not (never: the invariant)."""
    for i in range(SC[S_NLIVE] - 1, -1, -1):  # swap-removal from the end: each slot seen once
        g = CL[Q_LIVE, i]
        if CG[G_NUSED, g] != 0:
            continue
        n = CG[G_HEAD, g]
        if CN[N_NEXT, n] != -1 or CN[N_FREE, n] == 0:
            return False
        SC[S_RESV] -= CG[G_SIZE, g]
        _freel_remove(SC, CN, CL, n)
        _node_drop(SC, CL, n)
        last = SC[S_NLIVE] - 1
        q = CL[Q_LIVE, last]
        CL[Q_LIVE, i] = q
        CG[G_LPOS, q] = i
        SC[S_NLIVE] = last
        CL[Q_SEGREC, SC[S_SEGREC]] = g
        SC[S_SEGREC] += 1
    return True


@njit(cache=True, no_cpython_wrapper=True)
def _caching_alloc(SC, CFG, CN, CG, CL, size):
    """CachingAllocator.alloc: the request rounded up to 512 B; the smallest cached free
    block of its pool that holds it (ties: lower segment id, then lower offset; the free
    blocks' order does not matter); else a new segment if ``reserved + segment <= budget``,
    else every fully free segment released and the test made again (both recorded); the
    block split when the rest is >= 512 B (small pool) or > 1 MiB (large pool). The block
    record, -1, or -2 (arrays full)."""
    size = max(512, ((size + 511) // 512) * 512)
    small = 1 if size <= MIB else 0
    best = -1
    bs = 0
    bsid = 0
    boff = 0
    for k in range(SC[S_NFREEL]):
        n = CL[Q_FREEL, k]
        g = CN[N_SLOT, n]
        if CG[G_SMALL, g] != small:
            continue
        s = CN[N_SIZE, n]
        if s < size:
            continue
        sid = CG[G_SID, g]
        off = CN[N_OFF, n]
        if best == -1 or s < bs or (s == bs and (sid < bsid or (sid == bsid and off < boff))):
            best, bs, bsid, boff = n, s, sid, off
    if best == -1:
        if small:
            ss = 2 * MIB
        elif size < 10 * MIB:
            ss = 20 * MIB
        else:
            ss = ((size + 2 * MIB - 1) // (2 * MIB)) * (2 * MIB)
        if _test(SC, SC[S_RESV] + ss):
            if not _release_cached(SC, CN, CG, CL):
                return -2
            if _test(SC, SC[S_RESV] + ss):
                return -1
        if SC[S_SEGREC] > 0:
            SC[S_SEGREC] -= 1
            g = CL[Q_SEGREC, SC[S_SEGREC]]
        elif SC[S_SEGHI] < CFG[C_CAPG]:
            g = SC[S_SEGHI]
            SC[S_SEGHI] = g + 1
        else:
            return -2
        n = _node_new(SC, CFG, CL)
        if n < 0:
            return -2
        CG[G_SID, g] = SC[S_NEXTSID]
        SC[S_NEXTSID] += 1
        CG[G_SIZE, g] = ss
        CG[G_SMALL, g] = small
        CG[G_NUSED, g] = 0
        CG[G_HEAD, g] = n
        CG[G_LPOS, g] = SC[S_NLIVE]
        CL[Q_LIVE, SC[S_NLIVE]] = g
        SC[S_NLIVE] += 1
        CN[N_SLOT, n] = g
        CN[N_OFF, n] = 0
        CN[N_SIZE, n] = ss
        CN[N_FREE, n] = 1
        CN[N_PREV, n] = -1
        CN[N_NEXT, n] = -1
        _freel_add(SC, CN, CL, n)
        SC[S_RESV] += ss
        best = n
    _freel_remove(SC, CN, CL, best)
    CN[N_FREE, best] = 0
    g = CN[N_SLOT, best]
    rem = CN[N_SIZE, best] - size
    if (rem >= 512) if small else (rem > MIB):
        q = _node_new(SC, CFG, CL)
        if q < 0:
            return -2
        nx = CN[N_NEXT, best]
        CN[N_SLOT, q] = g
        CN[N_OFF, q] = CN[N_OFF, best] + size
        CN[N_SIZE, q] = rem
        CN[N_FREE, q] = 1
        CN[N_PREV, q] = best
        CN[N_NEXT, q] = nx
        if nx != -1:
            CN[N_PREV, nx] = q
        CN[N_NEXT, best] = q
        CN[N_SIZE, best] = size
        _freel_add(SC, CN, CL, q)
    CG[G_NUSED, g] += 1
    return best


@njit(cache=True, no_cpython_wrapper=True)
def _caching_free(SC, CN, CG, CL, n):
    """CachingAllocator.free: the block coalesces with the next block of its segment, then
    with the previous one, when free (a segment is tiled by its blocks in address order)."""
    g = CN[N_SLOT, n]
    CG[G_NUSED, g] -= 1
    CN[N_FREE, n] = 1
    nx = CN[N_NEXT, n]
    if nx != -1 and CN[N_FREE, nx]:
        CN[N_SIZE, n] += CN[N_SIZE, nx]
        _freel_remove(SC, CN, CL, nx)
        nn = CN[N_NEXT, nx]
        CN[N_NEXT, n] = nn
        if nn != -1:
            CN[N_PREV, nn] = n
        _node_drop(SC, CL, nx)
    pv = CN[N_PREV, n]
    if pv != -1 and CN[N_FREE, pv]:
        CN[N_SIZE, pv] += CN[N_SIZE, n]
        nn = CN[N_NEXT, n]
        CN[N_NEXT, pv] = nn
        if nn != -1:
            CN[N_PREV, nn] = pv
        _node_drop(SC, CL, n)
    else:
        _freel_add(SC, CN, CL, n)


@njit(cache=True, no_cpython_wrapper=True)
def _block_alloc(SC, CFG, AF, CN, CG, CL, size):
    if CFG[C_ALLOC] == 3:
        return _caching_alloc(SC, CFG, CN, CG, CL, size)
    return _arena_alloc(SC, CFG, AF, size)


@njit(cache=True, no_cpython_wrapper=True)
def _block_free(SC, CFG, AF, CN, CG, CL, b, size):
    """Free block b (an arena address of ``size`` bytes, or a caching block record); False
    when an array is full."""
    if CFG[C_ALLOC] == 3:
        _caching_free(SC, CN, CG, CL, b)
        return True
    return _arena_free(SC, CFG, AF, b, size)


@njit(cache=True, no_cpython_wrapper=True)
def _evict_storage(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0, STT, TD, AF,
                   CN, CG, CL, s):
    """AllocRuntime._evict: s's block (if any) freed, then Runtime._evict. 0, or a bail-out
    reason."""
    b = ST[BLK, s]
    if b != -1:
        ST[BLK, s] = -1
        if not _block_free(SC, CFG, AF, CN, CG, CL, b, ST[BSZ, s]):
            return BAIL_STATE
    if not _evict(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0, STT, TD, s):
        return BAIL_INVARIANT
    return 0


@njit(cache=True, no_cpython_wrapper=True)
def _place(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0, STT, TD, AF, CN, CG,
           CL, GOT, RESI, op, rlo, rhi):
    """AllocRuntime._place: a block per output (not an alias, > 0 bytes), in order; when one
    finds none, the blocks got so far are freed and the heuristic evicts one storage (an
    eviction for want of a block) before the whole placement is tried again; with the pool
    empty the run fails with ``fragmentation``. The blocks are GOT[i - rlo] (-1: none).
    Returns 0, FRAG or BAIL."""
    while True:
        failed = -1
        last = rhi
        for i in range(rlo, rhi):
            size = RESI[2, i]
            if size <= 0 or RESI[1, i] != -1:
                GOT[i - rlo] = -1
                continue
            b = _block_alloc(SC, CFG, AF, CN, CG, CL, size)
            if b == -2:
                SC[S_BAIL] = BAIL_STATE
                return BAIL
            if b == -1:
                failed = size
                last = i
                break
            GOT[i - rlo] = b
        if failed == -1:
            return 0
        for i in range(rlo, last):
            b = GOT[i - rlo]
            if b >= 0 and not _block_free(SC, CFG, AF, CN, CG, CL, b, RESI[2, i]):
                SC[S_BAIL] = BAIL_STATE
                return BAIL
        if SC[S_PN] == 0:
            SC[S_FKIND] = FRAG
            SC[S_FOP] = op
            SC[S_FREQ] = failed
            SC[S_FMEM] = SC[S_MEM]
            SC[S_FCLOCK] = SC[S_CLOCK]
            SC[S_FPOS] = SC[S_POS]
            return FRAG
        SC[S_FRAGEV] += 1
        s = _choose(ST, SC, CFG)
        if s < 0:
            SC[S_BAIL] = BAIL_RANGE
            return BAIL
        why = _evict_storage(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0, STT,
                             TD, AF, CN, CG, CL, s)
        if why != 0:
            SC[S_BAIL] = why
            return BAIL


# ---------------------------------------------------------------- the engine
@njit(cache=True)
def _engine(SCH, OPI, ARGS, RESI, TI, STT0, STT, CFG, TD, ST, SC, SF, EDG, FR, UND, ROWS, RLO, RHI, WTAB, LR, LS, LC,
            LZ, STK, STKE, POST, OWN, RST, OPSEEN, LBS, AF, CN, CG, CL, GOT, work_limit):
    """Run commands until the schedule ends, the run fails or bails out, or ``work_limit``
    computes were done (YIELD: call again to go on; the whole state is in the arrays, the
    materialization recursion included, as a stack of frames)."""
    nsched = CFG[C_NSCHED]
    budget = SC[S_BUDGET]
    limit = SF[F_LIMIT]
    work = 0
    while True:
        # ---------------------------------------------------- materialize (Runtime._materialize)
        while SC[S_SP] > 0:
            if work >= work_limit:
                return YIELD
            f = SC[S_SP] - 1
            t = FR[f, FR_T]
            op = TI[T_OP, t]
            alo = OPI[O_ALO, op]
            ahi = OPI[O_AHI, op]
            ph = FR[f, FR_PHASE]
            if ph == 0:
                # stamp the parents, lock the defined ones, list the undefined ones (both as
                # on entry: locking defines nothing)
                clock = SC[S_CLOCK]
                for i in range(alo, ahi):
                    ST[LAST, TI[T_ST, ARGS[i]]] = clock
                ulo = SC[S_UNDTOP]
                un = 0
                for i in range(alo, ahi):
                    p = ARGS[i]
                    if TD[D_DEF, p]:
                        if not _lock(ST, SC, TI[T_ST, p]):
                            SC[S_BAIL] = BAIL_STATE
                            return BAIL
                    else:
                        UND[ulo + un] = p
                        un += 1
                SC[S_UNDTOP] = ulo + un
                FR[f, FR_ULO] = ulo
                FR[f, FR_UN] = un
                FR[f, FR_I] = 0
                FR[f, FR_WAIT] = 0
                if un > 0:
                    SC[S_DEPTH] += 1
                    FR[f, FR_PHASE] = 1
                else:
                    FR[f, FR_PHASE] = 2
                continue
            if ph == 1:
                # the undefined parents in argument order: materialize (a child frame) if
                # still undefined, then lock
                i = FR[f, FR_I]
                un = FR[f, FR_UN]
                ulo = FR[f, FR_ULO]
                pushed = False
                while i < un:
                    p = UND[ulo + i]
                    if FR[f, FR_WAIT] == 0 and TD[D_DEF, p] == 0:
                        FR[f, FR_WAIT] = 1
                        FR[f, FR_I] = i
                        g = f + 1
                        FR[g, FR_T] = p
                        FR[g, FR_REMAT] = 1
                        FR[g, FR_PHASE] = 0
                        SC[S_SP] = g + 1
                        pushed = True
                        break
                    FR[f, FR_WAIT] = 0
                    if not _lock(ST, SC, TI[T_ST, p]):
                        SC[S_BAIL] = BAIL_STATE
                        return BAIL
                    i += 1
                if pushed:
                    continue
                FR[f, FR_I] = i
                SC[S_DEPTH] -= 1
                FR[f, FR_PHASE] = 2
                continue
            # phase 2: free (Runtime._free), compute, unlock, thrash test, early stop
            need = OPI[O_TOTAL, op]
            v = SC[S_MEM] + need
            if v > budget:
                over = v
                while True:
                    v = SC[S_MEM] + need
                    if v <= budget:
                        break
                    over = v
                    if SC[S_PN] == 0:
                        if over < SC[S_EQHI]:
                            SC[S_EQHI] = over
                        SC[S_FKIND] = OOM
                        SC[S_FOP] = op
                        SC[S_FREQ] = need
                        SC[S_FMEM] = SC[S_MEM]
                        SC[S_FSHORT] = SC[S_MEM] + need - budget
                        SC[S_FCLOCK] = SC[S_CLOCK]
                        SC[S_FDEPTH] = SC[S_DEPTH]
                        SC[S_FPOS] = SC[S_POS]
                        return OOM
                    s = _choose(ST, SC, CFG)
                    if s < 0:
                        SC[S_BAIL] = BAIL_RANGE
                        return BAIL
                    why = _evict_storage(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN,
                                         STT0, STT, TD, AF, CN, CG, CL, s)
                    if why != 0:
                        SC[S_BAIL] = why
                        return BAIL
                if over < SC[S_EQHI]:
                    SC[S_EQHI] = over
                if v > SC[S_EQLO]:
                    SC[S_EQLO] = v
            elif v > SC[S_EQLO]:
                SC[S_EQLO] = v
            rlo = OPI[O_RLO, op]
            rhi = OPI[O_RHI, op]
            if CFG[C_ALLOC] != 0:
                # AllocRuntime._compute: the outputs' blocks (may evict for want of one); an
                # output whose sibling is resident after that is a duplicate: its block is
                # freed at once, the others' storages own theirs
                st = _place(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0, STT, TD,
                            AF, CN, CG, CL, GOT, RESI, op, rlo, rhi)
                if st != 0:
                    return st
                for i in range(rlo, rhi):
                    b = GOT[i - rlo]
                    if b < 0:
                        continue
                    u = RESI[0, i]
                    if u != t and TD[D_DEF, u]:
                        if not _block_free(SC, CFG, AF, CN, CG, CL, b, RESI[2, i]):
                            SC[S_BAIL] = BAIL_STATE
                            return BAIL
                    else:
                        d = TI[T_ST, u]
                        if ST[BLK, d] != -1:  # a resident storage would get a second block
                            SC[S_BAIL] = BAIL_STATE
                            return BAIL
                        ST[BLK, d] = b
                        ST[BSZ, d] = RESI[2, i]
            # Runtime._compute: the newly material storages (siblings first, then t's), as
            # of before the compute
            remat = FR[f, FR_REMAT]
            nrst = 0
            if rhi - rlo > 1:
                for i in range(rlo, rhi):
                    u = RESI[0, i]
                    if u != t and ST[MAT, TI[T_ST, u]] == 0:
                        RST[nrst] = TI[T_ST, u]
                        nrst += 1
            st0 = TI[T_ST, t]
            if ST[MAT, st0] == 0:
                RST[nrst] = st0
                nrst += 1
            cost = OPI[O_COST, op]
            SC[S_CLOCK] += cost
            SC[S_MEM] += OPI[O_TOTAL, op]
            if SC[S_MEM] > SC[S_PEAK]:
                SC[S_PEAK] = SC[S_MEM]
            work += 1
            if remat:
                SC[S_REMAT] += cost
                SC[S_RCOUNT] += 1
            else:
                SC[S_MODEL] += cost
            if SC[S_CLOCK] > SAFE or SC[S_REMAT] > SAFE or SC[S_MODEL] > SAFE:
                SC[S_BAIL] = BAIL_RANGE
                return BAIL
            # the already defined siblings are duplicates (subtracted again), the others
            # become defined
            for i in range(rlo, rhi):
                u = RESI[0, i]
                if u != t and TD[D_DEF, u]:
                    SC[S_MEM] -= RESI[2, i]
            ST[MAT, st0] = 1
            TD[D_DEF, t] = 1
            for i in range(rlo, rhi):
                u = RESI[0, i]
                if u != t and TD[D_DEF, u] == 0:
                    ST[MAT, TI[T_ST, u]] = 1
                    TD[D_DEF, u] = 1
            if nrst > 0:
                for i in range(nrst):
                    _pool_add(ST, SC, RST[i])
                _regions_materialized(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, RST,
                                      nrst)
            # unlock the parents in argument order (back into the pool at the end)
            for i in range(alo, ahi):
                s = TI[T_ST, ARGS[i]]
                ST[RINT, s] -= 1
                if ST[RINT, s] == 0:
                    _pool_add(ST, SC, s)
            SC[S_UNDTOP] = FR[f, FR_ULO]
            rc = SC[S_REMAT]
            if rc > limit:
                SC[S_FKIND] = THRASH
                SC[S_FOP] = op
                SC[S_FCLOCK] = SC[S_CLOCK]
                SC[S_FREMAT] = rc
                return THRASH
            if rc >= SF[F_ESNEXT]:
                # Runtime._early_check
                SF[F_ESNEXT] = rc + SF[F_ESSTEP]
                if not (rc > limit or rc + SC[S_MODEL] <= limit):
                    SC[S_ECHECKS] += 1
                    lb = _lower_bound(SCH, OPI, ARGS, TI, TD, SC, CFG, OPSEEN, LBS)
                    if rc + lb > limit:
                        SC[S_FKIND] = EARLY
                        SC[S_FPOS] = SC[S_POS]
                        SC[S_FCLOCK] = SC[S_CLOCK]
                        SC[S_FREMAT] = rc
                        SC[S_FLB] = lb
                        return EARLY
            SC[S_SP] = f
        # ---------------------------------------------------- the rest of the command
        pend = SC[S_PEND]
        if pend != 0:
            x = SC[S_PENDX]
            if pend == 1:  # compute: last access = clock on every output storage
                clock = SC[S_CLOCK]
                for i in range(OPI[O_RLO, x], OPI[O_RHI, x]):
                    ST[LAST, TI[T_ST, RESI[0, i]]] = clock
            else:  # pin (Runtime.pin)
                s = TI[T_ST, x]
                if ST[MAT, s] == 0:
                    SC[S_BAIL] = BAIL_STATE
                    return BAIL
                if not ST[PINNED, s]:
                    if not _lock(ST, SC, s):
                        SC[S_BAIL] = BAIL_STATE
                        return BAIL
                    ST[PINNED, s] = 1
                    for D in range(2):  # regions._changed
                        if ST[CACHF + D, s]:
                            ST[CACHF + D, s] = 0
                            SC[S_NCF + D] -= 1
                    for D in range(2):
                        _drop(ST, SC, EDG, STK, D, s, D - D + 1)
            SC[S_PEND] = 0
            SC[S_K] += 1
        # ---------------------------------------------------- the next command
        k = SC[S_K]
        if k >= nsched:
            return DONE
        if work >= work_limit:
            return YIELD
        SC[S_POS] = k
        kind = SCH[k, 0]
        x = SCH[k, 1]
        if kind == COMPUTE:
            # Runtime.compute: the outputs' storages, refs and compute; the storage edges;
            # then materialize output 0 (the stamps follow when it is done)
            rlo = OPI[O_RLO, x]
            rhi = OPI[O_RHI, x]
            for i in range(rlo, rhi):
                t = RESI[0, i]
                s = TI[T_ST, t]
                TD[D_EX, t] = 1
                if RESI[1, i] == -1:
                    ST[SIZE, s] = RESI[2, i]
                    c = OPI[O_COST, x]
                else:
                    c = ST[COMP, s] + TI[T_CADD, t]
                ST[REXT, s] += 1
                # the storage's compute (its distinct operators; a view can add its own),
                # and the weight table: WTAB[256 * byte + v] sums the compute of the storages
                # whose bits are set in value v at that byte of a row
                delta = c - ST[COMP, s]
                if delta != 0:
                    base = (s >> 3) * 256
                    b = 1 << (s & 7)
                    for v in range(256):
                        if v & b:
                            WTAB[base + v] += delta
                    ST[COMP, s] = c
            for i in range(OPI[O_ALO, x], OPI[O_AHI, x]):
                ps = TI[T_ST, ARGS[i]]
                if ST[PINNED, ps]:
                    continue
                for D in range(2):  # regions._regions_new_edges
                    if D == 0:
                        _drop(ST, SC, EDG, STK, D, ps, D - D)
                    else:
                        for j in range(rlo, rhi):
                            _drop(ST, SC, EDG, STK, D, TI[T_ST, RESI[0, j]], D - D)
                for j in range(rlo, rhi):
                    r = TI[T_ST, RESI[0, j]]
                    for D in range(2):  # adj_c[ps] gains r, adj_p[r] gains ps (sets: no repeats)
                        a = ps if D == 0 else r
                        b = r if D == 0 else ps
                        e = ST[HEADC + D, a]
                        while e != -1 and EDG[e, 0] != b:
                            e = EDG[e, 1]
                        if e == -1:
                            k = SC[S_NEDGE]
                            EDG[k, 0] = b
                            EDG[k, 1] = ST[HEADC + D, a]
                            ST[HEADC + D, a] = k
                            SC[S_NEDGE] = k + 1
            SC[S_PEND] = 1
            SC[S_PENDX] = x
            FR[0, FR_T] = RESI[0, rlo]
            FR[0, FR_REMAT] = 0
            FR[0, FR_PHASE] = 0
            SC[S_SP] = 1
        elif kind == RELEASE:
            if TD[D_EX, x] == 0:
                SC[S_BAIL] = BAIL_STATE
                return BAIL
            s = TI[T_ST, x]
            ST[REXT, s] -= 1
            if ST[REXT, s] == 0 and ST[MAT, s] and not ST[PINNED, s]:
                SC[S_EAGER] += 1
                why = _evict_storage(ST, SC, CFG, ROWS, RLO, RHI, WTAB, EDG, LR, LS, LC, LZ, STK, STKE, POST, OWN, STT0,
                                     STT, TD, AF, CN, CG, CL, s)
                if why != 0:
                    SC[S_BAIL] = why
                    return BAIL
            SC[S_K] = k + 1
        elif kind == GET:
            if TD[D_EX, x] == 0:
                SC[S_BAIL] = BAIL_STATE
                return BAIL
            ST[REXT, TI[T_ST, x]] += 1
            SC[S_K] = k + 1
        else:  # PIN: materialize if undefined, then pin
            if TD[D_EX, x] == 0:
                SC[S_BAIL] = BAIL_STATE
                return BAIL
            SC[S_PEND] = 2
            SC[S_PENDX] = x
            if TD[D_DEF, x] == 0:
                FR[0, FR_T] = x
                FR[0, FR_REMAT] = 1
                FR[0, FR_PHASE] = 0
                SC[S_SP] = 1


# ---------------------------------------------------------------- Python side
def supported(heuristic: str, *, eager: bool = True, record: bool = False, pin_extra=(), workspace=None,
              allocator: str = "bytes", evict_first=()) -> bool:
    """Whether the engine replays this configuration (the trace is checked by
    :func:`trace_tables`): ``allocator`` 'bytes' (:class:`.runtime.Runtime`) or 'first-fit',
    'best-fit', 'caching' (:class:`.allocator.AllocRuntime`, without ``evict_first``)."""
    return (AVAILABLE and heuristic in SUPPORTED_HEURISTICS and eager and not record and not pin_extra
            and workspace is None and allocator in ALLOC_MODES and not evict_first)


def trace_tables(trace):
    """The engine's static tables of ``trace`` (cached in ``trace.meta['_jit']``), or None
    when the trace is outside what the engine replays exactly: a cyclic storage graph, an
    operator issued twice, non-integer costs or sizes, compute sums past 2**53 / 3."""
    tab = trace.meta.get("_jit", False)
    if tab is not False:
        return tab
    tab = trace.meta["_jit"] = _build_tables(trace)
    return tab


def _build_tables(trace):
    from .regions import storage_dag

    ops = trace.ops
    n = trace.n_tensors
    if not all(type(op.cost) is int and op.cost >= 0 for op in ops):
        return None
    if not all(type(z) is int and z >= 0 for op in ops for z in op.sizes):
        return None
    if sum(op.cost for op in ops) * 3 > EXACT or sum(sum(op.sizes) for op in ops) > EXACT:
        return None
    issued = [False] * len(ops)
    for kind, x in trace.schedule:
        if kind == COMPUTE:
            if issued[x] or not ops[x].results:
                return None
            issued[x] = True
    if not storage_dag(trace):
        return None
    roots = sorted(t for op in ops for i, t in enumerate(op.results) if op.aliases[i] == -1)
    s2d = [-1] * n
    for k, s in enumerate(roots):
        s2d[s] = k
    m = len(roots)
    # static storage of each tensor (an alias output shares its argument's storage) and the
    # compute a tensor adds to its storage when issued (its operator, if new there)
    t_st = [-1] * n
    t_cadd = [0] * n
    st_ops: dict = {}
    st_tens: list[list[int]] = [[] for _ in range(m)]
    last = [-1] * n
    for k, (kind, x) in enumerate(trace.schedule):
        if kind == COMPUTE:
            op = ops[x]
            for a in op.args:
                last[a] = k
            for i, t in enumerate(op.results):
                a = op.aliases[i]
                d = s2d[t] if a == -1 else t_st[op.args[a]]
                if d < 0:
                    return None
                t_st[t] = d
                st_tens[d].append(t)
                seen = st_ops.setdefault(d, set())
                if a != -1 and x not in seen:
                    t_cadd[t] = op.cost
                seen.add(x)
        elif kind == PIN:
            last[x] = k
    for kind, x in trace.schedule:
        if kind != COMPUTE and t_st[x] < 0:
            return None  # a command on a tensor that is never created
    t_op = trace.tensor_op
    t_idx = trace.tensor_index
    TI = np.array([t_op, t_st, t_cadd, last, t_idx], dtype=np.int64)
    SCH = np.array(trace.schedule, dtype=np.int64).reshape(-1, 2)
    OPI = np.zeros((6, len(ops)), dtype=np.int64)
    args, resi = [], [[], [], []]
    for j, op in enumerate(ops):
        OPI[O_COST, j] = op.cost
        OPI[O_TOTAL, j] = sum(op.sizes)
        OPI[O_ALO, j] = len(args)
        args.extend(op.args)
        OPI[O_AHI, j] = len(args)
        OPI[O_RLO, j] = len(resi[0])
        resi[0].extend(op.results)
        resi[1].extend(op.aliases)
        resi[2].extend(op.sizes)
        OPI[O_RHI, j] = len(resi[0])
    ARGS = np.array(args + [0], dtype=np.int64)
    RESI = np.array(resi, dtype=np.int64).reshape(3, -1)
    STT0 = np.zeros(m + 1, dtype=np.int64)
    for d in range(m):
        STT0[d + 1] = STT0[d] + len(st_tens[d])
    STT = np.array([t for ts in st_tens for t in ts] + [0], dtype=np.int64)
    n_edges = sum(len(op.args) * len(op.results) for op in ops)
    W = max(1, (m + 63) // 64)
    return {"SCH": SCH, "OPI": OPI, "ARGS": ARGS, "RESI": RESI, "TI": TI, "STT0": STT0, "STT": STT, "n": n, "m": m,
            "W": W, "n_edges": n_edges, "max_res": max((len(op.results) for op in ops), default=1),
            "n_args": len(args), "d2s": np.array(roots, dtype=np.int64)}


class JitRun:
    """The figures of a compiled replay, with the attribute names of :class:`.runtime.Runtime`
    that results are read from (``clock``, ``peak``, ``evictions``, ``eager_evictions``,
    ``remat_compute``, ``model_compute``, ``remat_count``, ``failure``, ``eq_lo``, ``eq_hi``,
    ``pos``, ``early_checks``, ``trace``, ``budget``, ``h``) and, under an allocator, of
    :class:`.allocator.AllocRuntime` (``allocator``, ``frag_evictions``, ``windows``). Not a
    runtime: no events, no forks, no allocator object; replay with the Python engine for
    those."""

    engine = "jit"

    def __init__(self, trace, budget, h, remat_limit, allocator="bytes"):
        self.trace, self.budget, self.h, self.remat_limit = trace, budget, h, remat_limit
        self.allocator = allocator
        self.address_aware = allocator != "bytes"
        self.failure = None
        self.flushes = 0
        self.frag_evictions = 0  # AllocRuntime's figures (0 under byte counting)
        self.windows = 0

    def summary(self) -> dict:
        return {"clock": self.clock, "peak": self.peak, "evictions": self.evictions,
                "eager_evictions": self.eager_evictions, "remat_compute": self.remat_compute,
                "model_compute": self.model_compute, "recomputations": self.remat_count}


# buffer capacities of the closure logs (per direction); a full buffer drops that
# direction's closures and resets its log (exact), so these bound memory, not results
CAPS = {"records": 1 << 15, "snapshot_words": 1 << 18, "checks": 1 << 15, "check_storages": 1 << 17}
MAX_ROW_BYTES = 1 << 30  # regions and closures as bitsets: 8 rows x m storages x W words


def run(trace, budget: int, heuristic: str, *, remat_limit=math.inf, early_stop: bool = False,
        deadline: float | None = None, caps: dict | None = None, chunk: int = 1024, allocator: str = "bytes"):
    """Replay ``trace`` under ``budget`` with the compiled engine.

    ``allocator``: 'bytes' makes :class:`.runtime.Runtime`'s replay; 'first-fit', 'best-fit'
    or 'caching' makes :class:`.allocator.AllocRuntime`'s (the same heuristic, a block per
    output, evictions for want of a block, outcome 'fragmentation', every budget comparison
    of the allocator recorded in the interval).

    Returns
    -------
    (outcome, JitRun) or None
        outcome 'ok', 'oom', 'remat_exceeded', 'thrash_or_oom', 'fragmentation', or
        'unresolved' past ``deadline`` (a ``time.perf_counter()`` value); None when the
        configuration or the trace is not supported, or the run met a value outside the
        exactly handled range (replay it with the Python runtime; nothing was changed).
    """
    if not supported(heuristic, allocator=allocator):
        return None
    tab = trace_tables(trace)
    if tab is None:
        return None
    if not (isinstance(budget, int) and -EXACT <= budget <= EXACT):
        return None
    lim = float(remat_limit)
    if not (math.isinf(lim) or (abs(lim) < EXACT and (isinstance(remat_limit, float) or lim == remat_limit))):
        return None
    n, m, W = tab["n"], tab["m"], tab["W"]
    if 8 * m * W * 8 > MAX_ROW_BYTES:
        return None
    den, fwd = SUPPORTED_HEURISTICS[heuristic]
    cp = dict(CAPS, **(caps or {}))
    mode = ALLOC_MODES[allocator]
    # allocator capacities: an arena has at most one free block more than used blocks (frees
    # coalesce), and at most m + max_res blocks are used (a block per resident storage and
    # per output being placed); a caching segment has at most 2 u + 1 blocks for u used ones,
    # and at most budget / 2 MiB segments are reserved (reserved <= budget)
    used = m + tab["max_res"] + 2
    cap_a = used + 2 if mode in (1, 2) else 1
    cap_g = max(0, budget) // (2 * MIB) + 2 if mode == 3 else 1
    if cap_g > 1 << 24:
        return None
    cap_n = 2 * used + cap_g + 2 if mode == 3 else 1
    CFG = np.array([den, fwd, int(early_stop), n, m, W, len(trace.schedule), cp["records"], cp["snapshot_words"],
                    cp["checks"], cp["check_storages"], mode, cap_a, cap_n, cap_g], dtype=np.int64)
    TD = np.zeros((2, n), dtype=np.int64)
    ST = np.zeros((NSTF, m), dtype=np.int64)
    for f in (PPREV, PNEXT, HEADC, HEADP, BLK):
        ST[f].fill(-1)
    ST[LAST].fill(NEVER)
    SC = np.zeros(NSC, dtype=np.int64)
    SC[S_CLOCK] = 1
    SC[S_EQHI] = I64MAX
    SC[S_PHEAD] = SC[S_PTAIL] = -1
    SC[S_BUDGET] = budget
    AF = np.zeros((2, cap_a), dtype=np.int64)  # the arena's free blocks
    if mode in (1, 2) and budget > 0:
        AF[1, 0] = budget
        SC[S_NF] = 1
    CN = np.zeros((7, cap_n), dtype=np.int64)  # caching: blocks
    CG = np.zeros((6, cap_g), dtype=np.int64)  # caching: segments
    CL = np.zeros((4, max(cap_n, cap_g)), dtype=np.int64)  # caching: free blocks, live segments, stacks
    GOT = np.zeros(tab["max_res"] + 1, dtype=np.int64)
    SF = np.zeros(3, dtype=np.float64)
    SF[F_LIMIT] = lim
    SF[F_ESNEXT] = math.inf
    if early_stop and lim < math.inf:
        # Runtime._init_early (every operator is issued once here)
        from . import runtime as _rt

        SF[F_ESSTEP] = max(remat_limit / _rt.EARLY_CHECKS, 1e-12)
        SF[F_ESNEXT] = 0.0
    EDG = np.empty((2 * tab["n_edges"] + 1, 2), dtype=np.int64)
    FR = np.zeros((n + 1, 7), dtype=np.int64)
    UND = np.zeros(tab["n_args"] + 1, dtype=np.int64)
    ROWS = np.zeros((8 * m + 2, W), dtype=np.uint64)
    RLO = np.zeros(8 * m + 2, dtype=np.int64)
    RHI = np.zeros(8 * m + 2, dtype=np.int64)
    WTAB = np.zeros(W * 2048, dtype=np.int64)
    LR = np.zeros((2, cp["records"], NLF), dtype=np.int64)
    LS = np.zeros((2, cp["snapshot_words"]), dtype=np.uint64)
    LC = np.zeros((2, cp["checks"], 3), dtype=np.int64)
    LZ = np.zeros((2, cp["check_storages"]), dtype=np.int64)
    STK = np.zeros(m + 1, dtype=np.int64)
    STKE = np.zeros(m + 1, dtype=np.int64)
    POST = np.zeros(m + 1, dtype=np.int64)
    OWN = np.zeros(m + 1, dtype=np.int64)
    RST = np.zeros(tab["max_res"] + 1, dtype=np.int64)
    OPSEEN = np.zeros(len(trace.ops) + 1, dtype=np.int64)
    LBS = np.zeros(n + tab["n_args"] + 1, dtype=np.int64)
    if deadline is not None and time.perf_counter() > deadline:
        return "unresolved", _unresolved(trace, budget, heuristic, remat_limit, allocator)
    work = chunk if deadline is not None else (1 << 62)
    args = (tab["SCH"], tab["OPI"], tab["ARGS"], tab["RESI"], tab["TI"], tab["STT0"], tab["STT"], CFG, TD, ST, SC,
            SF, EDG, FR, UND, ROWS, RLO, RHI, WTAB, LR, LS, LC, LZ, STK, STKE, POST, OWN, RST, OPSEEN,
            LBS, AF, CN, CG, CL, GOT)
    while True:
        status = _engine(*args, work)
        if status != YIELD:
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = -1
            break
    if status == BAIL:
        return None
    r = JitRun(trace, budget, heuristic, remat_limit, allocator)
    _fill(r, SC, status, remat_limit, tab)
    r.flushes = int(SC[S_FLUSHES])
    r.frag_evictions = int(SC[S_FRAGEV])
    if status == FRAG:
        r.failure = _fragmentation(trace, tab, allocator, SC, ST, AF, CN, CG, CL)
    return ("unresolved" if status == -1 else OUTCOMES[status]), r


def _fragmentation(trace, tab, allocator, SC, ST, AF, CN, CG, CL) -> dict:
    """AllocRuntime._record_fragmentation's failure from the engine's arrays: the missing
    block, the free total and largest free block, the layout with the owning storages (every
    used block is a resident storage's here: the blocks placed for the operator were freed)."""
    g = lambda i: int(SC[i])  # noqa: E731
    budget = g(S_BUDGET)
    d2s = tab["d2s"]
    owned = [d for d in range(tab["m"]) if ST[BLK, d] != -1]
    if allocator == "caching":
        owner = {int(ST[BLK, d]): int(d2s[d]) for d in owned}
        lay, free = [], []
        for i in range(g(S_NLIVE)):
            seg = int(CL[Q_LIVE, i])
            n = int(CG[G_HEAD, seg])
            while n != -1:
                e = [int(CG[G_SID, seg]), int(CN[N_OFF, n]), int(CN[N_SIZE, n])]
                if CN[N_FREE, n]:
                    free.append(e[2])
                    lay.append(e + ["free", None])
                else:
                    lay.append(e + ["used", owner.get(n)])
                n = int(CN[N_NEXT, n])
        lay.sort(key=lambda e: tuple(e[:4]))
        rest = budget - g(S_RESV)
        free_total, largest = rest + sum(free), max(max(free, default=0), rest)
    else:
        nf = g(S_NF)
        free = [[int(AF[0, k]), int(AF[1, k]), "free", None] for k in range(nf)]
        lay = sorted(free + [[int(ST[BLK, d]), int(ST[BSZ, d]), "used", int(d2s[d])] for d in owned],
                     key=lambda e: tuple(e[:3]))
        free_total, largest = sum(e[1] for e in free), max((e[1] for e in free), default=0)
    op = g(S_FOP)
    return {"kind": "fragmentation", "op": op, "allocator": allocator, "requested": g(S_FREQ),
            "request_sizes": list(trace.ops[op].sizes), "memory": g(S_FMEM), "budget": budget,
            "free_total": free_total, "largest_free": largest, "clock": g(S_FCLOCK), "pos": g(S_FPOS),
            "layout": lay, "evictable_bytes": 0}


def _unresolved(trace, budget, h, remat_limit, allocator="bytes"):
    """A run stopped at its deadline before its first command."""
    r = JitRun(trace, budget, h, remat_limit, allocator)
    r.clock, r.peak, r.evictions, r.eager_evictions = 1, 0, 0, 0
    r.remat_compute = r.model_compute = r.remat_count = r.memory = r.pos = r.depth = r.early_checks = 0
    r.eq_lo, r.eq_hi = 0, math.inf
    return r


def _fill(r, SC, status, remat_limit, tab) -> None:
    g = lambda i: int(SC[i])  # noqa: E731
    r.clock, r.peak, r.evictions, r.eager_evictions = g(S_CLOCK), g(S_PEAK), g(S_EVICT), g(S_EAGER)
    r.remat_compute, r.model_compute, r.remat_count = g(S_REMAT), g(S_MODEL), g(S_RCOUNT)
    r.memory, r.pos, r.depth, r.early_checks = g(S_MEM), g(S_POS), g(S_DEPTH), g(S_ECHECKS)
    r.eq_lo = g(S_EQLO)
    r.eq_hi = math.inf if SC[S_EQHI] == I64MAX else g(S_EQHI)
    if status == OOM:
        r.failure = {"kind": "oom", "op": g(S_FOP), "requested": g(S_FREQ), "memory": g(S_FMEM),
                     "short": g(S_FSHORT), "clock": g(S_FCLOCK), "depth": g(S_FDEPTH), "pos": g(S_FPOS)}
    elif status == THRASH:
        r.failure = {"kind": "remat_exceeded", "op": g(S_FOP), "clock": g(S_FCLOCK), "remat_compute": g(S_FREMAT),
                     "remat_limit": remat_limit}
    elif status == EARLY:
        pos = g(S_FPOS)
        kind, x = tab["SCH"][pos]
        r.failure = {"kind": "thrash_or_oom", "pos": pos, "clock": g(S_FCLOCK), "remat_compute": g(S_FREMAT),
                     "lower_bound": g(S_FLB), "remat_limit": remat_limit, "early_stop": True,
                     **({"op": int(x)} if kind == COMPUTE else {})}


def warm() -> float:
    """Load (or compile) the engine now; seconds taken (a process pays this once)."""
    t = time.perf_counter()
    if AVAILABLE:
        from memsched.instances.dtr_trace import parse_trace_lines

        lines = ['{"INSTRUCTION": "ANNOTATE", "ANNOTATION": "START"}', '{"INSTRUCTION": "CONSTANT", "NAME": "w"}',
                 '{"INSTRUCTION": "MEMORY", "NAME": "w", "MEMORY": "4"}',
                 '{"INSTRUCTION": "CALL", "NAME": "f", "ARGS": ["w"], "RESULT": ["a"], "TIME": "3"}',
                 '{"INSTRUCTION": "MEMORY", "NAME": "a", "MEMORY": "8"}',
                 '{"INSTRUCTION": "ALIAS", "NAME": "a", "ALIAS": "-1"}']
        tr = parse_trace_lines(lines, "<warm>")
        run(tr, 100, "dtr", remat_limit=10.0, early_stop=True, deadline=time.perf_counter() + 60)
        div_rn(3, (1 << 60) + 1)
    return time.perf_counter() - t
