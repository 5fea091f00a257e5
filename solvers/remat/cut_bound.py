"""The moment-cut covering bound: a lower bound on rematerialization compute (and an
infeasibility proof) from the memory at each operator's first computation.

Problem: least compute of a schedule with peak <= B (docs/remat.md). Proof in docs/remat.md,
"Moment-cut covering bound"; in short:

Fix an operator x and the moment of its *first* computation. A tensor t produced by an
operator p that surely ran before that moment (free order: a strict ancestor of x; given
order: an operator before x in the given order) and read later (by a consumer that surely
runs after that moment: a strict descendant of x, or an operator after x in the given order)
or required at the end, is either resident at that moment or produced again afterwards, so p
runs at least twice. With y_p = 1 iff p runs at least twice (y_p = 0 when p may not run
again: cap 0), every schedule of the class within B satisfies, for every x,

    need_x + hard_x + sum_{t in T_x} size(t) * (1 - y_{producer(t)}) <= B

(need_x: x's inputs, outputs and workspace, the always-resident inputs; hard_x: the tensors
that must be resident at that moment and cannot come back: graph inputs read later, outputs
of operators that may not run again), and its compute is >= baseline + sum_p cost_p * y_p.
The least value of that 0/1 covering program (or any proven bound below it: CP-SAT's
objective bound, the program with only some of its rows) is a lower bound on extra compute;
a moment whose hard part alone exceeds B proves that no schedule of the class fits B.

Classes: ``order="free"`` holds for every schedule (any order, any recomputation, so every
cap and the given-order class too); ``order="given"`` (prefix and suffix of the given order
instead of ancestors and descendants) holds for schedules whose first computations follow
the given order only. Both hold for any caps; ``caps`` only fixes y_p = 0 where cap_p = 0.

Complexity: the reach sets as bitsets, O(n x edges / 64) words (free order) and a packed
tensor x moment matrix of O(tensors x n / 8) bytes; each check of a candidate y is
O(tensors x n) in numpy; the covering program keeps only the moments it needs (rows added
lazily, most violated first). Bounded by ``time_limit`` from its first step.
"""
from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from memsched.formulations import Graph

__all__ = ["CutCoverBound", "cut_cover_bound", "cached_cut_cover_bound", "moment_rows"]

#: moments added to the covering program per round (most violated first)
ROWS_PER_ROUND = 64
#: moments whose single-row LP bound is computed before the program (most demanding first)
SINGLE_ROW_MOMENTS = 2000
#: nonzeros added to the covering program per round at most (a 10^4-operator training chain
#: has rows of ~5,000 nonzeros: CP-SAT proved nothing in 9 s with 61 such rows at once)
NNZ_PER_ROUND = 50_000
#: packed-matrix columns unpacked at once when summing rows (memory ~ tensors x CHUNK bytes)
CHUNK = 2048


@dataclass
class CutCoverBound:
    """``extra``: proven least extra compute of every schedule of the class within B;
    ``infeasible``: no schedule of the class fits B (``reason`` says which moment);
    ``complete``: the covering program was solved to optimality over all its moments;
    ``stats``: sizes and times; ``checks``: (extra so far, what, seconds) per round;
    ``witness``: the operators run twice in the last covering program solved to optimality
    (a guess where to recompute, for the schedule searches; it proves nothing)."""
    baseline: float
    order: str = "free"
    extra: float = 0.0
    infeasible: bool = False
    reason: str | None = None
    complete: bool = False
    stats: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    witness: list | None = None
    # the operators that the one-moment Lagrangian bound's minimizer (at its best moment) runs
    # before that moment: a down-set, a guess of an order's first part for the schedule searches
    before: list | None = None

    @property
    def lower_bound(self) -> float:
        return self.baseline + self.extra


class _Deadline(Exception):
    pass


