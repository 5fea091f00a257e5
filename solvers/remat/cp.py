"""The CP-SAT driver of ``memsched remat --method cp``.

Problem (docs/remat.md): least compute with peak <= B (or least peak with compute <=
(1 + eps) x baseline) under per-operator recompute caps, over every schedule (``order=
"free"``) or over those whose first computations follow the given order (``order="given"``).

The model is :func:`memsched.formulations.remat_cpsat.build_remat_cp`; it is solved here,
through the one CP-SAT runner (:func:`memsched.solvers.engines.cpsat.solve_cpsat`), in
phases (docs/remat.md, "Driver"):

1. local and backward-pebbling infeasibility (:mod:`.infeasibility`);
2. warm starts (:mod:`.warm_start`): good plain orders; a plain order within B is optimal
   for the compute objective (every operator runs once); else the DTR-score greedy and
   the peak-cutting search give a schedule within B to hint;
3. phase 1 (no hint within B): least peak, to find a first schedule within B or prove
   that none exists in the model's class;
4. given-order class (finite caps): the stage relaxation's bound (:mod:`.proofs`) as an
   objective floor; the witness search (finite caps): only the operators the moment-cut
   covering program runs twice may run again, a small search whose schedule meets the floor
   where the program's solution is realizable (``_witness_search``); phase 2a (free order
   only): the given-order model, a smaller search, for a cheaper hint;
5. a first slice of the main model; then the threshold and hitting-set bounds
   (:mod:`.proofs`) as an objective floor; then the main model with the rest of the time.

Graphs of at most ``exhaustive.MAX_OPS`` operators: the exhaustive search of the asked problem
(:mod:`.exhaustive`) runs after the provers of step 4 once a first schedule within B is known (up
to its compute), and in phase 1 before the CP-SAT least-peak models (after the given-order
relaxation, cut loop and stage-class phase); it decides the row or raises the floor
(``_exhaustive``). With the peak objective, a bisection on the budget with the same search runs
after the warm starts (``_exhaustive_peak``).

Every operator without a cap, free order, compute objective, no schedule within B after the
warm starts: the exhaustive backward reachability search (:func:`.lowbudget.decide_unbounded`)
decides whether any schedule fits B; "infeasible" ends the solve, "feasible" keeps its emitted
schedule (the computations it can do without dropped) as a fallback, returned only if the model
finds no schedule within B (``_decide_unbounded``).

Without a cap the model needs an internal cap (``DEFAULT_CP_CAP``, doubled up to
``MAX_CP_CAP`` while the capped model is proven infeasible); the result's ``scope`` then
names the capped class (docs/claims.md), until a schedule within B is known: the caps derived
from its compute (``_caps_from_compute``) then replace the internal cap when the model at most
grows by ``COST_CAPS_GROWTH``, and the scope is the asked class again. Ctrl-C in any phase stops within a second and
returns the best schedule within B seen so far (status ``timeout``, message
"interrupted"; the CLI prints status ``interrupted``). ``params["stop"]`` says in words
why the solve ended.

Reference: Bartan et al., "Moccasin", ICML 2023 (the interval model); Jain et al.,
"Checkmate", MLSys 2020 (the given-order class).
"""
from __future__ import annotations

import math
import sys
import threading
import time

from memsched.formulations import Graph, MemschedError, Schedule, evaluate
from memsched.formulations.problems import unique_topological_order
from memsched.formulations.schedule import COMPUTE
from memsched.solvers.engines.cpsat import solve_cpsat
from memsched.solvers.remat.budgets import check_caps, effective_caps, given_peak
from memsched.solvers.remat.infeasibility import local_infeasibility, order_lower_bound, pebbling_infeasibility
from memsched.solvers.remat.warm_start import WarmStarts, candidate_orders, greedy_warm_start
from memsched.solvers.result import SolveResult, SolverDisagreement, Status, make_result, same_value

__all__ = ["solve_cp", "run_cpsat", "lb_compute", "INTERRUPTED", "DEFAULT_CP_CAP", "MAX_CP_CAP"]

# Set when Ctrl-C stopped a phase of the current remat solve; later phases then run no search.
INTERRUPTED = threading.Event()

# The CP model needs a finite number of occurrences per operator; without a cap it
# first solves the model with this many extra computations per operator, and while
# that capped model is proven infeasible (and time is left) doubles the internal cap
# up to MAX_CP_CAP. Its claims then hold for the capped class only (scope "capped:<k>"),
# unless the caps derived from a known compute replace it (_caps_from_compute). 1 (Moccasin's
# class, the smallest model) finds the schedules that the asked bounds meet sooner than 2 on
# the Checkmate train graphs (BENCHMARKS.md, "Remat without a cap").
DEFAULT_CP_CAP = 1
MAX_CP_CAP = 16
# Share of the time left after the warm starts given to the fixed-given-order CP model
# before the free-order one (compute objective, when a schedule within the budget is known).
FIXED_ORDER_SHARE = 0.35
# Share of the time left given to the threshold lower bound (solvers/remat/proofs.py) once a
# schedule within the budget is known (finite caps, compute objective).
THRESHOLD_SHARE = 0.3
# Share of the time left given to a first slice of the main model before the bounds are computed.
PRESOLVE_SHARE = 0.2
# Share of the time left given to the given-order stage relaxation (given class, finite caps),
# of which at most RELAX_BUILD_SHARE may go to building it (a graph whose relaxation does not
# build in that time is left to the slot model). Its search gets the larger share because in
# this class it is the prover that closes rows (docs/remat.md, "Given-order driver"); it ends
# early when solved.
RELAX_SHARE = 0.75
RELAX_BUILD_SHARE = 0.15
# The relaxation is not even started when its size (formulations.remat_given_relax.
# given_relaxation_size, "terms") exceeds this many per second of its build share: its build
# was measured at ~0.2 M terms/s (MobileNet-train, 2.1 M terms, ~10 s at load ~8), so it could
# not finish and its share would be lost (docs/remat.md, "Given-order driver").
RELAX_TERMS_PER_S = 100_000
# The compact form (one load variable per stage; used only where the expanded form is too
# large) is not started when it has more than this many recomputation literals per second of
# the relaxation's share: its search first proves anything after ~14 s on MobileNet-train
# (17 k literals, solved in 32 s), needed 67 s on random_layered n250 (31 k) and had no bound
# above 0 after 52 s on ResNet50-train (62 k), time the slot model uses better there
# (docs/remat.md, "Given-order driver").
RELAX_COMPACT_R_PER_S = 600
# Share of the time left (given-order class, finite caps, no schedule within the budget after
# the warm starts) given to the relaxation as a feasibility test before the stage-class phase:
# no solution refutes the budget for the class (random_layered n100 at 0.6: 4 s, docs/remat.md).
RELAX_REFUTE_SHARE = 0.3
# ... its share when the relaxation with stage cuts runs next (cp._cut_loop_first), which answers
# the same question more slowly (random_layered n100 at 0.6: compact feasibility 4.8 s, the
# expanded relaxation with its objective 15.3 s) and others besides.
RELAX_REFUTE_SHARE_BEFORE_CUTS = 0.15
# Share of the time left (given-order class, no schedule within the budget after the warm starts)
# given to the stage-class first phase (solvers/remat/stage_class.py): its least-peak search
# finds first schedules the slot model's phase 1 does not (random_layered n250, docs/remat.md).
STAGE_SHARE = 0.85
# The same phase's share when the stage greedy of the warm starts already fits the budget (its
# compute search then only improves that schedule; the rest goes to the bounds and the slot model).
STAGE_SHARE_FITTING = 0.3
# Share of the time left given to ruin and recreate from the hint (solvers/remat/sequence_lns.py;
# given-order class, compute objective) once the relaxations and the witness search have not
# closed the row: a cheaper hint for the slices and the main model.
POLISH_SHARE = 0.25
# The given-order relaxation runs with stage no-good cuts (solvers/remat/stage_cuts.py) where
# every cap is at most 1 and the expanded form builds; False: one solve of the relaxation, as
# before 2026-12-05 (kept for the side-by-side in benchmarks/bench_remat_stage_cuts.py).
STAGE_CUTS = True
# ... also on the compact form (where the expanded one is too large for its build share).
STAGE_CUTS_COMPACT = True
# ... and, where the warm starts leave no schedule within the budget and the expanded form
# builds, before the refutation test and the stage-class phase (cp._cut_loop_first).
CUT_LOOP_FIRST = True
# Share of the time left given to the free-order stage relaxation (free order, several orders, finite caps).
FREE_RELAX_SHARE = 0.8
# The "free after last use" dominance rule in the slot model (docs/remat.md): off, since it
# was measured to gain nothing on MobileNet-train 0.9 / 0.8 (given order, 60 s, 2 workers).
FREE_AFTER_LAST_USE = False
SOLVER = "remat-cp"


# ------------------------------------------------------------------ entry
def solve_cp(graph: Graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, order) -> SolveResult:
    """Solve with the CP model, escalating the internal cap when there is none.

    Parameters
    ----------
    graph : Graph
    B : int or None
        Budget in bytes (required for ``objective="compute"``).
    caps : list or None
        Extra computations per operator as asked (None entries: unbounded).
    objective, eps : the asked objective (docs/remat.md).
    time_limit : float
        Seconds from ``t0`` for the whole solve, every phase included.
    seed, workers : CP-SAT's random seed and worker count (0: one per core).
    progress : bool
        Print a line per phase and per improving solution on stderr, in the result's units.
    t0 : float
        ``time.perf_counter()`` at the start of the solve.
    order : "free" or "given"

    Returns
    -------
    SolveResult
        With ``scope`` naming the class the model searched; ``status``/``lower_bound``
        hold for that class (``memsched.solvers.remat.dispatch.lift_claims`` turns them
        into claims about the asked problem).

    Complexity
    ----------
    Bounded by ``time_limit``; the model has O(sum_v (1 + cap_v)) interval variables.
    """
    unbounded = caps is None or any(c is None for c in caps)
    k = DEFAULT_CP_CAP
    tried = []
    carry: dict = {}  # what one internal cap's solve leaves to the next (_decide_unbounded)
    while True:
        left = time_limit - (time.perf_counter() - t0)
        res = _solve_once(graph, B, caps, objective, eps, max(0.5, left), seed, progress, workers,
                          time.perf_counter(), order=order, internal_cap=k, carry=carry)
        if not unbounded:
            break
        eff = str(res.params.get("effective_cap", ""))
        switched = res.params.get("caps_from_compute")
        if eff.isdigit():
            k = max(k, int(eff))
        elif isinstance(switched, dict):  # the derived caps replaced the internal cap it had reached
            k = max(k, switched["internal_cap"])
        tried.append(k)
        res.params["internal_cap"] = k
        res.params["internal_caps_tried"] = list(tried)
        if (res.status != Status.INFEASIBLE or res.params.get("proof") in ("local", "exhaustive") or INTERRUPTED.is_set()
                or 2 * k > MAX_CP_CAP or time_limit - (time.perf_counter() - t0) < 1.0):
            break
        k *= 2
    if carry.get("fallback") is not None and res.schedule is None:
        return _fallback_result(graph, res, carry)
    return res


