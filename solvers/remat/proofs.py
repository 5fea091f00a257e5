"""Lower bounds on rematerialization compute that rise above the no-recompute baseline.

Threshold bound (docs/remat.md, "Threshold bound"). For a budget B, finite caps and a
class of schedules (free order, or first computations in the given order), let
``A(t)`` be the operators allowed to run again whose cost is below ``t``. If no
schedule of the class fits B when only the operators of ``A(t)`` may run more than once
(each within its cap), then every schedule of the class that fits B runs some operator of
cost >= t at least twice, so its compute is at least ``baseline + t``. The bound is
``baseline + t*`` for the largest threshold ``t*`` (a distinct positive operator cost, or
the least one) whose restricted problem is proven infeasible.

A restricted problem is proven infeasible by facts that need no search (the initial
memory and each operator's own need; with no operator allowed to run again, the
ordering lower bound (free order) or the given order's peak (given order)) or by the
CP-SAT model of the class with the restricted caps (formulations/remat_cpsat.py; with
finite caps that model holds every schedule of the class, so CP-SAT's "infeasible" is a
proof). Checks that time out prove nothing and stop the climb.

Only with finite caps: without a cap the restricted problem would need an unbounded
model, and a capped one proves nothing about it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Schedule
from memsched.solvers.engines.cpsat import solve_cpsat
from memsched.solvers.remat.budgets import given_peak
from memsched.solvers.remat.infeasibility import order_lower_bound

__all__ = ["ThresholdBound", "threshold_bound", "hitting_set_bound", "recomputable", "given_relaxation_bound",
           "given_relaxation_refutes",
           "free_relaxation_bound", "free_relaxation_size"]


@dataclass
class ThresholdBound:
    baseline: float
    extra: float = 0.0  # proven: every schedule of the class within B has compute >= baseline + extra
    checks: list = field(default_factory=list)  # (threshold, how, seconds)
    complete: bool = False  # every threshold up to the limit asked was decided
    certificates: list = field(default_factory=list)  # allowed sets (operator lists) proven infeasible
    schedule: object = None  # hitting_set_bound: a schedule whose compute equals the bound, when found
    infeasible: bool = False  # every restricted problem, the whole class included, has no schedule

    @property
    def lower_bound(self) -> float:
        return self.baseline + self.extra


# CP-SAT subsolvers for the given-order relaxation (given_relaxation_bound, the stage-cut loop),
# in two phases (solve_relaxation): the LP-heavy pair first, for at most RELAX_FIRST_S seconds,
# then the core-based pair with pseudo-costs from the first phase's bound and solution. The
# first pair proves the Checkmate train graphs and the random_layered tail windows fastest
# (segnet-train 0.8: 0.9 s against 3.7 s; with a 5 s first phase random_layered n250 0.9 was no
# longer proven in 60 s), the second the whole random_layered n100 model (0.7, cap 1, expanded
# form: 18-22 s against 214 s and > 240 s); docs/remat.md, "CP-SAT subsolvers".
RELAX_SUBSOLVERS = ("max_lp", "core")
RELAX_SUBSOLVERS_THEN = ("core", "pseudo_costs")
RELAX_FIRST_S = 30.0
# CP-SAT parameters for every solve of the given-order relaxation (both phases, the feasibility
# test, the stage-cut loop) and of the free-order one: without CP-SAT's presolve these pure
# Boolean relaxations are solved 2-20x faster (random_layered n100 0.7, expanded, core +
# pseudo_costs: 5.6 s against 18.5 s; n100 0.6 refuted in 1.0 s against 11 s; fcn_8-train 0.8
# free order proven in 5.4 s against 10.8 s; docs/remat.md, "Without CP-SAT's presolve").
# Presolve only rewrites the model; turning it off changes no answer, only the time.
RELAX_PARAMS = {"cp_model_presolve": False}


def solve_relaxation(model, objective_expr, *, time_limit: float, workers: int, seed: int, name: str,
                     callback=None, pairs: tuple | None = None, first_s: float | None = None):
    """Solve a relaxation model (a pure Boolean model minimizing ``objective_expr``) in the two
    phases of ``RELAX_SUBSOLVERS``: when the first does not end it (optimal or infeasible), the
    model gets ``objective >= `` its proven bound (valid: no solution lies below it) and its
    best solution as the hint, and the second pair runs for the time left. Returns the second
    phase's ``CpsatOutcome``, or the first's when the second found no solution; its ``bound``
    is the best objective bound either phase proved (CP-SAT without presolve may report a
    lower bound in the second phase than the constraint added from the first: its own bound
    starts from the objective's terms, not from that constraint). The model keeps the added
    bound. ``callback``: a ``CpSolverSolutionCallback`` called on every
    incumbent of both phases. ``pairs``: the two subsolver pairs in the order to run them
    (default ``(RELAX_SUBSOLVERS, RELAX_SUBSOLVERS_THEN)``). The outcome returned carries the
    pair that produced it as ``subsolvers``. ``first_s``: the first phase's seconds at most
    (default ``RELAX_FIRST_S``)."""
    import math

    from memsched.solvers.engines.cpsat import solve_cpsat

    t0 = time.perf_counter()
    one, two = pairs or (RELAX_SUBSOLVERS, RELAX_SUBSOLVERS_THEN)
    first = min(RELAX_FIRST_S if first_s is None else first_s, time_limit)
    run = solve_cpsat(model, time_limit=first, workers=int(workers), seed=seed, name=name,
                      params={"subsolvers": list(one), **RELAX_PARAMS}, callback=callback)
    run.subsolvers = tuple(one)
    left = time_limit - (time.perf_counter() - t0)
    if run.status in ("optimal", "infeasible", "invalid") or run.interrupted or left < 0.5:
        return run
    bound = run.bound
    if math.isfinite(bound):
        model.Add(objective_expr >= math.ceil(bound - 1e-6))
    if run.has_solution:
        model.ClearHints()
        for i in range(len(model.Proto().variables)):
            v = model.GetIntVarFromProtoIndex(i)
            model.AddHint(v, run.solver.Value(v))
    then = solve_cpsat(model, time_limit=left, workers=int(workers), seed=seed, name=name,
                       params={"subsolvers": list(two), **RELAX_PARAMS}, callback=callback)
    then.subsolvers = tuple(two)
    if math.isfinite(bound) and then.status != "infeasible":
        run.bound = then.bound = max(bound, then.bound) if math.isfinite(then.bound) else bound
    if then.interrupted or then.has_solution or then.status == "infeasible" or not run.has_solution:
        return then  # an interrupted second phase is reported as such (the caller stops)
    return run


def _stop_if_interrupted(run) -> None:
    """Ctrl-C stopped this check's search: stop the whole bound (the driver keeps its best
    schedule so far); an interrupted check proves nothing."""
    if run.interrupted:
        raise KeyboardInterrupt


def recomputable(graph: Graph, caps) -> list[int]:
    """Operators that can usefully run twice: a positive cap and an output someone reads or requires."""
    return [v for v in range(graph.n_ops) if caps[v] > 0
            and any(graph.consumers[j] or j in graph.output_idx for j in graph.op_out[v])]


def _no_recompute_infeasible(graph: Graph, B: int, order: str) -> str | None:
    if order == "given":
        pk = given_peak(graph)
        return f"given order peak {pk} > {B}" if pk > B else None
    lb = order_lower_bound(graph)
    return f"ordering lower bound {lb} > {B}" if lb > B else None


def _restricted_infeasible(graph: Graph, B: int, caps: list[int], order: str, time_limit: float,
                           workers: int, seed: int, found: list | None = None) -> str | None:
    """'infeasible: <how>' when no schedule of the class within ``caps`` fits B is proven,
    'feasible' when one is found (appended to ``found``), None when undecided."""
    if not any(c > 0 for c in caps):
        why = _no_recompute_infeasible(graph, B, order)
        if why:
            return "infeasible: " + why
        if order == "given" and given_peak(graph) <= B:
            if found is not None:
                found.append(Schedule.from_order(graph, graph.given_order()))
            return "feasible"
    from memsched.formulations.remat_cpsat import build_remat_cp

    cp = build_remat_cp(graph, B, caps, objective="compute",
                        fix_order=graph.given_order() if order == "given" else None)
    cp.model.ClearObjective()
    run = solve_cpsat(cp.model, time_limit=max(0.1, float(time_limit)), workers=int(workers), seed=seed,
                      name="remat-threshold")
    _stop_if_interrupted(run)
    if run.status == "infeasible":
        return "infeasible: CP-SAT"
    if run.has_solution:
        if found is not None:
            found.append(cp.decode(run.solver.Value, run.solver.BooleanValue))
        return "feasible"
    return None


def threshold_bound(graph: Graph, B: int, caps, order: str = "free", *, upto: float | None = None,
                    time_limit: float = 10.0, workers: int = 1, seed: int = 0) -> ThresholdBound:
    """The threshold bound (module docstring) for budget ``B``, per-operator ``caps``
    (finite ints; None entries or ``caps=None`` give the baseline only) and ``order``
    ("free" or "given"). ``upto``: stop once the proven extra reaches it (e.g. the
    incumbent's extra compute: no bound can pass a schedule's value)."""
    base = graph.total_cost()
    out = ThresholdBound(baseline=base)
    if caps is None or any(c is None for c in caps):
        return out
    caps = [int(c) for c in caps]
    rec = recomputable(graph, caps)
    thresholds = sorted({float(graph.cost[v]) for v in rec if graph.cost[v] > 0})
    if not rec:
        out.complete = True
        return out
    t0 = time.perf_counter()
    for t in thresholds:
        if upto is not None and (out.extra >= upto - 1e-12 or t > upto + 1e-12):
            break  # the incumbent (extra <= upto) lies in every larger restricted problem
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0.05:
            return out
        allowed = [caps[v] if (v in rec and graph.cost[v] < t) else 0 for v in range(graph.n_ops)]
        ts = time.perf_counter()
        got = _restricted_infeasible(graph, B, allowed, order, left, workers, seed)
        out.checks.append((t, got or "undecided", round(time.perf_counter() - ts, 3)))
        if got is None or not got.startswith("infeasible"):
            return out
        out.extra = t
        out.certificates.append([v for v in range(graph.n_ops) if allowed[v] > 0])
    out.complete = True
    return out


def hitting_set_bound(graph: Graph, B: int, caps, order: str = "free", *, upto: float | None = None,
                      time_limit: float = 10.0, workers: int = 1, seed: int = 0,
                      start: ThresholdBound | None = None) -> ThresholdBound:
    """The hitting-set bound (docs/remat.md, "Hitting-set bound"). A certificate is a set C
    of positive-cost operators such that no schedule of the class fits B while none of C
    runs more than once: every schedule within B then runs some operator of C again, so its
    compute is at least the baseline plus the least cost of a set of operators meeting every
    certificate (a small hitting-set problem, solved exactly by CP-SAT).

    Loop (implicit hitting set): take a least-cost hitting set R; solve the class's CP-SAT
    model with "runs once" assumed for every positive-cost operator outside R. A schedule
    whose compute equals the bound is optimal (returned in ``schedule``); infeasibility
    yields CP-SAT's core (a subset of the assumptions that alone is infeasible) as a new
    certificate; undecided stops the loop. ``start``: a threshold bound whose certificates
    seed the loop. Integer costs only (else ``start`` or the baseline is returned unchanged)."""
    from ortools.sat.python import cp_model

    from memsched.formulations import evaluate
    from memsched.formulations.remat_cpsat import build_remat_cp, cost_scale

    out = start if start is not None else ThresholdBound(baseline=graph.total_cost())
    if caps is None or any(c is None for c in caps):
        return out
    caps = [int(c) for c in caps]
    rec = recomputable(graph, caps)
    pos = [v for v in rec if graph.cost[v] > 0]
    div, icost = cost_scale(graph.cost)
    if div > 0 or not pos:
        return out
    t0 = time.perf_counter()
    # certificates as sets of operators one of which must run again
    cuts = [frozenset(v for v in pos if v not in set(F)) for F in out.certificates]
    cp = build_remat_cp(graph, B, caps, objective="compute", fix_order=graph.given_order() if order == "given" else None)
    cp.model.ClearObjective()
    once = {v: cp.pres[v][1].Not() for v in pos if cp.K[v] > 1}
    lit_op = {once[v].Index(): v for v in once}
    while time.perf_counter() - t0 < time_limit:
        md = cp_model.CpModel()
        y = {v: md.NewBoolVar(f"y{v}") for v in pos}
        for C in cuts:
            md.AddBoolOr([y[v] for v in C])
        md.Minimize(sum(icost[v] * y[v] for v in pos))
        hs = solve_cpsat(md, time_limit=max(0.1, time_limit - (time.perf_counter() - t0)), workers=1,
                         name="remat-hitting-set")
        _stop_if_interrupted(hs)
        if hs.status == "infeasible":
            out.infeasible = True  # an empty certificate: the whole class is infeasible
            out.complete = True
            return out
        if hs.status != "optimal":
            return out
        R = {v for v in pos if hs.solver.BooleanValue(y[v])}
        extra = float(sum(graph.cost[v] for v in R))
        out.extra = max(out.extra, extra)
        if upto is not None and out.extra >= upto - 1e-9:
            out.complete = True
            return out
        cp.model.ClearAssumptions()
        cp.model.AddAssumptions([once[v] for v in once if v not in R])
        ts = time.perf_counter()
        run = solve_cpsat(cp.model, time_limit=max(0.1, time_limit - (time.perf_counter() - t0)), workers=1, seed=seed,
                          name="remat-hitting-set-check")
        _stop_if_interrupted(run)
        took = round(time.perf_counter() - ts, 3)
        if run.has_solution:
            sched = cp.decode(run.solver.Value, run.solver.BooleanValue)
            c = evaluate(graph, sched).compute
            out.checks.append((extra, "feasible", took))
            if abs(c - out.lower_bound) <= 1e-9 * max(1.0, abs(c)):
                out.schedule = sched
                out.complete = True
            return out
        if run.status != "infeasible":
            out.checks.append((extra, "undecided", took))
            return out
        core = frozenset(lit_op[i] for i in run.solver.SufficientAssumptionsForInfeasibility() if i in lit_op)
        out.checks.append((extra, f"infeasible: core of {len(core)}", took))
        cuts.append(core)
        out.certificates.append(sorted(set(pos) - core))
    return out


def given_relaxation_bound(graph: Graph, B: int, caps, *, upto: float | None = None, hint=None,
                           time_limit: float = 10.0, workers: int = 1, seed: int = 0,
                           build_limit: float | None = None, compact: bool = False,
                           window: tuple[int, int] | None = None) -> ThresholdBound:
    """A lower bound on compute for the given-order class from the stage relaxation
    (``memsched.formulations.remat_given_relax``; docs/remat.md, "Given-order stage
    relaxation"): every schedule of the class within ``B`` and the finite ``caps`` has
    compute >= baseline + the relaxation's least extra compute, and CP-SAT's objective bound
    on the relaxation is below that.

    Parameters
    ----------
    upto : float, optional
        The extra compute of a known schedule of the class within B (the incumbent): the
        relaxation's optimum is at most that, so ``extra <= upto`` is added as a cut (CP-SAT
        refuting it would be a bug, raised as SolverDisagreement).
    hint : Schedule, optional
        A schedule of the class, hinted to CP-SAT.
    build_limit : float, optional
        Seconds the model's build may take (default: half of ``time_limit``); a larger
        ``time_limit`` then goes to the search only.
    window : (a, b), optional
        Only the stages a..b (``build_given_relaxation(..., window=)``; docs/remat.md, "Windows
        of stages"): a smaller model whose optimum is still a bound. Its solution covers only
        those stages, so no schedule is built from it.

    Returns
    -------
    ThresholdBound
        ``extra`` the proven extra compute (0 when nothing was proven), ``complete`` True when
        CP-SAT solved the relaxation to optimality, ``infeasible`` True when the relaxation
        itself has no solution (no schedule of the class fits B), ``schedule`` the stage-class
        schedule built from the relaxation's solution when it is valid within B and the caps
        (the driver keeps it when it is cheaper than its incumbent).
        Without finite caps, or with non-integer costs, the baseline only.

    Complexity
    ----------
    O(n^2 + n x tensors) Booleans; bounded by ``time_limit``.
    """
    import math

    from memsched.formulations.remat_given_relax import BuildDeadline, build_given_relaxation

    out = ThresholdBound(baseline=graph.total_cost())
    if caps is None or any(c is None for c in caps) or not all(float(c).is_integer() for c in graph.cost):
        return out
    t0 = time.perf_counter()
    try:  # the build gets at most half the time, or build_limit
        rx = build_given_relaxation(graph, B, [int(c) for c in caps], compact=compact, window=window,
                                    deadline=t0 + (time_limit / 2 if build_limit is None else min(build_limit, time_limit)))
    except BuildDeadline as e:
        out.checks.append((0.0, f"relaxation not built: {e.args[0]}", round(time.perf_counter() - t0, 3)))
        return out
    cut = upto is not None
    if cut:
        rx.model.Add(rx.objective_expr <= int(math.floor(upto / rx.cost_div + 1e-9)))
    if hint is not None:
        rx.hint(hint)
    left = time_limit - (time.perf_counter() - t0)
    if left < 0.1:
        return out
    # a pure Boolean model with a sum objective: the LP-heavy and core-based workers prove its
    # bound fastest (segnet-train 0.9: 11.7 s to optimal with them, no bound above 0 in 20 s with
    # the default portfolio; docs/remat.md)
    run = solve_relaxation(rx.model, rx.objective_expr, time_limit=left, workers=workers, seed=seed,
                           name="remat-given-relaxation")
    _stop_if_interrupted(run)
    took = round(time.perf_counter() - t0, 3)
    if run.status == "infeasible":
        if cut:  # the relaxation's optimum above a schedule's extra compute: the relaxation is wrong
            from memsched.solvers.result import SolverDisagreement

            raise SolverDisagreement(f"given-order relaxation: no solution with extra compute <= {upto:g}, "
                                     f"though a schedule of the class has it")
        else:
            out.infeasible = out.complete = True
            out.checks.append((0.0, "relaxation infeasible", took))
        return out
    bound = run.bound  # both phases' best
    if math.isfinite(bound) and bound > 0:
        out.extra = float(math.ceil(bound - 1e-6) * rx.cost_div)
    out.complete = run.status == "optimal"
    out.checks.append((out.extra, f"relaxation {run.status}", took))
    if run.has_solution and window is None:
        out.schedule = _stage_schedule(graph, B, caps, rx.decode(run.solver.BooleanValue))
    return out


def given_relaxation_refutes(graph: Graph, B: int, caps, *, time_limit: float = 10.0, workers: int = 1,
                             seed: int = 0, compact: bool = True) -> tuple[bool, list]:
    """Whether the given-order stage relaxation has no solution at budget ``B`` with the finite
    ``caps`` (a feasibility test, no objective, any costs): then no schedule whose first
    computations follow the given order fits B with those caps (docs/remat.md, "Given-order
    stage relaxation", the claim's last sentence). Returns (refuted, checks), checks as in
    :class:`ThresholdBound` (what, seconds). ``compact`` (default): the compact form, measured
    to refute faster (random_layered n100 at 0.6: 4 s against 10 s, docs/remat.md).

    Complexity: the relaxation's size; bounded by ``time_limit`` (the build gets at most half)."""
    from memsched.formulations.remat_given_relax import BuildDeadline, build_given_relaxation

    if caps is None or any(c is None for c in caps):
        return False, [(0.0, "no finite caps: not run", 0.0)]
    t0 = time.perf_counter()
    try:
        rx = build_given_relaxation(graph, B, [int(c) for c in caps], compact=compact, objective=False,
                                    deadline=t0 + time_limit / 2)
    except BuildDeadline as e:
        return False, [(0.0, f"relaxation not built: {e.args[0]}", round(time.perf_counter() - t0, 3))]
    left = time_limit - (time.perf_counter() - t0)
    if left < 0.1:
        return False, [(0.0, "no time left after the build", round(time.perf_counter() - t0, 3))]
    run = solve_cpsat(rx.model, time_limit=left, workers=int(workers), seed=seed, name="remat-given-relaxation-feasibility",
                      params=dict(RELAX_PARAMS))
    _stop_if_interrupted(run)
    took = round(time.perf_counter() - t0, 3)
    return run.status == "infeasible", [(0.0, f"relaxation {run.status}", took)]


def _stage_schedule(graph: Graph, B: int, caps, stages: dict, order: list | None = None):
    """The schedule that runs each stage's recomputations of a relaxation solution in
    ``order`` position (default: the given order) before the stage's first computation (a
    schedule of Checkmate's stage class for that order, frees after each copy's last read),
    when it is valid, fits ``B`` and the caps; else None. A relaxation solution need not be
    realizable this way (it is a relaxation)."""
    from memsched.formulations import evaluate
    from memsched.formulations.evaluator import ScheduleError
    from memsched.solvers.remat.budgets import check_caps
    from memsched.solvers.remat.local_search import schedule_from_sequence

    pi = graph.given_order() if order is None else order
    pos = {v: i for i, v in enumerate(pi)}
    seq: list[int] = []
    for i in range(len(pi) + 1):
        seq += sorted(stages.get(i, ()), key=pos.__getitem__)
        if i < len(pi):
            seq.append(pi[i])
    sched = schedule_from_sequence(graph, seq)
    try:
        ev = evaluate(graph, sched)
    except ScheduleError:
        return None
    return sched if ev.peak <= B and check_caps(graph, sched, caps) is None else None


# CP-SAT subsolvers for the free-order relaxation: core-based first (with 2 workers, the two
# used). fcn_8-train 0.7 (cap 1, hinted): optimal in 37-39 s under a load of ~8; with
# ("max_lp", "core") not proven in 60 s (exploration, docs/remat.md).
FREE_RELAX_SUBSOLVERS = ("core", "max_lp")


def free_relaxation_bound(graph: Graph, B: int, caps, *, upto: float | None = None, hint=None,
                          time_limit: float = 10.0, workers: int = 1, seed: int = 0,
                          max_downsets: int = 2000, max_literals: int = 20000, improve_hint: bool = True,
                          improve_share: float = 0.4) -> ThresholdBound:
    """A lower bound on compute for every schedule (free order) from the free-order stage
    relaxation (``memsched.formulations.remat_free_relax``; docs/remat.md, "Free-order stage
    relaxation"): every schedule within ``B`` and the finite ``caps`` has compute >= baseline
    + the relaxation's least extra compute, and CP-SAT's objective bound is below that.

    Parameters
    ----------
    upto : float, optional
        The extra compute of a known schedule within B and the caps (the incumbent). The
        model then keeps only solutions with extra compute <= ``upto`` (``max_extra``): a
        schedule dearer than the incumbent needs no bound. The bound returned is never above
        ``upto``; CP-SAT refuting the cut would be a bug (SolverDisagreement).
    hint : Schedule, optional
        A schedule within B and the caps, hinted to CP-SAT.
    improve_hint : bool
        With ``upto``: first spend ``improve_share`` of the time on the given-order stage
        relaxation, whose solution, run stage by stage, is often a cheaper schedule (only the
        schedule is used, never that bound); it then replaces the hint and ``upto``.

    Returns
    -------
    ThresholdBound
        ``extra`` the proven extra compute, ``complete`` True when the relaxation was solved to
        optimality, ``infeasible`` True when it has no solution (without ``upto``: no schedule
        fits B), ``schedule`` the cheapest schedule within B and the caps found on the way (the
        relaxation's solution run stage by stage: its order of first computations, each stage's
        recomputations before the next first computation; or the given-order relaxation's), or None. ``checks`` says what happened (build refused:
        too many down-sets or recomputation literals, deadline). Without finite caps or with non-integer costs: the
        baseline only.

    Complexity
    ----------
    O(down-sets x recomputable x tensors) terms; bounded by ``time_limit`` (the build gets at
    most half of it).
    """
    import math

    from memsched.formulations.remat_free_relax import FreeBuildDeadline, TooManyDownsets, build_free_relaxation

    out = ThresholdBound(baseline=graph.total_cost())
    if caps is None or any(c is None for c in caps) or not all(float(c).is_integer() for c in graph.cost):
        return out
    from memsched.formulations import evaluate

    t0 = time.perf_counter()
    caps = [int(c) for c in caps]
    try:
        free_relaxation_size(graph, caps, max_downsets=max_downsets, max_literals=max_literals)
    except TooManyDownsets as e:
        out.checks.append((0.0, f"free relaxation not built: {e.args[0]}", round(time.perf_counter() - t0, 3)))
        return out
    best = None
    if improve_hint and upto is not None and upto > 0:
        # a cheaper schedule first, from the given-order relaxation's solution run stage by stage
        # (only its schedule is used: its bound holds for the given order only); a smaller
        # incumbent makes the free model smaller (max_extra) and gives CP-SAT a better hint
        # (no cut at upto: the given class may have nothing as cheap as a free-order hint)
        gb = given_relaxation_bound(graph, B, caps, hint=hint, time_limit=improve_share * time_limit,
                                    workers=workers, seed=seed)
        if gb.schedule is not None:
            c = evaluate(graph, gb.schedule).compute - out.baseline
            out.checks.append((c, "given-order relaxation's schedule", round(time.perf_counter() - t0, 3)))
            if c < upto - 1e-9:
                upto, hint, best = c, gb.schedule, gb.schedule
    try:
        rx = build_free_relaxation(graph, B, caps, max_downsets=max_downsets, max_extra=upto,
                                   max_literals=max_literals, deadline=t0 + time_limit / 2)
    except (FreeBuildDeadline, TooManyDownsets) as e:
        out.checks.append((0.0, f"free relaxation not built: {e.args[0]}", round(time.perf_counter() - t0, 3)))
        out.schedule = best
        return out
    if hint is not None:
        rx.hint(hint)
    left = time_limit - (time.perf_counter() - t0)
    out.schedule = best
    if left < 0.1:
        return out
    run = solve_cpsat(rx.model, time_limit=left, workers=int(workers), seed=seed, name="remat-free-relaxation",
                      params={"subsolvers": list(FREE_RELAX_SUBSOLVERS), **RELAX_PARAMS})
    _stop_if_interrupted(run)
    took = round(time.perf_counter() - t0, 3)
    if run.status == "infeasible":
        if upto is not None:
            from memsched.solvers.result import SolverDisagreement

            raise SolverDisagreement(f"free-order relaxation: no solution with extra compute <= {upto:g}, "
                                     f"though a schedule has it")
        out.infeasible = out.complete = True
        out.checks.append((0.0, "free relaxation infeasible", took))
        return out
    bound = run.solver.BestObjectiveBound()
    if math.isfinite(bound) and bound > 0:
        out.extra = float(math.ceil(bound - 1e-6) * rx.cost_div)
    out.complete = run.status == "optimal"
    out.checks.append((out.extra, f"free relaxation {run.status} ({rx.stats['downsets']} down-sets)", took))
    if run.has_solution:
        order, stages = rx.decode(run.solver.BooleanValue)
        sched = _stage_schedule(graph, B, caps, stages, order)
        if sched is not None and (best is None or evaluate(graph, sched).compute < evaluate(graph, best).compute):
            out.schedule = sched
    return out


def free_relaxation_size(graph: Graph, caps, *, max_downsets: int = 2000, max_literals: int | None = 20000) -> dict:
    """Down-sets, lattice edges and recomputation literals of the free-order relaxation for
    ``caps`` (before ``max_extra`` pruning), without building it; raises TooManyDownsets past
    either limit. O(down-sets x n)."""
    from memsched.formulations.remat_free_relax import TooManyDownsets, downsets

    nodes, edges = downsets(graph, max_downsets)
    elig = [u for u in range(graph.n_ops) if caps[u] > 0]
    n_lit = sum(1 for D in nodes for u in elig if (D >> u) & 1)
    if max_literals is not None and n_lit > max_literals:
        raise TooManyDownsets(f"remat: the free-order relaxation would have {n_lit} recomputation literals "
                              f"(more than {max_literals})")
    return {"downsets": len(nodes), "edges": len(edges), "recompute_literals": n_lit}