@dataclass
class MomentRows:
    """The covering program's data, in column space (free: operator index; given: position
    in the given order). ``room[x]`` = B - need_x - hard_x; ``soft_t`` the tensors that may be
    dropped and recomputed (their producer in ``soft_prod``), ``X`` their packed moment sets
    (row per soft tensor, bit x set iff the tensor counts at moment x)."""
    col_op: list[int]
    room: np.ndarray  # int64 per column
    soft_t: np.ndarray  # tensor indices
    soft_size: np.ndarray  # float64 sizes of soft_t
    soft_prod: np.ndarray  # producer (operator index) of each soft tensor
    X: np.ndarray  # uint8 packed, shape (len(soft_t), ceil(n / 8)), bit order little
    soft_sum: np.ndarray  # per column: bytes of soft tensors counted there
    need: np.ndarray | None = None  # per column: need_x alone (x's inputs, outputs, workspace, always-resident)
    B: int = 0


def _mask_to_bits(m: int, nbytes: int) -> np.ndarray:
    return np.frombuffer(m.to_bytes(nbytes, "little"), dtype=np.uint8)


def moment_rows(graph: Graph, B: int, caps=None, order: str = "free", *, costs_free=None,
                deadline: float | None = None) -> MomentRows:
    """The moments' data (see :class:`MomentRows`). ``caps``: per-operator extra runs (None or
    None entries: unbounded); an operator with cap 0 cannot run again, so its tensors are
    hard. ``costs_free``: operators whose cost is 0 (running them again is free: their
    tensors weigh nothing in the program and are left out). Raises _Deadline past
    ``deadline`` (time.perf_counter())."""
    g = graph
    n = g.n_ops
    if order == "given":
        col_op = g.given_order()
    else:
        col_op = list(range(n))
    col = [0] * n
    for k, v in enumerate(col_op):
        col[v] = k
    nbytes = (n + 7) // 8
    full = (1 << n) - 1

    def check_time():
        if deadline is not None and time.perf_counter() > deadline:
            raise _Deadline

    if order == "given":
        # before(x): columns < col(x); after(x): columns > col(x)
        def after_mask_of_op(v):  # the columns of moments x whose first run surely precedes v's
            return (1 << col[v]) - 1  # columns < col(v)

        def later_than_op(p):  # moments x surely after p's first run: columns > col(p)
            return full ^ ((1 << (col[p] + 1)) - 1)
    else:
        anc, desc = g.reach_masks()

        def after_mask_of_op(v):  # moments x that are strict ancestors of v
            return anc[v]

        def later_than_op(p):  # moments x that are strict descendants of p
            return desc[p]

    can_again = [caps is None or caps[v] is None or caps[v] > 0 for v in range(n)]
    free_again = costs_free or set()
    always = g.always_resident_idx()
    const = sum(g.size[j] for j in always)
    need = np.zeros(n, dtype=np.int64)  # per column
    for v in range(n):
        b = sum(g.size[j] for j in g.op_in[v] if j not in always) + sum(g.size[j] for j in g.op_out[v])
        need[col[v]] = const + b + g.workspace[v]
    hard = np.zeros(n, dtype=np.int64)
    hard_masks: list[tuple[int, int]] = []  # (mask, size)
    soft: list[tuple[int, int, int]] = []  # (tensor, mask, producer)
    outs = g.output_idx
    for j in range(g.n_tensors):
        if j in always or g.size[j] == 0:
            continue
        cons = g.consumers[j]
        p = g.producer[j]
        if not cons and j not in outs:
            continue
        cmask = 0
        for c in cons:
            cmask |= 1 << col[c]
        if j in outs:
            reach = full
        else:
            reach = 0
            for c in cons:
                reach |= after_mask_of_op(c)
        if p == -1:
            m = reach & ~cmask  # a graph input: resident until its last read, never recomputed
            if m:
                hard_masks.append((m, g.size[j]))
            continue
        m = later_than_op(p) & reach & ~cmask
        if not m:
            continue
        if not can_again[p]:
            hard_masks.append((m, g.size[j]))
        elif p in free_again:
            continue
        else:
            soft.append((j, m, p))
        if len(soft) % 512 == 0:
            check_time()
    for m, s in hard_masks:
        hard += s * np.unpackbits(_mask_to_bits(m, nbytes), bitorder="little")[:n].astype(np.int64)
    check_time()
    room = B - need - hard
    if soft:
        X = np.stack([_mask_to_bits(m, nbytes) for _j, m, _p in soft])
    else:
        X = np.zeros((0, nbytes), dtype=np.uint8)
    soft_t = np.array([j for j, _m, _p in soft], dtype=np.int64)
    soft_size = np.array([g.size[j] for j, _m, _p in soft], dtype=np.float64)
    soft_prod = np.array([p for _j, _m, p in soft], dtype=np.int64)
    rows = MomentRows(col_op=col_op, room=room, soft_t=soft_t, soft_size=soft_size, soft_prod=soft_prod, X=X,
                      soft_sum=np.zeros(n), need=need, B=int(B))
    rows.soft_sum = _row_sums(rows, soft_size, n, deadline)
    return rows