def _fallback_result(graph: Graph, res: SolveResult, carry: dict) -> SolveResult:
    """The result when the model found no schedule within B but the unbounded reachability
    search emitted one (``_decide_unbounded``): that schedule, status feasible, for the asked
    class (free order, no cap), with no lower bound of its own (``lift_claims`` adds the asked
    problem's). A refutation of the asked problem beside it is a bug."""
    if res.status == Status.INFEASIBLE and res.params.get("refutes_asked_problem"):
        raise SolverDisagreement(f"remat-cp: {res.message}, but the reachability search emitted a schedule "
                                 f"within the budget")
    why = res.params.get("stop", "")
    params = dict(res.params)
    params["stop"] = f"{why}; returning the schedule emitted by the reachability search" if why else \
        "returning the schedule emitted by the reachability search"
    out = make_result(graph, carry["fallback"], solver=SOLVER, params=params, status=Status.FEASIBLE,
                      objective="compute", scope="free", wall_s=res.wall_s,
                      message="the CP model found no schedule within the budget; this one is the exhaustive "
                              "reachability search's (each operator's inputs built from scratch, then the "
                              "computations it can do without dropped; docs/remat-low-budgets.md)")
    out.extra["time_to_first_s"] = out.extra["time_to_best_s"] = carry.get("fallback_s")
    return out


# ------------------------------------------------------------------ state
class _Solve:
    """One solve's settings and what it has found so far (the phases read and update it)."""

    def __init__(self, graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, order, internal_cap):
        self.graph, self.B, self.caps, self.objective = graph, B, caps, objective
        self.time_limit, self.seed, self.progress, self.workers, self.t0 = time_limit, seed, progress, workers, t0
        self.n = graph.n_ops
        self.unbounded = caps is None or any(c is None for c in caps)
        self.given = order == "given"
        # one topological order: the free class is the given class, and the given-order model is much smaller
        self.gmodel = self.given or unique_topological_order(graph)
        self.baseline = graph.total_cost()
        self.limit_c = (1 + eps) * self.baseline if objective == "peak" else None
        self.floor = self.baseline
        self.warm = WarmStarts()
        self.hint = None  # the schedule hinted to the next model
        self.witness = None  # operators run twice in the moment-cut covering program's solution
        self._relax_sizes = None  # given_relaxation_size, once computed (_relax_size)
        self.hint_time = None  # seconds from t0 to the hint, once it fits the budget
        self.first_s = None  # seconds from t0 to the first schedule within the budget
        self.params = {"workers": workers, "seed": seed}
        self.carry: dict = {}  # findings that hold for every internal cap (solve_cp passes one dict to each round)
        self.set_cap(internal_cap)

    def set_cap(self, internal_cap: int) -> None:
        self.internal_cap = internal_cap
        self.ecaps = effective_caps(self.caps, self.n, internal_cap)
        self.params["effective_cap"] = self.ecaps[0] if len(set(self.ecaps)) == 1 else "per-op"
        base = "given-first-computations" if self.given else "free"
        self.scope = base if not self.unbounded else (
            f"capped:{internal_cap}" if not self.given else f"given-first-computations,capped:{internal_cap}")
        self.params["scope"] = self.scope

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.time_limit - self.elapsed()

    def say(self, label: str, text: str) -> None:
        if self.progress:
            print(f"  [{label}] {self.elapsed():7.2f}s  {text}", file=sys.stderr, flush=True)

    def fixed(self):
        """The order of first computations the model fixes (the given one), or None."""
        return self.graph.given_order() if self.gmodel else None

    def build(self, budget, objective, *, fix_order="model", compute_budget=None, caps=None, stop=None):
        """The slot model (``caps``: narrower caps than the effective ones, for a search;
        ``stop``: see ``build_remat_cp``, raises ``BuildStopped``)."""
        from memsched.formulations.remat_cpsat import build_remat_cp

        fix = self.fixed() if fix_order == "model" else fix_order
        self.say("build", f"{objective} model, {'given' if fix is not None else 'free'} order of first computations")
        return build_remat_cp(self.graph, budget, self.ecaps if caps is None else caps, objective=objective,
                              compute_budget=compute_budget, fix_order=fix, free_after_last_use=FREE_AFTER_LAST_USE,
                              stop=stop)

    def result(self, schedule, *, stop: str, **kw) -> SolveResult:
        """make_result naming this solve's class; ``stop`` is why the solve ended, in words."""
        kw.setdefault("scope", self.scope)
        self.params["stop"] = stop
        res = make_result(self.graph, schedule, solver=SOLVER, params=self.params, **kw)
        if self.first_s is not None and res.schedule is not None:
            res.extra.setdefault("time_to_first_s", round(self.first_s, 3))
        return res

    def infeasible(self, reason: str, *, proof: str = "model", stop: str = "proved infeasible") -> SolveResult:
        self.params["proof"] = proof
        return self.result(None, status=Status.INFEASIBLE, objective=self.objective, message=reason,
                           wall_s=self.elapsed(), stop=stop)

    def fits(self, schedule) -> bool:
        return schedule is not None and self.B is not None and evaluate(self.graph, schedule).peak <= self.B

    def best_so_far(self, why: str) -> SolveResult:
        """The best schedule within the budget seen so far (the hint or a warm start), or none."""
        sched, t = None, None
        if self.objective == "compute":
            if self.fits(self.hint):
                sched, t = self.hint, self.hint_time
            if self.warm.best is not None and (sched is None or self.warm.best[0] < evaluate(self.graph, sched).compute):
                sched, t = self.warm.best[1], self.warm.best[3]
        elif self.hint is not None and (self.B is None or self.fits(self.hint)):
            sched = self.hint
        if sched is None:
            return self.result(None, status=Status.TIMEOUT, objective=self.objective, lower_bound=self.floor,
                               message=f"{why} before a schedule within the budget was found", stop=why)
        return self.result(sched, status=Status.FEASIBLE, objective=self.objective,
                           lower_bound=self.floor if self.objective == "compute" else None,
                           extra={"time_to_best_s": None if t is None else round(t, 3)},
                           message=f"{why}; the best schedule found so far", stop=why)


# ------------------------------------------------------------------ phases
def _solve_once(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, *, order="free",
                internal_cap=DEFAULT_CP_CAP, carry: dict | None = None) -> SolveResult:
    """One solve with a fixed internal cap (phases in the module docstring); ``carry``: what an
    earlier internal cap's solve found that holds for every cap (``_decide_unbounded``)."""
    s = _Solve(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, order, internal_cap)
    s.carry = {} if carry is None else carry
    try:
        return _phases(s)
    except KeyboardInterrupt:  # Ctrl-C outside CP-SAT (warm starts, model build, bounds)
        INTERRUPTED.set()
        return s.best_so_far("interrupted")


def _phases(s: _Solve) -> SolveResult:
    res = _refute_locally(s)
    if res is not None:
        return res
    if s.objective == "peak" and s.limit_c is not None:
        _caps_from_compute(s, s.limit_c)
    res = _compute_floor(s)
    if res is not None:
        return res
    res = _warm_starts(s)
    if res is not None:
        return res
    t_build = time.perf_counter()
    done = None
    if s.objective == "compute":
        res = _first_schedule(s)
        if res is not None:
            return res
        s.hint_time = s.elapsed() if s.hint_time is None else s.hint_time
        X, cheapest = evaluate(s.graph, s.hint).compute, s.hint
        if s.warm.best is not None and s.warm.best[0] < X:
            X, cheapest = s.warm.best[0], s.warm.best[1]
        _caps_from_compute(s, X, cheapest)
        res = _joint_floor(s)
        if res is not None:
            return res
        # the witness search is quick where it works; it goes first unless the relaxation is built
        # in its expanded form, the prover that closes those rows (MobileNet-train 0.8 / 0.6: 1.7 /
        # 3.6 s with the witness search first, 30 / 29 s by the compact relaxation before it)
        phases = [_given_relaxation, _free_relaxation]
        phases.insert(0 if s.gmodel and not _expanded_relaxation_fits(s) else len(phases), _witness_search)
        phases.append(_exhaustive)  # after the provers that decide most rows sooner
        for phase in phases:
            res = phase(s)
            if res is not None:
                return res
        if s.given:
            _polish(s)
            if INTERRUPTED.is_set():
                return s.best_so_far("interrupted")
        _given_order_slice(s)
        done = _first_slice(s)
        if done is None:
            res = _bounds(s)
            if res is not None:
                return res
    else:
        res = _exhaustive_peak(s)
        if res is not None:
            return res
    if INTERRUPTED.is_set():
        return s.best_so_far("interrupted")
    if done is not None:
        cp = done[0]
    elif s.objective == "compute":
        cp = s.build(s.B, "compute")
        _add_floor(cp, s.floor)
    else:
        cp = s.build(None if s.B is None else s.B, "peak", compute_budget=s.limit_c)
    s.params["build_s"] = round(time.perf_counter() - t_build, 3)
    s.params.update(cp.info)
    return _main_solve(s, cp, done)


def _refute_locally(s: _Solve) -> SolveResult | None:
    """1. Local and backward-pebbling infeasibility; with no recomputation at all, the
    ordering lower bound."""
    if s.B is None:
        return None
    why = local_infeasibility(s.graph, s.B) or pebbling_infeasibility(s.graph, s.B)
    if why:
        return s.infeasible(why, proof="local", stop="proved infeasible by local facts")
    if all(c == 0 for c in s.ecaps) and not s.unbounded:
        lb = order_lower_bound(s.graph)
        if lb > s.B:
            return s.infeasible(f"with no recomputation the peak is at least {lb} (ordering lower bound) > budget {s.B}",
                                stop="proved infeasible by the ordering lower bound")
    return None


def _compute_floor(s: _Solve) -> SolveResult | None:
    """When no plain order can fit B (ordering lower bound > B; in the given class the
    given order's peak), every schedule within B recomputes some operator allowed to
    recompute (docs/remat.md, "Compute floor"). Then the moment-cut covering bound
    (``_cut_floor``): a floor, or a refutation of the budget."""
    if s.objective != "compute" or s.B is None:
        return None
    olb = given_peak(s.graph) if s.gmodel else order_lower_bound(s.graph)
    if olb > s.B:
        extra_costs = [s.graph.cost[v] for v in range(s.n) if s.ecaps[v] > 0]
        if extra_costs:
            s.floor = s.baseline + float(min(extra_costs))
            s.params["recompute_needed"] = f"ordering lower bound {olb} > budget {s.B}"
    return _cut_floor(s)


#: the caps derived from a known compute replace the internal cap when the model has at most this many
#: times as many slots (one per computation allowed) as with the internal cap (3 with the internal cap 1:
#: the same limit as twice the slots of cap 2)
COST_CAPS_GROWTH = 3.0


def _caps_from_compute(s: _Solve, X: float, source: Schedule | None = None) -> None:
    """With unbounded recomputation asked, replace the internal cap by the caps that every
    schedule of compute below ``X`` keeps once its useless computations are dropped
    (solvers/remat/cost_caps.py; docs/remat.md, "Caps from a known compute"): the class then
    holds an optimum of the asked problem, and every bound of the class is one of the asked
    problem, so the solve names the whole problem as its scope ("capped:" goes). ``X``: the
    compute of ``source``, the cheapest schedule within B known (compute objective; reduced, it
    becomes the hint), or the compute limit (peak objective). Skipped when the model would have
    more than ``COST_CAPS_GROWTH`` times the slots."""
    from memsched.solvers.remat.cost_caps import caps_from_compute, drop_useless, occurrences

    if not s.unbounded or INTERRUPTED.is_set():
        return
    g = s.graph
    caps = caps_from_compute(g, X, s.caps)
    have, need = occurrences(s.ecaps), occurrences(caps)
    if need > COST_CAPS_GROWTH * have:
        s.params["caps_from_compute"] = f"not used: {need} slots against {have} with the internal cap"
        return
    if source is not None:
        hint = drop_useless(g, source)
        if check_caps(g, hint, caps) is not None:
            raise SolverDisagreement(f"caps from compute {X:g}: the schedule of that compute, reduced, "
                                     f"breaks them ({check_caps(g, hint, caps)})")
        if s.warm.best is not None and source is s.warm.best[1] and source is not s.hint:
            s.hint_time = s.warm.best[3]  # the warm start was the cheaper one: its time is the time to best
        s.hint = hint
    if s.warm.best is not None:
        ws = s.warm.best
        reduced = drop_useless(g, ws[1])
        s.warm.best = (evaluate(g, reduced).compute, reduced, *ws[2:]) if check_caps(g, reduced, caps) is None else None
    s.caps, s.unbounded = caps, False
    s.set_cap(s.internal_cap)
    s.params["caps_from_compute"] = {"compute": X, "max_cap": max(caps, default=0), "slots": need,
                                     "internal_cap": s.internal_cap, "slots_internal_cap": have}
    s.say("bounds", f"caps from compute {X:g}: at most {max(caps, default=0)} extra computations per operator, "
                    f"{need} slots (the class holds an optimum of the unbounded problem)")


#: share of the time left for the moment-cut covering bound (it stops early when solved)
CUT_SHARE = 0.15


def _cut_floor(s: _Solve) -> SolveResult | None:
    """The moment-cut covering bound (solvers/remat/cut_bound.py; docs/remat.md) with the asked
    caps: its given-order variant when the model's class is the given one (asked, or the only
    topological order), else its free-order variant; both hold for the asked problem. It
    raises the floor, or refutes the budget for the asked problem."""
    from memsched.solvers.remat.cut_bound import cached_cut_cover_bound

    t = time.perf_counter()
    s.say("bounds", "moment-cut covering bound")
    cb = cached_cut_cover_bound(s.graph, s.B, s.caps, "given" if s.gmodel else "free",
                                time_limit=CUT_SHARE * s.left(), workers=s.workers, seed=s.seed)
    s.params["cut_cover_bound"] = {"extra": cb.extra, "complete": cb.complete, "infeasible": cb.infeasible,
                                   "s": round(time.perf_counter() - t, 3), **cb.stats}
    if cb.infeasible:
        s.params["refutes_asked_problem"] = True
        return s.infeasible(cb.reason, proof="local", stop="proved infeasible by the moment-cut covering bound")
    s.floor = max(s.floor, cb.lower_bound)
    s.witness = cb.witness
    return None


#: share of the time left for the exhaustive search of a small graph (solvers/remat/exhaustive.py),
#: and the states it may settle (with the queue about 4.5 KB each: 1.3 GB resident at 300,000 on
#: random_dag(22, seed=6), in 30 s). The share is small: where it settles it needs few states
#: (multi_output_12 at 0.6: 3,279), and where it does not the time is the later phases' (with 0.3, on
#: random 22-operator DAGs at 0.7 it settled no row and left one without a schedule; BENCHMARKS.md)
EXHAUSTIVE_SHARE = 0.1
EXHAUSTIVE_STATES = 200_000


def _exhaustive(s: _Solve) -> SolveResult | None:
    """Small graphs (``exhaustive.fits_exhaustive``), compute objective: the exhaustive search
    of the asked problem itself, any caps (unbounded included) and the asked order class, for
    ``EXHAUSTIVE_SHARE`` of the time left, up to the compute of the hint when it fits B.
    Optimal or infeasible as it settles; else its lower bound raises the floor. Its claims
    need no narrowing of the class (docs/remat.md, "Exhaustive search for small graphs")."""
    from memsched.solvers.remat.exhaustive import exact_remat, fits_exhaustive

    g = s.graph
    if (s.objective != "compute" or s.B is None or not fits_exhaustive(g) or INTERRUPTED.is_set()
            or EXHAUSTIVE_SHARE <= 0 or s.left() < 0.2):
        return None
    upto = evaluate(g, s.hint).compute if s.fits(s.hint) else None
    if upto is not None and same_value(s.floor, upto, "compute"):
        return None
    scope = "given-first-computations" if s.given else "free"
    caps = ("unbounded" if s.unbounded else "caps derived from a known compute"
            if isinstance(s.params.get("caps_from_compute"), dict) else "caps as asked")
    s.say("exhaustive", f"search of every schedule ({scope}, {caps})"
                        + ("" if upto is None else f" of compute at most {upto:g}"))
    ex = exact_remat(g, s.B, s.caps, "given" if s.given else "free", upto=upto, max_states=EXHAUSTIVE_STATES,
                     time_limit=EXHAUSTIVE_SHARE * s.left(), stop=INTERRUPTED.is_set)
    s.params["exhaustive"] = {"status": ex.status, "states": ex.states, "s": round(ex.seconds, 3),
                              "lower_bound": ex.lower_bound}
    s.say("exhaustive", f"{ex.status} after {ex.states} states ({ex.seconds:.2f} s)")
    if ex.status == "none upto":
        raise SolverDisagreement(f"{SOLVER}: the exhaustive search finds no schedule of compute at most {upto:g}, "
                                 "but the hint is one")
    if ex.status == "infeasible":
        s.params["refutes_asked_problem"] = True
        s.scope = s.params["scope"] = scope
        return s.infeasible(f"the exhaustive search of every schedule ({ex.states} states) finds none within "
                            f"budget {s.B}", proof="exhaustive", stop="proved infeasible by the exhaustive search")
    if ex.status == "optimal":
        s.scope = s.params["scope"] = scope
        if s.first_s is None:
            s.first_s = s.elapsed()
        # the value was first reached by the hint when the search only proves it optimal
        t_best = s.hint_time if upto is not None and same_value(ex.compute, upto, "compute") else s.elapsed()
        return s.result(ex.schedule, status=Status.OPTIMAL, objective="compute", claimed=ex.compute,
                        lower_bound=ex.compute, wall_s=s.elapsed(),
                        extra={"time_to_best_s": None if t_best is None else round(t_best, 3)},
                        message=f"the exhaustive search settled a least-compute schedule ({ex.states} states)",
                        stop="the exhaustive search settled a schedule of least compute (bound met)")
    s.floor = max(s.floor, ex.lower_bound)  # a bound of the asked problem, so of any class inside it
    return None


def _exhaustive_peak(s: _Solve) -> SolveResult | None:
    """The peak objective on a small graph: the least peak of a schedule of compute at most the
    limit, by bisection on the budget with the exhaustive search (``exhaustive.least_peak_exact``),
    for ``EXHAUSTIVE_SHARE`` of the time left, from the hint (a plain order: compute = baseline).
    Decided, it ends the solve as optimal for the asked class; else the CP-SAT model goes on."""
    from memsched.solvers.remat.exhaustive import fits_exhaustive, least_peak_exact

    g = s.graph
    if (s.objective != "peak" or s.limit_c is None or not fits_exhaustive(g) or INTERRUPTED.is_set()
            or EXHAUSTIVE_SHARE <= 0 or s.left() < 0.2 or s.hint is None):
        return None
    ev = evaluate(g, s.hint)
    if ev.compute > s.limit_c or (s.B is not None and ev.peak > s.B):
        return None
    scope = "given-first-computations" if s.given else "free"
    s.say("exhaustive", f"least peak with compute at most {s.limit_c:g} by bisection ({scope})")
    ex = least_peak_exact(g, s.limit_c, s.caps, "given" if s.given else "free", hi=ev.peak, hi_schedule=s.hint,
                          max_states=EXHAUSTIVE_STATES, time_limit=EXHAUSTIVE_SHARE * s.left(),
                          stop=INTERRUPTED.is_set)
    s.params["exhaustive"] = {"status": ex.status, "states": ex.states, "s": round(ex.seconds, 3),
                              "lower_bound": ex.lower_bound}
    s.say("exhaustive", f"{ex.status} after {ex.states} states ({ex.seconds:.2f} s)")
    if ex.status != "optimal":
        return None
    s.scope = s.params["scope"] = scope
    return s.result(ex.schedule, status=Status.OPTIMAL, objective="peak", claimed=ex.lower_bound,
                    lower_bound=ex.lower_bound, wall_s=s.elapsed(),
                    message=f"the exhaustive search settled the least peak ({ex.states} states)",
                    stop="the exhaustive search proved the least peak (bound met)")