def _row_sums(rows: MomentRows, weights: np.ndarray, n: int, deadline=None) -> np.ndarray:
    """sum over soft tensors t of weights[t] * [t counts at moment x], per column x."""
    out = np.zeros(n)
    if len(weights) == 0 or n == 0:
        return out
    cb = CHUNK // 8
    for b0 in range(0, rows.X.shape[1], cb):
        if deadline is not None and time.perf_counter() > deadline:
            raise _Deadline
        blk = np.unpackbits(rows.X[:, b0:b0 + cb], axis=1, bitorder="little")
        lo = b0 * 8
        hi = min(n, lo + blk.shape[1])
        out[lo:hi] = weights @ blk[:, :hi - lo]
    return out


def _column(rows: MomentRows, x: int) -> np.ndarray:
    """0/1 per soft tensor: does it count at moment (column) x."""
    return (rows.X[:, x >> 3] >> (x & 7)) & 1


def _knapsack_lp(w: np.ndarray, c: np.ndarray, d: float) -> float:
    """min sum c_k y_k subject to sum w_k y_k >= d, 0 <= y <= 1 (w, c >= 0): the greedy by
    c / w (Dantzig). Items with w = 0 are useless; a zero-cost item is taken first."""
    if d <= 0:
        return 0.0
    k = np.flatnonzero(w > 0)
    if not len(k):
        return math.inf
    order = k[np.argsort(c[k] / w[k], kind="stable")]
    cw = np.cumsum(w[order])
    j = int(np.searchsorted(cw, d))  # first index where the cumulated weight reaches d
    if j >= len(order):
        return math.inf  # cannot be covered (not reached: room >= 0 means every row can be)
    full = float(c[order[:j]].sum())
    before = float(cw[j - 1]) if j > 0 else 0.0
    return full + c[order[j]] * (d - before) / w[order[j]]