#: share of the time left for resuming the joint program of several moments once a schedule is known
JOINT_SHARE = 0.5


def _joint_floor(s: _Solve) -> SolveResult | None:
    """3c. Given-order class, finite caps, a schedule within B above the floor, and the cut
    floor's joint program of several moments (docs/remat.md, "Several moments at once") cut
    short by its small share: the program resumed at the size it stopped at, for
    ``JOINT_SHARE`` of the time left, up to the schedule's extra compute. Its bound holds for
    the class (the same proof); one that meets the schedule makes it optimal."""
    from memsched.solvers.remat.joint_moments import joint_moment_bound

    g = s.graph
    info = (s.params.get("cut_cover_bound") or {}).get("joint") or {}
    if (not s.gmodel or s.unbounded or s.objective != "compute" or INTERRUPTED.is_set() or JOINT_SHARE <= 0
            or info.get("resume") is None or not s.fits(s.hint) or s.left() < 2.0):
        return None
    hint_c = evaluate(g, s.hint).compute
    if same_value(s.floor, hint_c, "compute"):
        return None
    t = time.perf_counter()
    s.say("bounds", f"several moments at once, resumed at {info['resume']} moments")
    jb = joint_moment_bound(g, s.B, s.caps, time_limit=JOINT_SHARE * s.left(), workers=s.workers, seed=s.seed,
                            upto=hint_c - s.baseline, start=info["resume"], known=info.get("extra", 0.0))
    s.params["joint_moments"] = {"extra": jb.extra, "moments": len(jb.moments), "checks": jb.checks,
                                 "resume": jb.resume, "s": round(time.perf_counter() - t, 3)}
    if jb.infeasible:  # the hint is a schedule of the class within B
        raise SolverDisagreement(f"several moments at once: {jb.reason}, though a schedule of the class fits")
    s.floor = max(s.floor, s.baseline + jb.extra)
    if same_value(s.floor, hint_c, "compute"):
        return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                        extra={"time_to_best_s": round(s.hint_time, 3)},
                        message="the joint program of several moments meets the schedule (docs/remat.md, "
                                "\"Several moments at once\")",
                        stop="the joint program of several moments meets the schedule (bound met)")
    return None


def _warm_starts(s: _Solve) -> SolveResult | None:
    """2. Plain orders (only the given one for ``order="given"``): one within B is optimal
    for the compute objective. Else schedules within B from the greedy and the local
    search; without a cap the internal cap is raised to hold the best one."""
    g = s.graph
    s.say("warm start", "plain orders")
    if s.given:
        cands = [(given_peak(g), g.given_order(), "given")]
    else:
        cands = candidate_orders(g, time_budget=min(20.0, s.time_limit / 4),
                                 target=s.B if s.objective == "compute" else None)
    best_peak, best_order, best_name = cands[0]
    s.best_order = best_order
    s.params["warm_start"] = f"{best_name} order (peak {best_peak})"
    s.say("warm start", f"best plain order: {best_name}, peak {best_peak} B")
    s.hint = Schedule.from_order(g, best_order)
    if s.objective == "compute" and best_peak <= s.B:
        # every operator must run once: the baseline is a lower bound, and this order attains it
        return s.result(s.hint, status=Status.OPTIMAL, objective="compute", claimed=s.baseline,
                        lower_bound=s.baseline, message=f"the {best_name} order fits the budget without recomputation",
                        stop="a plain order fits the budget: no recomputation needed (bound met)")
    if s.objective != "compute":
        return None
    greedy_warm_start(g, s.B, s.caps if s.unbounded else s.ecaps, cands[:6], time_budget=min(20.0, s.time_limit / 5),
                      keep_order=g.given_order() if s.given else None, found=s.warm, t0=s.t0,
                      say=lambda text: s.say("warm start", text))
    ws = s.warm.best
    if ws is not None and s.unbounded:
        need = max(c - 1 for v, c in enumerate(evaluate(g, ws[1]).compute_counts)
                   if s.caps is None or s.caps[v] is None)
        if need > s.internal_cap:
            s.set_cap(min(need, MAX_CP_CAP))
            if check_caps(g, ws[1], s.ecaps) is not None:
                ws = s.warm.best = None
            s.params["internal_cap_raised"] = f"to {s.internal_cap} for the warm start"
    if ws is not None:
        s.first_s = ws[3]
        s.hint = ws[1]
        s.params["warm_start"] = f"{ws[2]} (compute {ws[0]:g})"
        if same_value(s.floor, ws[0], "compute"):  # the bound meets the incumbent: nothing to search
            return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                            extra={"time_to_best_s": round(ws[3], 3)},
                            message=f"the warm start ({ws[2]}) meets the compute lower bound",
                            stop="the warm start meets the lower bound (bound met)")
    elif s.warm.least is not None and s.warm.least[0] < best_peak:
        # nothing fits B: start phase 1 from the least peak found (recomputations included)
        s.hint = s.warm.least[1]
        s.params["warm_start"] = f"{s.warm.least[2]} (least peak {s.warm.least[0]}, over budget)"
    return None


def _first_schedule(s: _Solve) -> SolveResult | None:
    """3. Phase 1 when the hint exceeds B: least peak (capacity clipped at B), first with
    the best order of first computations fixed (small search), then free. A peak bound
    above B in a model that holds the whole class refutes the budget."""
    if s.fits(s.hint):
        if s.gmodel and str(s.params.get("warm_start", "")).startswith(("stage greedy", "peak-cutting")):
            _stage_phase(s, STAGE_SHARE_FITTING)  # the stage class's compute search improves it
        return None
    g = s.graph
    from memsched.solvers.remat.lowbudget import refute_low_budget  # docs/remat-low-budgets.md
    if _asks_unbounded_free(s):
        res = _decide_unbounded(s)
        if res is not None:
            return res
        why = None
    else:
        why = refute_low_budget(g, s.B, None if s.unbounded else s.caps, time_limit=min(10.0, 0.1 * s.left()))
    if why:
        # valid for the asked problem: without caps the search assumed any recomputation,
        # with caps it used the asked ones (lift_claims keeps it even when cp's class is narrower)
        s.params["refutes_asked_problem"] = True
        return s.infeasible(why, proof="local", stop="proved infeasible by the backward reachability search")
    if s.gmodel:
        first = _cut_loop_fits(s)
        res = _relaxation_refutation(s, RELAX_REFUTE_SHARE_BEFORE_CUTS if first else RELAX_REFUTE_SHARE)
        if res is not None:
            return res
        if first:
            res = _cut_loop_first(s)
            if res is not None:
                return res
            if s.fits(s.hint):
                _stage_phase(s, STAGE_SHARE_FITTING)  # the stage class's compute search improves it
                return None
        _stage_phase(s)
        if s.fits(s.hint):
            return None
    res = _exhaustive(s)  # after the given-order provers, which decide most of these rows sooner
    if res is not None or s.fits(s.hint):
        return res
    phases = ((("phase 1 (given order)", g.given_order(), 0.95),) if s.gmodel else
              (("phase 1a (fixed order)", s.best_order, 0.3), ("phase 1b (free order)", None, 0.95)))
    for label, fix, share in phases:
        complete = fix is None or s.gmodel  # this phase's model is the whole class
        remaining = s.left()
        cp1 = s.build(None, "peak", fix_order=fix)
        cap_units = max(0, (s.B - cp1.const_bytes) // cp1.mem_unit)
        cp1.model.Add(cp1.capacity >= cap_units)
        cp1.hint(s.hint)
        t_p = time.perf_counter()
        st, sol, bound, wall, log = run_cpsat(cp1, remaining * share, s.seed, s.workers, s.progress, label, s.t0)
        s.params["phase1_s"] = round(s.params.get("phase1_s", 0) + wall, 3)
        if sol is not None and sol[1] <= cap_units:
            s.first_s = t_p - s.t0 + next((e["t"] for e in log if e["objective"] <= cap_units), wall)
            s.params["phase1"] = label
            s.hint = sol[0]
            return None
        if sol is not None and evaluate(g, sol[0]).peak < evaluate(g, s.hint).peak:
            s.hint = sol[0]  # least peak so far: a better start for the next try
        peak_lb_over = sol is not None and bound is not None and math.ceil(bound - 1e-9) > cap_units
        if complete and (st == "infeasible" or (st == "optimal" and sol is not None) or peak_lb_over):
            lbp = None if sol is None else (sol[1] if st == "optimal" else math.ceil(bound - 1e-9)) \
                * cp1.mem_unit + cp1.const_bytes
            why = (f"CP-SAT proves no schedule with at most {max(s.ecaps)} recomputation(s) per operator"
                   + (" and first computations in the given order" if s.given else "")
                   + f" fits budget {s.B}" + (f" (least peak {'' if st == 'optimal' else '>= '}{lbp})" if lbp else ""))
            return s.infeasible(why, stop="proved infeasible: CP-SAT's least-peak bound exceeds the budget")
    why = "interrupted" if INTERRUPTED.is_set() else f"time limit ({s.time_limit:g} s) reached"
    return s.result(None, status=Status.TIMEOUT, objective=s.objective, lower_bound=s.floor, stop=why,
                    message=f"no schedule within budget {s.B} found in {s.elapsed():.1f} s"
                            + f" (least peak found {evaluate(g, s.hint).peak})")


# _decide_unbounded's time: this share of the time left, at most UNBOUNDED_MAX_S seconds (random_layered
# n100 at 0.6 needs about 5 s; n250 at 0.6 about 360 s, out of reach within a minute)
UNBOUNDED_SHARE = 0.2
UNBOUNDED_MAX_S = 20.0
# then its schedule's recomputations are dropped where the budget allows, for this share of the time
# left, at most UNBOUNDED_DROP_MAX_S (random_layered n100 at 0.6: four passes in 0.1 s, compute
# 2,011,634 -> 373,966)
UNBOUNDED_DROP_SHARE = 0.1
UNBOUNDED_DROP_MAX_S = 5.0


def _asks_unbounded_free(s: _Solve) -> bool:
    """Every operator without a cap, free order, compute objective (and ``UNBOUNDED_SHARE`` > 0;
    0 gives the driver before ``_decide_unbounded``: ``refute_low_budget`` only)."""
    return (UNBOUNDED_SHARE > 0 and s.objective == "compute" and not s.given
            and (s.caps is None or all(c is None for c in s.caps)))


def _decide_unbounded(s: _Solve) -> SolveResult | None:
    """3'. No schedule within B after the warm starts, every operator without a cap, free order:
    the exhaustive backward reachability search (``lowbudget.decide_unbounded``; its proof and
    emission in docs/remat-low-budgets.md, section 3). "infeasible" refutes B for every schedule
    (any recomputation); "feasible" comes with a schedule within B that rebuilds each operator's
    inputs from scratch, far too many computations for the model's internal cap to hold: its dead
    computations are dropped (``drop_dead_computations``, the peak never rises), then the
    recomputations it can do without within B (``drop_recomputations``), it is re-judged,
    and it is kept in ``s.carry`` as the fallback ``solve_cp`` returns if the model finds no schedule
    within B. Runs once per solve (the internal cap's rounds share ``s.carry``)."""
    from memsched.solvers.remat.local_search import (drop_dead_computations, drop_recomputations,
                                                     schedule_from_sequence)
    from memsched.solvers.remat.lowbudget import decide_unbounded

    g = s.graph
    if "unbounded" not in s.carry:
        if INTERRUPTED.is_set() or s.left() < 1.0:
            return None
        s.say("bounds", "exhaustive backward reachability search (any recomputation)")
        low = decide_unbounded(g, s.B, time_limit=min(UNBOUNDED_MAX_S, UNBOUNDED_SHARE * s.left()))
        s.carry["unbounded"] = low
        if low.status == "feasible":
            sched = low.schedule
            if evaluate(g, sched).peak > s.B:
                raise SolverDisagreement(f"remat-cp: the reachability search's schedule peaks above the budget {s.B}")
            seq = drop_dead_computations(g, list(sched.computes()))
            deadline = time.perf_counter() + min(UNBOUNDED_DROP_MAX_S, UNBOUNDED_DROP_SHARE * s.left())
            while time.perf_counter() < deadline:  # dropping repeats can leave computations dead, and back
                nxt = drop_dead_computations(g, drop_recomputations(g, seq, s.B, deadline=deadline))
                if len(nxt) == len(seq):
                    break
                seq = nxt
            pruned = schedule_from_sequence(g, seq)
            if evaluate(g, pruned).peak <= s.B:  # it never rises; the evaluator has the last word
                sched = pruned
            s.carry["fallback"] = sched
            s.carry["fallback_s"] = round(s.elapsed(), 3)
        s.say("bounds", f"reachability search: {low.status} ({low.wall_s:.1f} s)"
              + (f", a schedule of compute {evaluate(g, s.carry['fallback']).compute:g} within the budget"
                 if low.status == "feasible" else ""))
    low = s.carry["unbounded"]
    s.params["reachability_search"] = {"status": low.status, "s": round(low.wall_s, 3), **low.stats}
    if low.status == "infeasible":
        s.params["refutes_asked_problem"] = True
        return s.infeasible(low.reason, proof="local", stop="proved infeasible by the backward reachability search")
    return None


def _polish(s: _Solve) -> None:
    """4a. Ruin and recreate (solvers/remat/sequence_lns.py) from the hint within the budget, for
    POLISH_SHARE of the time left, in the given-order class, after the provers (relaxations,
    witness search) have not closed the row: a cheaper schedule within the effective caps becomes
    the hint (the first computations keep their order, so the hint stays in its class). Measured
    (docs/remat.md, "Ruin and recreate in the given-order driver"): it lowers the stage class's
    schedule on random_layered n250 at 0.8; in free order CP-SAT's own search did as well."""
    from memsched.solvers.remat.local_search import schedule_from_sequence
    from memsched.solvers.remat.sequence_lns import ruin_and_recreate

    g = s.graph
    if not s.fits(s.hint) or len(s.hint.computes()) == s.n or s.left() <= 1.0:
        return
    seq0 = list(s.hint.computes())
    sched0 = schedule_from_sequence(g, seq0)  # each copy freed after its last reader: never above the hint
    if evaluate(g, sched0).peak > s.B or check_caps(g, sched0, s.ecaps) is not None:
        return
    before = evaluate(g, s.hint).compute
    s.say("polish", f"ruin and recreate from compute {before:g} for at most {POLISH_SHARE * s.left():.1f} s")
    seq, stats = ruin_and_recreate(g, s.B, seq0, caps=s.ecaps, deadline=time.perf_counter() + POLISH_SHARE * s.left(),
                                   seed=s.seed, progress=lambda text: s.say("polish", text))
    if stats.get("interrupted"):
        INTERRUPTED.set()
    best_at = stats.pop("best_at")
    s.params["ruin_and_recreate"] = stats
    sched = schedule_from_sequence(g, seq)
    firsts = list(dict.fromkeys(seq))
    if firsts != list(dict.fromkeys(seq0)):
        raise SolverDisagreement("ruin and recreate changed the order of first computations")
    if s.fits(sched) and check_caps(g, sched, s.ecaps) is None and evaluate(g, sched).compute < before - 1e-9:
        s.hint = sched
        s.hint_time = (best_at or time.perf_counter()) - s.t0


def _loop_reports(s: _Solve) -> dict:
    """``progress`` and ``on_bound`` for ``given_relaxation_with_cuts``: each round as a progress
    line, each proven bound kept as the solve's floor (it holds if a later round is interrupted)."""
    return {"progress": lambda e: s.say("bounds", f"stage cuts, round {e[0]}: {e[1]} ({e[2]:.1f} s)"),
            "on_bound": lambda extra: setattr(s, "floor", max(s.floor, s.baseline + extra))}


def _cut_loop_fits(s: _Solve) -> bool:
    """Whether ``_cut_loop_first`` runs: caps of at most 1 and the expanded relaxation in its build share."""
    return (CUT_LOOP_FIRST and STAGE_CUTS and s.gmodel and not s.unbounded and all(c <= 1 for c in s.ecaps)
            and _expanded_relaxation_fits(s))


def _cut_loop_first(s: _Solve) -> SolveResult | None:
    """3a''. Given-order class, caps of at most 1, integer costs, no schedule within B after the
    warm starts, and the expanded relaxation within its build share: the relaxation with stage
    no-good cuts (``stage_cuts.given_relaxation_with_cuts``, no known schedule, ``RELAX_SHARE`` of
    the time left) before the refutation test and the stage-class phase, since it answers all
    three questions: "infeasible" refutes B for the class, "optimal" is the class optimum with
    its schedule, and otherwise its bound holds and any schedule it met (a round's solution or
    another incumbent whose stages all run) becomes the hint (docs/remat.md, "The cut loop
    before the first schedule"). The later relaxation phase (``_given_relaxation``) is then not
    run again."""
    if not _cut_loop_fits(s) or INTERRUPTED.is_set() or s.left() < 2.0:
        return None
    from memsched.solvers.remat.stage_cuts import given_relaxation_with_cuts

    t = time.perf_counter()
    s.say("bounds", "given-order stage relaxation with stage no-good cuts (expanded form, before a schedule)")
    out = given_relaxation_with_cuts(s.graph, s.B, s.ecaps, hint=s.hint, time_limit=RELAX_SHARE * s.left(),
                                     workers=s.workers, seed=s.seed, build_limit=RELAX_BUILD_SHARE * s.left(),
                                     **_loop_reports(s))
    s.params["given_relaxation"] = {"extra": out.extra, "complete": out.status in ("optimal", "infeasible"),
                                    "s": round(time.perf_counter() - t, 3),
                                    "form": "expanded, stage cuts, before a schedule",
                                    "checks": [[float(e[0]), e[1], e[2]] for e in out.log],
                                    "stage_cuts": {"rounds": out.rounds, "cuts": out.cuts, "status": out.status}}
    if out.status == "infeasible":
        return s.infeasible(f"the given-order stage relaxation with stage no-good cuts has no solution: no schedule "
                            f"whose first computations follow the given order, with at most {max(s.ecaps)} "
                            f"recomputation(s) per operator, fits budget {s.B} (docs/remat.md, \"Stage no-good cuts\")",
                            stop="proved infeasible: the given-order stage relaxation with stage cuts has no solution")
    s.floor = max(s.floor, s.baseline + out.extra)
    if out.schedule is not None and s.fits(out.schedule):
        s.hint = out.schedule
        s.hint_time = s.first_s = s.elapsed()
        s.params["phase1"] = "the relaxation with stage cuts"
        s.params["given_relaxation"]["schedule"] = True
        if out.status == "optimal" or same_value(s.floor, evaluate(s.graph, s.hint).compute, "compute"):
            s.floor = max(s.floor, evaluate(s.graph, s.hint).compute)
            return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                            extra={"time_to_best_s": round(s.hint_time, 3)},
                            message="the given-order stage relaxation with stage cuts meets its schedule (docs/remat.md)",
                            stop="the given-order stage relaxation with stage cuts: every stage of an optimal "
                                 "solution runs (bound met)")
    return None