def _int_costs(costs):
    """(scale, ints) with ints[v] <= cost[v] * scale exactly, so that an integer bound on
    sum ints * y, divided by scale, is a bound on sum cost * y. Integer costs: divided by
    their gcd (scale = 1 / gcd); else floor(cost * 10**6)."""
    if all(float(c).is_integer() for c in costs):
        ints = [int(c) for c in costs]
        gg = reduce(math.gcd, ints, 0) or 1
        return 1.0 / gg, [c // gg for c in ints]
    return float(10**6), [int(math.floor(c * 10**6)) for c in costs]


def cut_cover_bound(graph: Graph, B: int, caps=None, order: str = "free", *, time_limit: float = 10.0,
                    upto: float | None = None, workers: int = 1, seed: int = 0,
                    rows_per_round: int = ROWS_PER_ROUND, closure: bool = True, nogoods=(),
                    downset: bool = True) -> CutCoverBound:
    """The moment-cut covering bound (module docstring) for budget ``B`` (bytes).

    Parameters
    ----------
    caps : list or None
        Extra computations per operator (None or None entries: unbounded); only cap 0 matters.
    order : "free" (valid for every schedule) or "given" (valid for schedules whose first
        computations follow the given order).
    time_limit : float
        Seconds from the first step; the bound found so far stands when it runs out.
    upto : float, optional
        Stop once the proven extra reaches it (e.g. an incumbent's extra compute).
    downset : bool
        Also the one-moment minimum cuts (solvers/remat/lagrange_bound.py) with a quarter of
        the time left; then, free order: the down-set covering program
        (solvers/remat/downset_bound.py), given order: several moments at once
        (solvers/remat/joint_moments.py), each with half the time left, before the closure
        rows; the largest bound is kept.
    nogoods : iterable of sets of operators
        Sets W such that no schedule of the class within B and the caps runs again only
        operators of W (proven by the caller, e.g. an infeasible search restricted to W:
        docs/remat.md, "Witness search"); each adds the row "some operator outside W runs
        twice". The bound and an infeasibility then hold under those proofs.

    Returns
    -------
    CutCoverBound
    """
    from ortools.sat.python import cp_model

    from memsched.solvers.engines.cpsat import solve_cpsat

    if order not in ("free", "given"):
        raise ValueError(f"cut_cover_bound: order must be 'free' or 'given', got {order!r}")
    t0 = time.perf_counter()
    deadline = t0 + max(0.0, float(time_limit))
    g = graph
    n = g.n_ops
    out = CutCoverBound(baseline=g.total_cost(), order=order)
    if n == 0:
        out.complete = True
        return out
    zero = {v for v in range(n) if g.cost[v] == 0}
    try:
        rows = moment_rows(g, int(B), caps, order, costs_free=zero, deadline=deadline)
    except _Deadline:
        out.checks.append((0.0, "moments not built in time", round(time.perf_counter() - t0, 3)))
        return out
    out.stats = {"moments": n, "soft_tensors": int(len(rows.soft_t)), "build_s": round(time.perf_counter() - t0, 3)}
    neg = np.flatnonzero(rows.room < 0)
    if len(neg):
        x = int(neg[0])
        v = rows.col_op[x]
        out.infeasible = out.complete = True
        out.reason = (f"at the first computation of {g.ops[v].name!r} the tensors that must be resident "
                      f"(its inputs, outputs and workspace, the always-resident inputs, graph inputs read later, "
                      f"outputs of operators that may not run again read later) need {int(B - rows.room[x])} bytes "
                      f"> budget {int(B)}" + (" (first computations in the given order)" if order == "given" else ""))
        return out
    demand = rows.soft_sum - rows.room  # > 0: the moment forces recomputation
    active = np.flatnonzero(demand > 0.5)
    out.stats["tight_moments"] = int(len(active))
    nogoods = [set(w) for w in nogoods]
    if not len(active) and not nogoods:
        out.complete = True
        if downset:
            _lagrange_stage(g, int(B), caps, out, t0, deadline, upto)
        if downset and order == "given":
            _joint_stage(g, int(B), caps, out, t0, deadline, upto, workers, seed)
        if downset and order == "free":
            _downset_stage(g, int(B), caps, out, t0, deadline, upto, workers, seed)
        return out
    scale, icost = _int_costs(g.cost)
    prods = sorted(set(int(p) for p in rows.soft_prod))
    pidx = {p: k for k, p in enumerate(prods)}
    tprod = np.array([pidx[int(p)] for p in rows.soft_prod], dtype=np.int64)

    def row_coeffs(x):
        col = _column(rows, x).astype(np.float64) * rows.soft_size
        w = np.bincount(tprod, weights=col, minlength=len(prods))
        return w

    best = 0.0
    md = cp_model.CpModel()
    y = [md.NewBoolVar(f"y{p}") for p in prods]
    if nogoods:
        # every operator that may run again gets its y (after the soft tensors' producers, so
        # that tprod's indices stay), and each nogood W the row sum_{p not in W} y_p >= 1
        for v in range(n):
            if (caps is None or caps[v] is None or caps[v] > 0) and v not in pidx:
                pidx[v] = len(prods)
                prods.append(v)
                y.append(md.NewBoolVar(f"y{v}"))
        for w in nogoods:
            md.AddBoolOr([y[k] for k, p in enumerate(prods) if p not in w])
        out.stats["nogoods"] = len(nogoods)
    md.Minimize(sum(icost[p] * y[k] for k, p in enumerate(prods)))
    added: set = set()
    seen_rows: set = set()
    nnz = 0

    def add_row(x) -> bool:
        nonlocal nnz
        w = row_coeffs(x)
        d = int(math.ceil(demand[x] - 1e-9))
        ks = np.flatnonzero(w > 0)
        # coefficient clipping (a 0/1 covering row: w_k y_k >= d holds with min(w_k, d))
        coefs = [int(min(int(round(w[k])), d)) for k in ks]
        key = (tuple(int(k) for k in ks), tuple(coefs), d)
        added.add(x)
        if key in seen_rows:
            return False
        seen_rows.add(key)
        md.Add(sum(c * y[int(k)] for c, k in zip(coefs, ks)) >= d)
        nnz += len(ks)
        return True

    # each row alone: its LP (a fractional min-knapsack, solved greedily) is below the program's
    # optimum; the best over the most demanding moments is a bound at once, also at scale
    ordered = active[np.argsort(-demand[active], kind="stable")]
    pc = np.array([icost[p] for p in prods], dtype=np.float64)
    single = 0.0
    for x in ordered[:SINGLE_ROW_MOMENTS]:
        if time.perf_counter() > deadline:
            break
        lp = _knapsack_lp(np.minimum(row_coeffs(int(x)), demand[x]), pc, float(demand[x]))
        if math.isfinite(lp):  # an uncoverable row cannot occur (room >= 0); never a claim from here
            single = max(single, lp)
    if single > 0:
        # the integer program's value is an integer >= the LP value (float error: 1e-9 relative)
        best = max(best, math.ceil(single * (1 - 1e-9) - 1e-9) / scale)
        out.extra = best
        out.checks.append((best, f"single rows: {min(len(ordered), SINGLE_ROW_MOMENTS)} moments",
                           round(time.perf_counter() - t0, 3)))
    # first round: the most demanding moments (at most NNZ_PER_ROUND nonzeros)
    for x in ordered[:rows_per_round]:
        add_row(int(x))
        if nnz >= NNZ_PER_ROUND or time.perf_counter() > deadline:
            break
    rounds = 0
    while True:
        left = deadline - time.perf_counter()
        if left < 0.05:
            break
        rounds += 1
        run = solve_cpsat(md, time_limit=left, workers=workers, seed=seed, name="remat-cut-cover")
        if run.interrupted:
            raise KeyboardInterrupt
        if run.status == "infeasible" and nogoods:  # the exclusions leave no set to run twice
            out.infeasible = out.complete = True
            out.reason = (f"no schedule fits budget {int(B)}: every set of operators to run again is excluded, by "
                          f"the moment-cut covering rows or by one of {len(nogoods)} searches proven infeasible "
                          f"(docs/remat.md, \"Witness search\")"
                          + (" (first computations in the given order)" if order == "given" else ""))
            break
        if run.status == "infeasible":  # cannot happen: y = 1 everywhere meets every row (room >= 0)
            from memsched.solvers.result import SolverDisagreement

            raise SolverDisagreement("cut_cover_bound: the covering program has no solution, though every "
                                     "moment has room >= 0")
        bound = run.solver.BestObjectiveBound()
        if math.isfinite(bound):
            # CP-SAT's bound on an integer objective: round up to the next integer (exact integers)
            val = math.ceil(bound - 1e-6) / scale
            best = max(best, val)
        out.extra = best
        out.checks.append((best, f"round {rounds}: {len(added)} moments, {run.status}",
                           round(time.perf_counter() - t0, 3)))
        if upto is not None and best >= upto - 1e-9:
            break
        if run.status != "optimal":
            break
        yv = np.array([run.solver.BooleanValue(v) for v in y], dtype=np.float64)
        out.witness = [p for k, p in enumerate(prods) if yv[k] > 0.5]
        try:
            kept = _row_sums(rows, rows.soft_size * (1.0 - yv[tprod]), n, deadline)
        except _Deadline:
            break
        viol = np.flatnonzero(kept > rows.room + 0.5)
        viol = np.array([x for x in viol if int(x) not in added], dtype=np.int64)
        if not len(viol):
            out.complete = True
            break
        excess = kept[viol] - rows.room[viol]
        new = 0
        nnz0 = nnz
        for x in viol[np.argsort(-excess, kind="stable")][:rows_per_round]:
            new += add_row(int(x))
            if nnz - nnz0 >= NNZ_PER_ROUND or time.perf_counter() > deadline:
                break
        if not new:  # every violated moment repeats a row already in the program: cannot happen
            out.complete = True
            break
    out.stats.update({"rounds": rounds, "rows": len(seen_rows), "nonzeros": nnz, "variables": len(prods),
                      "s": round(time.perf_counter() - t0, 3)})
    if downset:
        _lagrange_stage(g, int(B), caps, out, t0, deadline, upto)
        if out.infeasible:
            return out
    if downset and order == "given":
        _joint_stage(g, int(B), caps, out, t0, deadline, upto, workers, seed)
        if out.infeasible:
            return out
    if downset and order == "free":
        _downset_stage(g, int(B), caps, out, t0, deadline, upto, workers, seed)
        if out.infeasible:
            return out
    if closure and not out.infeasible and (upto is None or out.extra < upto - 1e-9) \
            and deadline - time.perf_counter() > 0.2:
        # the closure rows (a rerun after the moment reads its inputs after the moment), on the
        # tightest moments first; the simple rows already found stay in the program
        order_x = [int(x) for x in active[np.argsort(-demand[active], kind="stable")]]
        ext = _closure_rounds(g, rows, caps, order, order_x, md, y, prods, pidx, icost, scale, deadline,
                              workers, seed, upto, out)
        out.stats["closure"] = ext
    return out


def _lagrange_stage(g: Graph, B: int, caps, out: CutCoverBound, t0: float, deadline: float, upto) -> None:
    """One moment's down-set covering program by Lagrangian relaxation and minimum cuts
    (solvers/remat/lagrange_bound.py), every moment whose trap value exceeds B, with a quarter
    of the time left (given order: D is the given prefix, the moments those over B in the given
    order); the larger bound is kept, its infeasibility ends the bound (in place)."""
    if out.infeasible or (upto is not None and out.extra >= upto - 1e-9) or deadline - time.perf_counter() <= 0.2:
        return
    from memsched.solvers.remat.lagrange_bound import lagrange_bound

    lb = lagrange_bound(g, B, caps, time_limit=(deadline - time.perf_counter()) / 4, order=out.order)
    out.stats["lagrange"] = {"extra": lb.extra, "moment": None if lb.moment is None else g.ops[lb.moment].name,
                             **lb.stats}
    if lb.infeasible:
        out.infeasible = out.complete = True
        out.reason = lb.reason
    else:
        if lb.before is not None and lb.extra > 0:
            out.before = lb.before
        if lb.extra <= out.extra:
            return
        out.extra = lb.extra
        out.checks.append((lb.extra, f"one moment by minimum cuts ({g.ops[lb.moment].name}): "
                           f"{lb.stats['moments']} of {lb.stats['of']} moments", round(time.perf_counter() - t0, 3)))


def _joint_stage(g: Graph, B: int, caps, out: CutCoverBound, t0: float, deadline: float, upto, workers: int,
                 seed: int) -> None:
    """Given order: the one-moment programs of the tightest moments solved together
    (solvers/remat/joint_moments.py) with half the time left; the larger bound is kept, its
    infeasibility ends the bound (in place)."""
    if not JOINT_MOMENTS or out.infeasible or (upto is not None and out.extra >= upto - 1e-9) \
            or deadline - time.perf_counter() <= 0.2:
        return
    from memsched.solvers.remat.joint_moments import joint_moment_bound

    jb = joint_moment_bound(g, B, caps, time_limit=(deadline - time.perf_counter()) / 2, workers=workers, seed=seed,
                            upto=upto)
    out.stats["joint"] = {"extra": jb.extra, "moments": len(jb.moments), "checks": jb.checks, "resume": jb.resume}
    if jb.infeasible:
        out.infeasible = out.complete = True
        out.reason = jb.reason
    elif jb.extra > out.extra:
        out.extra = jb.extra
        out.checks.append((jb.extra, f"several moments at once: {len(jb.moments)} moments",
                           round(time.perf_counter() - t0, 3)))


def _downset_stage(g: Graph, B: int, caps, out: CutCoverBound, t0: float, deadline: float, upto, workers: int,
                   seed: int) -> None:
    """The down-set covering program (solvers/remat/downset_bound.py: the operators run
    before each moment are a choice, not only its ancestors) with half the time left; the
    larger bound is kept, its infeasibility ends the bound (in place)."""
    if out.infeasible or (upto is not None and out.extra >= upto - 1e-9) or deadline - time.perf_counter() <= 0.2:
        return
    from memsched.solvers.remat.downset_bound import downset_cover_bound

    ds = downset_cover_bound(g, B, caps, time_limit=(deadline - time.perf_counter()) / 2, workers=workers, seed=seed)
    out.stats["downset"] = {"extra": ds.extra, "complete": ds.complete, **ds.stats}
    if ds.infeasible:
        out.infeasible = out.complete = True
        out.reason = ds.reason
    elif ds.extra > out.extra:
        out.extra = ds.extra
        out.checks.append((ds.extra, f"down-set covering program: {ds.stats.get('moments', 0)} moments, "
                           f"{ds.stats.get('status', 'not solved')}", round(time.perf_counter() - t0, 3)))


#: moments added to the closure program per round
CLOSURE_ROWS_PER_ROUND = 8
#: given order: run the joint program of several moments (``_joint_stage``) after the minimum cuts
JOINT_MOMENTS = True
#: closure rounds in a row that may leave the bound where it was before the closure stops
#: (MobileNet / ResNet50-train at 0.6-0.7: no round raised it in 20 s; rl_n100 given order:
#: the first round did)
CLOSURE_STALLS = 3


def _closure_rounds(g: Graph, rows: MomentRows, caps, order: str, moments: list, md, y, prods, pidx, icost,
                    scale: float, deadline: float, workers: int, seed: int, upto, out: CutCoverBound) -> dict:
    """Add the closure rows of ``moments`` (in that order, CLOSURE_ROWS_PER_ROUND at a time)
    to the covering program ``md`` and raise ``out.extra`` with each round's proven bound.

    Closure row of moment x (docs/remat.md, "Closure rows"): a_p = "p runs after x's first
    computation" (p before x, so a_p <= y_p), r_t = "t resident at x's first computation".
    A tensor read after x (a later consumer, or required) is resident or its producer runs
    after x; a run of p after x reads p's inputs after x, so each of them is resident or its
    producer runs after x too; the resident ones fit in B - need_x."""
    from memsched.solvers.engines.cpsat import solve_cpsat

    t0 = time.perf_counter()
    n = g.n_ops
    col_op = rows.col_op
    col = [0] * n
    for k, v in enumerate(col_op):
        col[v] = k
    if order == "given":
        def before(p, x):
            return col[p] < x

        def after(c, x):
            return col[c] > x
    else:
        anc, desc = g.reach_masks()

        def before(p, x):
            return (anc[col_op[x]] >> p) & 1

        def after(c, x):
            return (desc[col_op[x]] >> c) & 1
    can_again = [caps is None or caps[v] is None or caps[v] > 0 for v in range(n)]
    always = g.always_resident_idx()
    outs = g.output_idx
    size = g.size
    info = {"moments": 0, "rounds": 0, "variables": 0, "extra": out.extra}
    for v in range(n):  # every rerunnable producer needs its y (zero-cost ones too: free to set)
        if can_again[v] and v not in pidx:
            pidx[v] = len(prods)
            prods.append(v)
            y.append(md.NewBoolVar(f"y{v}"))
    md.Minimize(sum(icost[p] * y[k] for k, p in enumerate(prods)))
    i = stalls = 0
    while i < len(moments) and deadline - time.perf_counter() > 0.1:
        for x in moments[i:i + CLOSURE_ROWS_PER_ROUND]:
            if time.perf_counter() > deadline:
                break
            v = col_op[x]
            own = set(g.op_in[v])

            def counted(t):
                return t not in always and t not in own and size[t] > 0

            base = set()
            for t in range(g.n_tensors):
                if not counted(t):
                    continue
                p = g.producer[t]
                if p != -1 and not before(p, x):
                    continue
                if t in outs or any(after(c, x) for c in g.consumers[t]):
                    base.add(t)
            # closure: producers that may run after x (a), and the inputs such runs read
            forcers: dict = {t: [] for t in base}  # tensor -> candidate producers whose rerun reads it
            a: dict = {}
            stack = list(base)
            while stack:
                t = stack.pop()
                p = g.producer[t]
                if p == -1 or not can_again[p] or p in a:
                    continue
                a[p] = md.NewBoolVar(f"a{x}_{p}")
                md.AddImplication(a[p], y[pidx[p]])
                for u in g.op_in[p]:
                    if not counted(u):
                        continue
                    if u not in forcers:
                        forcers[u] = []
                        stack.append(u)
                    forcers[u].append(p)
            const = 0
            mem = []
            for t, fs in forcers.items():
                p = g.producer[t]
                ap = a.get(p) if p != -1 else None
                if ap is None and t in base:
                    const += size[t]  # read after x and never produced again: resident
                    continue
                rt = md.NewBoolVar(f"r{x}_{t}")
                mem.append(size[t] * rt)
                if t in base:
                    md.AddBoolOr([rt, ap])
                for c in fs:
                    if ap is None:
                        md.AddImplication(a[c], rt)
                    else:
                        md.AddBoolOr([rt, ap, a[c].Not()])
            room = int(rows.B) - int(rows.need[x]) - const
            if mem:
                md.Add(sum(mem) <= room)
            elif room < 0:  # cannot happen: the simple rows proved room >= 0 here
                from memsched.solvers.result import SolverDisagreement

                raise SolverDisagreement("cut_cover_bound: a closure row without room")
            info["moments"] += 1
            info["variables"] += len(a) + len(mem)
        i += CLOSURE_ROWS_PER_ROUND
        left = deadline - time.perf_counter()
        if left < 0.05:
            break
        run = solve_cpsat(md, time_limit=left, workers=workers, seed=seed, name="remat-cut-cover-closure")
        if run.interrupted:
            raise KeyboardInterrupt
        info["rounds"] += 1
        if run.status == "infeasible":  # every schedule of the class would give it a solution: none fits B
            out.infeasible = out.complete = True
            out.reason = (f"the moment-cut covering program with closure rows (docs/remat.md) has no solution at "
                          f"budget {int(rows.B)}: at some first computation the tensors that must stay resident "
                          f"exceed the budget whichever operators run again"
                          + (f" (with the exclusions of {out.stats['nogoods']} searches proven infeasible, "
                             f"docs/remat.md \"Witness search\")" if out.stats.get("nogoods") else "")
                          + (" (first computations in the given order)" if order == "given" else ""))
            break
        bound = run.solver.BestObjectiveBound()
        before_round = out.extra
        if math.isfinite(bound):
            out.extra = max(out.extra, math.ceil(bound - 1e-6) / scale)
        stalls = 0 if out.extra > before_round else stalls + 1
        info["extra"] = out.extra
        out.checks.append((out.extra, f"closure round {info['rounds']}: {info['moments']} moments, {run.status}",
                           round(time.perf_counter() - t0, 3)))
        if run.status == "optimal":
            out.witness = [p for k, p in enumerate(prods) if run.solver.BooleanValue(y[k])]
        if upto is not None and out.extra >= upto - 1e-9:
            break
        if run.status != "optimal" or stalls >= CLOSURE_STALLS:
            break
    info["complete"] = i >= len(moments)
    return info



_CACHE: dict = {}  # (id(graph), B, caps, order) -> (weakref to graph, time_limit, CutCoverBound)


def cached_cut_cover_bound(graph: Graph, B: int, caps=None, order: str = "free", *,
                           time_limit: float = 5.0, workers: int = 1, seed: int = 0,
                           remembered_only: bool = False) -> CutCoverBound | None:
    """:func:`cut_cover_bound`, remembered per (graph object, B, caps, order):
    the CP driver and the claims (``dispatch.lift_claims``) ask for the same bound; a
    remembered result is reused when it is complete or had at least ``time_limit``.
    ``remembered_only``: return whatever is remembered for the key (of any time limit),
    or None, and compute nothing (the claims after Ctrl-C: the user asked to stop)."""
    key = (id(graph), int(B), None if caps is None else tuple(caps), order)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is not graph:
        hit = None
    if remembered_only:
        return None if hit is None else hit[2]
    if hit is not None and (hit[2].complete or hit[1] >= time_limit):
        return hit[2]
    res = cut_cover_bound(graph, B, caps, order, time_limit=time_limit, workers=workers, seed=seed)
    if len(_CACHE) >= 16:
        for k in [k for k, v in _CACHE.items() if v[0]() is None] or list(_CACHE)[:8]:
            _CACHE.pop(k, None)
    _CACHE[key] = (weakref.ref(graph), time_limit, res)
    return res