def _relaxation_refutation(s: _Solve, share: float = RELAX_REFUTE_SHARE) -> SolveResult | None:
    """3a'. Given-order class, finite caps, no schedule within B after the warm starts: the
    given-order stage relaxation as a feasibility test (compact form, ``RELAX_REFUTE_SHARE`` of
    the time left). No solution refutes B for every schedule of the class with the caps
    (docs/remat.md, "Given-order stage relaxation"); otherwise nothing is claimed and the
    search goes on."""
    from memsched.solvers.remat.proofs import given_relaxation_refutes

    if s.unbounded or INTERRUPTED.is_set() or s.left() < 2.0:
        return None
    t = time.perf_counter()
    share = share * s.left()
    size = _relax_size(s)
    if size["compact_terms"] > RELAX_TERMS_PER_S * share / 2:
        s.params["relaxation_refutation"] = {"skipped": f"{size['compact_terms']} terms (compact form): too large "
                                                        f"to build in {share / 2:.1f} s"}
        return None
    s.say("bounds", "given-order stage relaxation, feasibility at the budget (compact form)")
    refuted, checks = given_relaxation_refutes(s.graph, s.B, s.ecaps, time_limit=share, workers=s.workers,
                                               seed=s.seed)
    s.params["relaxation_refutation"] = {"refuted": refuted, "s": round(time.perf_counter() - t, 3),
                                         "checks": [list(c) for c in checks]}
    if refuted:
        return s.infeasible(f"the given-order stage relaxation has no solution: no schedule whose first computations "
                            f"follow the given order, with at most {max(s.ecaps)} recomputation(s) per operator, "
                            f"fits budget {s.B} (docs/remat.md, \"Given-order stage relaxation\")",
                            stop="proved infeasible: the given-order stage relaxation has no solution")
    return None


def _stage_phase(s: _Solve, share: float = None) -> None:
    """3a. Given-order class, no schedule within B yet: search the stage class
    (solvers/remat/stage_class.py; ``STAGE_SHARE`` of the time left), first for the least
    peak clipped at B, then for least compute. A stage-class schedule within B is a schedule
    of the given-order class: it becomes the hint. The stage searches' verdicts are about the
    narrower stage class only and are recorded as such in ``params["stage_class"]``, never
    as the result's status or bound."""
    from memsched.solvers.remat.stage_class import run_stage_phase

    share = STAGE_SHARE if share is None else share
    if INTERRUPTED.is_set() or s.left() < 2.0 or share <= 0:
        return
    ph = run_stage_phase(s.graph, s.B, s.ecaps, s.hint, share * s.left(), run=run_cpsat, seed=s.seed,
                         workers=s.workers, progress=s.progress, clock0=s.t0)
    rec = ph.record()
    if ph.schedule is not None and s.fits(ph.schedule):
        rec["compute"] = evaluate(s.graph, ph.schedule).compute
        if not s.fits(s.hint) or rec["compute"] < evaluate(s.graph, s.hint).compute - 1e-9:
            s.hint = ph.schedule
            s.hint_time = ph.best_s if ph.best_s is not None else ph.first_s
            s.params["phase1"] = "phase 1s (stage class)"
        if s.first_s is None:
            s.first_s = ph.first_s
        s.say("warm start", f"stage class: compute {rec['compute']:.6g} within budget {s.B} B")
    elif ph.least is not None and evaluate(s.graph, ph.least).peak < evaluate(s.graph, s.hint).peak:
        s.hint = ph.least
    s.params["stage_class"] = rec


def _relax_size(s: _Solve) -> dict:
    """``given_relaxation_size`` of the solve's graph and caps, computed once."""
    from memsched.formulations.remat_given_relax import given_relaxation_size

    if s._relax_sizes is None:
        s._relax_sizes = given_relaxation_size(s.graph, s.ecaps)
    return s._relax_sizes


def _expanded_relaxation_fits(s: _Solve) -> bool:
    """Whether ``_given_relaxation`` would build the expanded form now (finite caps, integer
    costs, its terms within the build share's rate)."""
    if s.unbounded or not all(float(c).is_integer() for c in s.graph.cost):
        return False
    return _relax_size(s)["terms"] <= RELAX_TERMS_PER_S * RELAX_BUILD_SHARE * s.left()


def _given_relaxation(s: _Solve) -> SolveResult | None:
    """3b. Given-order class, finite caps, integer costs: the stage relaxation's bound
    (``proofs.given_relaxation_bound``, ``RELAX_SHARE`` of the time left) as an objective
    floor; the hint is returned as optimal when the floor meets it."""
    g = s.graph
    if not s.gmodel or s.unbounded or INTERRUPTED.is_set() or not all(float(c).is_integer() for c in g.cost):
        return None
    if "given_relaxation" in s.params:  # already run before the first schedule (_cut_loop_first)
        return None
    from memsched.solvers.remat.proofs import given_relaxation_bound

    t = time.perf_counter()
    size = _relax_size(s)
    room = RELAX_TERMS_PER_S * RELAX_BUILD_SHARE * s.left()
    compact = size["terms"] > room  # the expanded form is the faster prover where it builds in time
    window = None
    r_room = RELAX_COMPACT_R_PER_S * RELAX_SHARE * s.left()
    if compact and (size["compact_terms"] > room or size["R"] > r_room):
        why = (f"{size['terms']} terms, too large to build in {RELAX_BUILD_SHARE * s.left():.1f} s; compact form: "
               f"{size['compact_terms']} terms, {size['R']} recomputation literals, too many for "
               f"{RELAX_SHARE * s.left():.1f} s")
        window = _tail_window(s, size, room, r_room)
        if window is None:
            s.params["given_relaxation"] = {"skipped": why, "extra": 0.0, "complete": False,
                                            "s": round(time.perf_counter() - t, 3)}
            return None
    upto = evaluate(g, s.hint).compute - s.baseline
    form = ("compact" if compact else "expanded") + ("" if window is None else f", stages {window[0]}..{window[1]}")
    s.say("bounds", f"given-order stage relaxation ({form})")
    if STAGE_CUTS and window is None and (STAGE_CUTS_COMPACT or not compact) and all(c <= 1 for c in s.ecaps):
        form += ", stage cuts"
        s.say("bounds", "with stage no-good cuts (cap 1; docs/remat.md, \"Stage no-good cuts\")")
        rb, cuts = _relaxation_with_cuts(s, upto, compact)
    else:
        rb, cuts = given_relaxation_bound(g, s.B, s.ecaps, upto=upto, hint=s.hint, time_limit=RELAX_SHARE * s.left(),
                                          workers=s.workers, seed=s.seed, build_limit=RELAX_BUILD_SHARE * s.left(),
                                          compact=compact, window=window), None
    s.params["given_relaxation"] = {"extra": rb.extra, "complete": rb.complete, "s": round(time.perf_counter() - t, 3),
                                    "form": form, "checks": [list(c) for c in rb.checks]}
    if cuts is not None:
        s.params["given_relaxation"]["stage_cuts"] = {"rounds": cuts.rounds, "cuts": cuts.cuts, "status": cuts.status}
    if window is not None:
        s.params["given_relaxation"]["whole"] = why
    s.floor = max(s.floor, rb.lower_bound)
    if rb.schedule is not None and s.fits(rb.schedule) and \
            evaluate(g, rb.schedule).compute < evaluate(g, s.hint).compute - 1e-9:
        s.hint = rb.schedule  # the relaxation's solution, run stage by stage, is a schedule within B
        s.hint_time = s.elapsed()
        s.params["given_relaxation"]["schedule"] = True
    if same_value(s.floor, evaluate(g, s.hint).compute, "compute"):
        return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                        extra={"time_to_best_s": round(s.hint_time, 3)},
                        message="the given-order stage relaxation" + (" with stage cuts" if cuts is not None else "")
                        + " meets the schedule (docs/remat.md)",
                        stop="the given-order stage relaxation's bound meets the schedule (bound met)")
    return None


def _relaxation_with_cuts(s: _Solve, upto: float, compact: bool = False):
    """The relaxation (``compact``: its compact form) solved with stage no-good cuts (``stage_cuts.
    given_relaxation_with_cuts``, caps of at most 1), only for solutions cheaper than the hint
    (extra compute ``upto``); returned as a ``ThresholdBound`` (a schedule when one was found)
    and the loop's outcome. "below-optimal" (nothing cheaper than the hint) proves the hint's
    compute as the bound; "optimal" the schedule found."""
    from memsched.solvers.remat.proofs import ThresholdBound
    from memsched.solvers.remat.stage_cuts import given_relaxation_with_cuts

    out = given_relaxation_with_cuts(s.graph, s.B, s.ecaps, below=upto, hint=s.hint, time_limit=RELAX_SHARE * s.left(),
                                     workers=s.workers, seed=s.seed, build_limit=RELAX_BUILD_SHARE * s.left(),
                                     compact=compact, **_loop_reports(s))
    rb = ThresholdBound(baseline=s.baseline, extra=out.extra, complete=out.status != "bound", schedule=out.schedule)
    rb.checks = [[float(e[0]), e[1], e[2]] for e in out.log]
    if out.status == "infeasible":  # only without a hint, which this driver always has
        rb.infeasible = True
    return rb, out


def _tail_window(s: _Solve, size: dict, room: float, r_room: float) -> tuple[int, int] | None:
    """The stages ``(a, n)`` of the compact relaxation's tail window (docs/remat.md, "Windows of
    stages") for a graph whose whole relaxation is too large for its share: ``a`` is the later of
    the first stage whose first computation, in the given order without recomputation, exceeds
    the budget (where the memory first forces something) and the first stage whose tail fits the
    share (``r_room`` recomputation literals, ``room`` terms). None when that window has no
    recomputation literal. O(n + events)."""
    g, n = s.graph, s.graph.n_ops
    sched = Schedule.from_order(g, g.given_order())
    ev = evaluate(g, sched)
    k, first_over = 0, n
    for e, (kind, _x) in enumerate(sched.events):
        if kind == COMPUTE:
            if ev.timeline[e] > s.B:
                first_over = k
                break
            k += 1
    rec, terms = size["R_by_stage"], size["compact_terms_by_stage"]
    a, r_sum, t_sum = n + 1, 0, 0
    while a > first_over and r_sum + rec[a - 1] <= r_room and t_sum + terms[a - 1] <= room:
        a -= 1
        r_sum, t_sum = r_sum + rec[a], t_sum + terms[a]
    return (a, n) if a <= n and r_sum else None


def _free_relaxation(s: _Solve) -> SolveResult | None:
    """3c. Free order with several topological orders, finite caps, integer costs: the
    free-order stage relaxation's bound (``proofs.free_relaxation_bound``, over the down-set
    lattice; ``FREE_RELAX_SHARE`` of the time left; refused at once on graphs with too many
    down-sets) as an objective floor valid for every order; its solution, run stage by stage,
    may replace the hint; the hint is returned as optimal when the floor meets it."""
    g = s.graph
    if s.gmodel or s.unbounded or INTERRUPTED.is_set() or not all(float(c).is_integer() for c in g.cost):
        return None
    from memsched.solvers.remat.proofs import free_relaxation_bound

    t = time.perf_counter()
    upto = evaluate(g, s.hint).compute - s.baseline
    s.say("bounds", "free-order stage relaxation (down-set lattice)")
    rb = free_relaxation_bound(g, s.B, s.ecaps, upto=upto, hint=s.hint, time_limit=FREE_RELAX_SHARE * s.left(),
                               workers=s.workers, seed=s.seed)
    s.params["free_relaxation"] = {"extra": rb.extra, "complete": rb.complete, "s": round(time.perf_counter() - t, 3),
                                   "checks": [list(c) for c in rb.checks]}
    s.floor = max(s.floor, rb.lower_bound)
    if rb.schedule is not None and s.fits(rb.schedule) and \
            evaluate(g, rb.schedule).compute < evaluate(g, s.hint).compute - 1e-9:
        s.hint = rb.schedule
        s.hint_time = s.elapsed()
        s.params["free_relaxation"]["schedule"] = True
    s.say("bounds", f"compute {evaluate(g, s.hint).compute:.6g}  bound compute {s.floor:.6g} "
                    "(after the free-order stage relaxation)")
    if same_value(s.floor, evaluate(g, s.hint).compute, "compute"):
        return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                        extra={"time_to_best_s": round(s.hint_time, 3)},
                        message="the free-order stage relaxation meets the schedule (docs/remat.md)",
                        stop="the free-order stage relaxation's bound meets the schedule (bound met)")
    return None


#: share of the time left for the search restricted to the covering program's operators
WITNESS_SHARE = 0.2


def _witness_search(s: _Solve) -> SolveResult | None:
    """4'. A schedule search where only the operators the moment-cut covering program runs
    twice (``s.witness``, its optimal solution) may run again: the slot model with the
    other caps set to 0 and first computations in the given order, with the floor as the
    objective's lower end, for ``WITNESS_SHARE`` of the time left in all. Its schedules are
    schedules of the asked problem (narrower caps, the given order is one of every class),
    so a cheaper one becomes the hint, and one whose compute meets the floor is optimal
    for the asked problem (the floor is). Its own model's optimum is never claimed.

    In the given-order class (``s.gmodel``) a restricted search proven infeasible is itself
    a proof: no schedule of the class within B runs again only operators of the witness W.
    The covering program is then solved again with the row "some operator outside W runs
    twice" (``cut_cover_bound(..., nogoods=...)``), which raises the floor or gives the next
    witness, until a search finds a schedule, one is not decided, or the time is up
    (docs/remat.md, "Witness search")."""
    from memsched.formulations.remat_cpsat import BuildStopped
    from memsched.solvers.remat.cut_bound import cut_cover_bound

    g = s.graph
    if (s.unbounded or not s.witness or INTERRUPTED.is_set() or s.left() < 4.0 or WITNESS_SHARE <= 0
            or not s.fits(s.hint)):
        return None
    t = time.perf_counter()
    deadline = t + WITNESS_SHARE * s.left()
    rec = {"rounds": 0}
    s.params["witness_search"] = rec
    nogoods: list = []
    wit = s.witness
    while wit and not INTERRUPTED.is_set() and deadline - time.perf_counter() > 0.5:
        hint_c = evaluate(g, s.hint).compute
        if same_value(s.floor, hint_c, "compute"):
            break
        wset = set(wit)
        caps = [c if v in wset else 0 for v, c in enumerate(s.ecaps)]
        if rec["rounds"] == 0:
            s.say("warm start", f"search recomputing only the {len(wset)} operators of the covering program's solution")
        try:  # Ctrl-C during the build (about 1 s on ResNet50-train) stops it at once
            cpw = s.build(s.B, "compute", fix_order=g.given_order(), caps=caps, stop=INTERRUPTED.is_set)
        except BuildStopped:
            break
        _add_floor(cpw, s.floor)
        t_r = time.perf_counter()
        st, sol, _b, wall, log = run_cpsat(cpw, max(0.1, deadline - time.perf_counter()), s.seed, s.workers,
                                           s.progress, "witness search", s.t0)
        rec.update(rounds=rec["rounds"] + 1, operators=len(wset), status=st)
        if sol is not None:
            ev = evaluate(g, sol[0])
            rec["compute"] = ev.compute
            if ev.peak <= s.B and ev.compute < hint_c - 1e-9:
                s.hint = sol[0]
                s.hint_time = (t_r - s.t0) + next((e["t"] for e in log if e["objective"] <= sol[1] + 1e-9), wall)
            break
        if st != "infeasible" or not s.gmodel or INTERRUPTED.is_set():
            break
        # proven: every schedule of the class within B runs again some operator outside W
        nogoods.append(wset)
        cb = cut_cover_bound(g, s.B, s.ecaps, "given", time_limit=max(0.1, deadline - time.perf_counter()),
                             upto=hint_c - s.baseline, workers=s.workers, seed=s.seed, nogoods=nogoods)
        rec["excluded"] = len(nogoods)
        if cb.infeasible:  # the hint is a schedule of the class within B: a bug somewhere
            raise SolverDisagreement(f"witness search: {cb.reason}, though a schedule of the class fits")
        s.floor = max(s.floor, cb.lower_bound)
        rec["floor"] = s.floor
        wit = cb.witness
    rec["s"] = round(time.perf_counter() - t, 3)
    if same_value(s.floor, evaluate(g, s.hint).compute, "compute"):
        if rec["rounds"] == 0:
            msg, stop = "the lower bound meets the schedule", "the lower bound meets the schedule (bound met)"
        elif "compute" in rec:
            msg = "a schedule recomputing the covering program's operators meets the lower bound"
            stop = "the witness search's schedule meets the lower bound (bound met)"
        else:
            msg = (f"the covering bound, with {len(nogoods)} witness searches proven infeasible, meets the schedule "
                   f"(docs/remat.md, \"Witness search\")")
            stop = "the covering bound with the witness searches' exclusions meets the schedule (bound met)"
        return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                        extra={"time_to_best_s": round(s.hint_time, 3)}, message=msg, stop=stop)
    return None


def _given_order_slice(s: _Solve) -> None:
    """4. Phase 2a (free order only, > 6 s left): the given-order model (Moccasin's space,
    a much smaller search) for ``FIXED_ORDER_SHARE`` of the time left; its schedule, if
    cheaper, hints the free model; its bound is not reported (valid for its class only)."""
    remaining = s.left()
    if remaining <= 6.0 or FIXED_ORDER_SHARE <= 0 or s.gmodel:
        return
    cpf = s.build(s.B, "compute", fix_order=s.graph.given_order())
    cpf.hint(s.hint)
    t_f = time.perf_counter()
    st_f, sol_f, _bf, wall_f, log_f = run_cpsat(cpf, remaining * FIXED_ORDER_SHARE, s.seed, s.workers, s.progress,
                                                "phase 2 (given order fixed)", s.t0)
    s.params["fixed_order_s"] = round(time.perf_counter() - t_f, 3)
    s.params["fixed_order_status"] = st_f
    if sol_f is not None:
        ev = evaluate(s.graph, sol_f[0])
        s.params["fixed_order_compute"] = ev.compute
        if ev.peak <= s.B and ev.compute < evaluate(s.graph, s.hint).compute - 1e-9:
            s.hint = sol_f[0]
            t_rel = next((e["t"] for e in log_f if e["objective"] <= sol_f[1] + 1e-9), wall_f)
            s.hint_time = (t_f - s.t0) + t_rel


def _first_slice(s: _Solve):
    """5a. A first slice (``PRESOLVE_SHARE`` of the time left) of the main model, before
    any bound is computed: easy instances end here. Returns (model, start, run_cpsat
    answer) when it proved optimality, else None (its bound raises the floor, its
    schedule the hint)."""
    remaining = s.left()
    if s.unbounded or remaining <= 4.0 or INTERRUPTED.is_set():
        return None
    cp0 = s.build(s.B, "compute")
    _add_floor(cp0, s.floor)
    cp0.hint(s.hint)
    t_p = time.perf_counter()
    pre = run_cpsat(cp0, PRESOLVE_SHARE * remaining, s.seed, s.workers, s.progress, "solve, first slice",
                    s.t0)
    s.params["first_slice"] = {"status": pre[0], "s": round(pre[3], 3)}
    if pre[0] == "optimal":
        return cp0, t_p, pre
    if pre[1] is not None:
        s.floor = max(s.floor, lb_compute(cp0, pre[2], s.floor))
        if evaluate(s.graph, pre[1][0]).compute < evaluate(s.graph, s.hint).compute - 1e-9:
            s.hint = pre[1][0]
            s.hint_time = (t_p - s.t0) + next((e["t"] for e in pre[4] if e["objective"] <= pre[1][1] + 1e-9), pre[3])
    return None


def _bounds(s: _Solve) -> SolveResult | None:
    """5b. The threshold and hitting-set bounds (``THRESHOLD_SHARE`` of the time left) as an
    objective floor; the warm start is returned as optimal when the floor meets it."""
    if INTERRUPTED.is_set():
        return None
    sched_box: list = []  # a schedule the hitting-set bound proved optimal
    s.floor = _threshold_floor(s, THRESHOLD_SHARE * s.left(), sched_box)
    g = s.graph
    if sched_box and s.fits(sched_box[0]) and evaluate(g, sched_box[0]).compute < evaluate(g, s.hint).compute:
        s.hint = sched_box[0]
        s.hint_time = s.elapsed()
    if same_value(s.floor, evaluate(g, s.hint).compute, "compute"):
        return s.result(s.hint, status=Status.OPTIMAL, objective="compute", lower_bound=s.floor,
                        extra={"time_to_best_s": round(s.hint_time, 3)},
                        message="the threshold bound meets the warm start (docs/remat.md)",
                        stop="the threshold bound meets the schedule (bound met)")
    return None


def _threshold_floor(s: _Solve, time_limit: float, sched_box: list) -> float:
    """max(floor, the threshold and hitting-set bounds of solvers/remat/proofs.py) for the
    model's class, climbing no higher than the hint's extra compute; the floor unchanged
    without finite caps."""
    if s.unbounded or time_limit < 0.2:
        return s.floor
    from memsched.solvers.remat.proofs import hitting_set_bound, threshold_bound

    t = time.perf_counter()
    upto = evaluate(s.graph, s.hint).compute - s.baseline
    cls = "given" if s.gmodel else "free"
    s.say("bounds", "threshold bound")
    tbd = threshold_bound(s.graph, s.B, s.ecaps, cls, upto=upto, time_limit=time_limit / 2, workers=s.workers,
                          seed=s.seed)
    s.params["threshold_bound"] = {"extra": tbd.extra, "complete": tbd.complete, "s": round(time.perf_counter() - t, 3),
                                   "checks": [list(c) for c in tbd.checks]}
    left = time_limit - (time.perf_counter() - t)
    if tbd.extra < upto and left > 0.2 and not INTERRUPTED.is_set():
        t = time.perf_counter()
        n0 = len(tbd.checks)
        s.say("bounds", f"hitting-set bound (threshold bound: compute >= {s.baseline + tbd.extra:.6g})")
        hbd = hitting_set_bound(s.graph, s.B, s.ecaps, cls, upto=upto, time_limit=left, workers=s.workers,
                                seed=s.seed, start=tbd)
        s.params["hitting_set_bound"] = {"extra": hbd.extra, "s": round(time.perf_counter() - t, 3),
                                         "checks": len(hbd.checks) - n0, "certificates": len(hbd.certificates)}
        if hbd.schedule is not None:
            sched_box.append(hbd.schedule)
        tbd = hbd
    return max(s.floor, tbd.lower_bound)


def _main_solve(s: _Solve, cp, done) -> SolveResult:
    """6. The main model with the rest of the time (or the first slice's proof)."""
    g = s.graph
    if done is None:
        if s.hint is not None:
            cp.hint(s.hint)
        t_s = time.perf_counter()
        st, sol, bound, wall, log = run_cpsat(cp, max(0.5, s.left()), s.seed, s.workers, s.progress, "solve", s.t0)
    else:
        _cp, t_s, (st, sol, bound, wall, log) = done
    extra = {"time_to_best_s": None, "solutions": log}
    why = _stop_words(st, s)
    if sol is None:
        if st == "infeasible":
            reason = (f"CP-SAT proves no schedule with at most {max(s.ecaps)} recomputation(s) per operator"
                      + (" and first computations in the given order" if s.given else "")
                      + (f" fits budget {s.B}" if s.objective == "compute" else f" has compute <= {s.limit_c:g}"))
            return s.infeasible(reason, stop=why)
        if s.objective == "compute" and s.fits(s.hint):
            extra["time_to_best_s"] = round(s.hint_time, 3)  # the solver found nothing better in time
            return s.result(s.hint, status=Status.FEASIBLE, objective="compute", lower_bound=s.floor, extra=extra,
                            message="the main search found nothing better in time; returning the best schedule "
                                    "of the earlier phases", stop=why)
        return s.result(None, status=Status.TIMEOUT, objective=s.objective, stop=why,
                        message=f"no solution found in {s.elapsed():.1f} s")
    sched, val = sol
    if log:
        # the first time the final objective value was reached; a value equal to the hint's is the hint's time
        t_rel = next((e["t"] for e in log if e["objective"] <= val + 1e-9), log[-1]["t"])
        extra["time_to_best_s"] = round((t_s - s.t0) + t_rel, 3)
        if s.objective == "compute" and s.hint_time is not None and s.fits(s.hint) \
                and evaluate(g, sched).compute >= evaluate(g, s.hint).compute - 1e-9:
            extra["time_to_best_s"] = round(s.hint_time, 3)
    if s.objective == "compute":
        claimed = sum(g.cost[i] for i in sched.computes())
        lb = lb_compute(cp, bound, s.floor)
        # certified in its class only when the bound meets the value (rounded costs may not)
        status = Status.OPTIMAL if lb is not None and same_value(lb, claimed, "compute") else Status.FEASIBLE
        s.params["model_status"] = st
        return s.result(sched, status=status, objective="compute", claimed=claimed, lower_bound=lb, extra=extra,
                        stop=why)
    peak_claim = val * cp.mem_unit + cp.const_bytes
    lb = None if bound is None else int(math.ceil(bound - 1e-9)) * cp.mem_unit + cp.const_bytes
    res = s.result(sched, status=Status.OPTIMAL if st == "optimal" else Status.FEASIBLE, objective="peak",
                   claimed=peak_claim if st == "optimal" else None, lower_bound=lb, extra=extra, stop=why)
    if res.peak > peak_claim:
        raise SolverDisagreement(f"{SOLVER}: decoded schedule peak {res.peak} exceeds the model's peak {peak_claim}")
    return res


def _stop_words(st: str, s: _Solve) -> str:
    """Why the main search ended, in words."""
    if INTERRUPTED.is_set():
        return "interrupted"
    if st == "optimal":
        return "CP-SAT proved its bound meets the schedule (bound met)"
    if st == "infeasible":
        return "CP-SAT proved the model infeasible"
    return f"time limit ({s.time_limit:g} s) reached"


# ------------------------------------------------------------------ CP-SAT
def _add_floor(cp, floor):
    """The objective floor as the lower end of the objective's domain (integer costs only:
    scaled costs are rounded): a variable equal to the objective, with that floor, is
    minimized instead, so that CP-SAT's bound starts at the floor and a schedule that meets
    it ends the search as optimal (a mere constraint on the sum did not raise its bound)."""
    if cp.objective == "compute" and cp.cost_div < 0 and floor is not None:
        lo = int(math.ceil(floor / -cp.cost_div - 1e-9))
        hi = sum(cp.icost[v] * cp.K[v] for v in range(len(cp.K)))
        objv = cp.model.NewIntVar(lo, max(lo, hi), "objective")
        cp.model.Add(objv == cp.objective_expr)
        cp.model.Minimize(objv)


def lb_compute(cp, bound, baseline):
    """The CP-SAT objective bound in cost units, valid for the model's class. With costs
    scaled by 10**6 and rounded, each of the at most ``cp.T`` computations may have lost
    up to half a unit, so the bound is lowered by that much."""
    if bound is None:
        return baseline
    div = cp.cost_div
    if div < 0:
        val = float(bound * -div)
    else:
        exact = all(float(c * div).is_integer() for c in cp.graph.cost)
        val = float(bound if exact else bound - 0.5 * cp.T) / div
    return max(baseline, val)


def cp_units(cp, v) -> str:
    """A CP-SAT objective value in the result's units: peak bytes, or compute."""
    if cp.objective == "peak":
        return f"peak {int(round(v)) * cp.mem_unit + cp.const_bytes} B"
    c = v * -cp.cost_div if cp.cost_div < 0 else v / cp.cost_div
    return f"compute {c:.6g}"


def run_cpsat(cp, time_limit, seed, workers, progress, label, clock0=None):
    """Solve a built remat model through the one CP-SAT runner.

    Returns
    -------
    (status, (schedule, objective value) or None, bound, wall seconds, solution log)
        ``status`` is CP-SAT's verdict about the model; the log lists (time, objective)
        of every incumbent (seconds from this search's start). Ctrl-C stops the search,
        keeps its incumbent and sets :data:`INTERRUPTED`, which later phases check (they
        then run no search). With ``progress``, a line at the start and one per incumbent
        on stderr, in the result's units, timed from ``clock0`` (default: this search's start).

    Raises
    ------
    MemschedError
        CP-SAT rejects the model (numbers too large for 64-bit integers).
    """
    from ortools.sat.python import cp_model

    log: list[dict] = []
    t0 = time.perf_counter()
    c0 = t0 if clock0 is None else clock0

    class CB(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            t = time.perf_counter() - t0
            log.append({"t": round(t, 3), "objective": self.ObjectiveValue()})
            if progress:  # in the result's units (bytes or compute), not CP-SAT's scaled integers
                print(f"  [{label}] {time.perf_counter() - c0:7.2f}s  {cp_units(cp, self.ObjectiveValue())}  "
                      f"bound {cp_units(cp, self.BestObjectiveBound())}", file=sys.stderr, flush=True)

    if INTERRUPTED.is_set():  # Ctrl-C in an earlier phase: run no further search
        return "unknown", None, None, 0.0, log
    if progress:
        print(f"  [{label}] {t0 - c0:7.2f}s  CP-SAT search for at most {max(0.1, float(time_limit)):.1f} s",
              file=sys.stderr, flush=True)
    run = solve_cpsat(cp.model, time_limit=max(0.1, float(time_limit)), workers=workers, seed=seed, callback=CB(),
                      name=f"remat-{label}")
    if run.interrupted:
        INTERRUPTED.set()
    solver, name, wall = run.solver, run.status, time.perf_counter() - t0
    if name == "invalid":
        raise MemschedError("remat cp: CP-SAT rejects the model for this graph (numbers too large for 64-bit "
                            "integers?): " + cp.model.Validate())
    if name in ("optimal", "feasible"):
        sched = cp.decode(solver.Value, solver.BooleanValue)
        val = solver.Value(cp.capacity) if cp.objective == "peak" else solver.ObjectiveValue()
        return name, (sched, val), solver.BestObjectiveBound(), wall, log
    return name, None, None, wall, log
