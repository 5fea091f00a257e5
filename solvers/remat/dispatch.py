"""Rematerialization under a memory budget: the dispatcher and the CLI helpers.

Problem (docs/remat.md): given a graph, a memory budget ``B`` and per-operator
recompute caps ``c_v`` (v runs at most ``1 + c_v`` times), find a schedule of
least total compute whose peak is at most ``B`` (``objective="compute"``); or
the least peak whose compute is at most ``(1 + eps) x`` the no-recompute
baseline (``objective="peak"``).

Methods (one module each, one result type):

* ``cp``: the Moccasin-style CP-SAT interval model with a free order
  (formulations/remat_cpsat.py), or the given order of first computations with
  ``order="given"``; exact within finite caps. Without a cap it solves a capped
  model (internal cap, raised while the capped model is infeasible and time is
  left) whose answers are claims about that capped class only.
* ``milp``: Checkmate's stage MILP over the given order (formulations/remat_milp.py),
  any Pyomo solver; exact in Checkmate's stage class (first computations in the
  given order, recomputations of a stage in given-order position), a class
  narrower than both ``order="free"`` and ``order="given"``.
* ``checkpoint-all``, ``chen-sqrt``, ``revolve``, ``dtr-greedy``: baselines
  (solvers/remat/).
* ``sp-knapsack``, ``width-dp``: special-class algorithms written elsewhere,
  dispatched lazily.

Every schedule is re-checked by the evaluator (solvers.result.make_result) and
must satisfy ``peak <= B`` and the caps; an infeasible budget is a result with
status ``infeasible`` and the reason in ``message``, never an exception.

Claims (docs/claims.md). ``solve_remat`` answers the *asked* problem
(formulations/problems.py: budget, objective, caps as given, order scope).
Each method reports what it proved in its own class (``scope``,
``class_status``, ``class_lower_bound``); :func:`lift_claims` turns that into
``status`` and ``lower_bound`` for the asked problem: a proof carries over only
when the method's class is the asked problem; otherwise the status is
``feasible`` (a schedule), ``unknown`` or ``timeout`` (none), unless a bound
valid for the asked problem meets the schedule's value.
"""
from __future__ import annotations

import math
import sys
import threading
import time

from memsched.formulations import Graph, MemschedError, Schedule, evaluate
from memsched.formulations.problems import (RematProblem, check_order_scope, first_computations_follow,
                                            unique_topological_order)
from memsched.solvers.engines.cpsat import solve_cpsat
from memsched.solvers.result import SolveResult, SolverDisagreement, Status, bound_above, make_result, same_value

__all__ = ["METHODS", "resolve_budget", "resolve_caps", "solve_remat", "result_json",
           "pareto_sweep", "local_infeasibility", "pebbling_infeasibility", "check_caps",
           "DEFAULT_CP_CAP", "MAX_CP_CAP", "METHOD_SCOPE", "lift_claims", "asked_lower_bound"]

METHODS = ("cp", "milp", "checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy", "sp-knapsack", "width-dp")

# Set when Ctrl-C stopped a CP-SAT search of the current remat solve (see _run_cpsat).
_INTERRUPTED = threading.Event()

# The CP model needs a finite number of occurrences per operator; without a cap it
# first solves the model with this many extra computations per operator, and while
# that capped model is proven infeasible (and time is left) doubles the internal cap
# up to MAX_CP_CAP. Its claims then hold for the capped class only (scope "capped:<k>").
DEFAULT_CP_CAP = 2
MAX_CP_CAP = 16
# The class each method searches (docs/claims.md); cp names its own (order, internal cap).
METHOD_SCOPE = {"milp": "given-order-stages", "width-dp": "given-order-stages", "sp-knapsack": "free",
                "checkpoint-all": "heuristic", "chen-sqrt": "heuristic", "revolve": "heuristic",
                "dtr-greedy": "heuristic"}
# Share of the time left after the warm starts given to the fixed-given-order CP model
# before the free-order one (compute objective, when a schedule within the budget is known).
FIXED_ORDER_SHARE = 0.35
# Share of the time left given to the threshold lower bound (solvers/remat/proofs.py) once a
# schedule within the budget is known (finite caps, compute objective).
THRESHOLD_SHARE = 0.3
# Share of the time left given to a first slice of the main model before the bounds are computed.
PRESOLVE_SHARE = 0.2


# --------------------------------------------------------------- budgets
def given_peak(graph: Graph) -> int:
    return evaluate(graph, Schedule.from_order(graph, graph.given_order())).peak


def resolve_budget(graph: Graph, budget) -> int:
    """Budget in bytes: ``budget <= 1.0`` is a ratio r of the given order's peak P
    (``floor(r * P)``, the one rounding rule: :func:`memsched.formulations.ratio_budget`);
    ``> 1`` is bytes (rounded down)."""
    if budget is None:
        raise MemschedError("remat: a budget is required (a ratio <= 1 or bytes)")
    try:
        b = float(budget)
    except (TypeError, ValueError):
        raise MemschedError(f"remat: budget must be a number, got {budget!r}") from None
    if not math.isfinite(b) or b <= 0:
        raise MemschedError(f"remat: budget must be positive, got {budget!r}")
    if b <= 1.0:
        from memsched.formulations import ratio_budget

        return ratio_budget(budget, given_peak(graph))
    return int(math.floor(b))


def resolve_caps(graph: Graph, cap) -> list[int] | None:
    """Per-operator caps (extra computations allowed) or None for unbounded.
    ``cap`` is None, an int for every operator, or a dict {op name: int}
    (operators not named are unbounded -> the model default)."""
    if cap is None:
        return None
    if isinstance(cap, dict):
        out = [None] * graph.n_ops
        for name, c in cap.items():
            if name not in graph.op_index:
                raise MemschedError(f"remat: cap names unknown operator {name!r}")
            out[graph.op_index[name]] = _check_cap(c)
        return out
    if isinstance(cap, (list, tuple)):
        if len(cap) != graph.n_ops:
            raise MemschedError(f"remat: cap list has {len(cap)} entries for {graph.n_ops} operators")
        return [None if c is None else _check_cap(c) for c in cap]
    c = _check_cap(cap)
    return [c] * graph.n_ops


def _check_cap(c) -> int:
    if isinstance(c, bool) or not isinstance(c, int) or c < 0:
        raise MemschedError(f"remat: --cap must be a non-negative integer, got {c!r}")
    return c


def effective_caps(caps, n: int, default: int) -> list[int]:
    if caps is None:
        return [default] * n
    return [default if c is None else c for c in caps]


def check_caps(graph: Graph, schedule: Schedule, caps) -> str | None:
    """None if every operator runs at most 1 + cap times, else a message."""
    if caps is None:
        return None
    counts = [0] * graph.n_ops
    for i in schedule.computes():
        counts[i] += 1
    for i, c in enumerate(counts):
        if caps[i] is not None and c > 1 + caps[i]:
            return f"operator {graph.ops[i].name!r} runs {c} times > 1 + cap {caps[i]}"
    return None


def local_infeasibility(graph: Graph, B: int) -> str | None:
    """A reason why no schedule at all (any recomputation) fits ``B``, from local
    facts: the initial memory, and each operator's own need (its inputs, outputs
    and workspace plus the always-resident inputs) while it runs."""
    init = graph.resident_at_start()
    if init > B:
        return f"the graph inputs alone need {init} bytes > budget {B}"
    const = graph.always_resident()
    keep = graph.pinned_idx | graph.output_idx
    worst = None
    for v in range(graph.n_ops):
        need = (sum(graph.size[j] for j in graph.op_in[v] if j not in keep) + sum(graph.size[j] for j in graph.op_out[v])
                + graph.workspace[v] + const)
        if need > B and (worst is None or need > worst[1]):
            worst = (v, need)
    if worst:
        v, need = worst
        extra = f" (+{const} always-resident)" if const else ""
        return f"operator {graph.ops[v].name!r} needs inputs+output+workspace = {need} bytes{extra} > budget {B}"
    return None


def pebbling_infeasibility(graph: Graph, B: int, depth: int = 6, time_limit: float = 1.0) -> str | None:
    """A reason why no schedule (any recomputation) fits ``B``, from a backward
    search over the sets of tensors that must be resident together
    (docs/remat.md, "Backward pebbling bound"); None when none is found within
    ``depth`` steps back and ``time_limit`` seconds (the search is then
    inconclusive, never wrong)."""
    size, prod, op_in, op_out, ws = graph.size, graph.producer, graph.op_in, graph.op_out, graph.workspace
    const = graph.always_resident()
    keep = frozenset(j for j in graph.input_idx if j in graph.pinned_idx or j in graph.output_idx)
    t0 = time.perf_counter()
    memo: dict = {}

    class _Out(Exception):
        pass

    def sz(X):
        return sum(size[j] for j in X if j not in keep) + const

    def reachable(S, d):
        """False only if every way to have S resident at once exceeds B (within d steps back)."""
        if sz(S) > B:
            return False
        prods = {prod[j] for j in S if prod[j] != -1}
        if not prods or d == 0:
            return True
        got = memo.get(S)  # (depth searched, result): True survives d' >= d steps, False dies within d' <= d
        if got is not None and ((got[1] and got[0] >= d) or (not got[1] and got[0] <= d)):
            return got[1]
        if time.perf_counter() - t0 > time_limit:
            raise _Out
        res = False
        for u in sorted(prods, key=lambda u: (sum(size[j] for j in op_in[u]), u)):
            T = (S - frozenset(op_out[u])) | frozenset(op_in[u])
            if sz(T | frozenset(op_out[u])) + ws[u] > B:
                continue
            if reachable(T, d - 1):
                res = True
                break
        memo[S] = (d, res)
        return res

    try:
        for v in range(graph.n_ops):
            S = frozenset(op_in[v])
            if sz(S | frozenset(op_out[v])) + ws[v] > B or not reachable(S, depth):
                return (f"operator {graph.ops[v].name!r}: every way to have its inputs resident together "
                        f"needs more than budget {B} (backward pebbling bound, {depth} steps)")
    except _Out:
        return None
    return None


def order_lower_bound(graph: Graph) -> int | None:
    """The ordering lower bound on peak (valid without recomputation) from
    memsched.solvers.ordering.bounds, when that module is present."""
    try:
        from memsched.solvers.ordering import bounds
    except Exception:
        return None
    report = getattr(bounds, "bound_report", None)
    if callable(report):
        try:
            return int(report(graph)["lower_bound"])
        except Exception:
            pass
    for name in ("lower_bound", "best_lower_bound", "peak_lower_bound"):
        fn = getattr(bounds, name, None)
        if callable(fn):
            try:
                lb = fn(graph)
                if isinstance(lb, dict):
                    lb = lb.get("lower_bound", lb.get("best"))
                if hasattr(lb, "value"):
                    lb = lb.value
                return int(lb) if lb is not None else None
            except Exception:
                return None
    return None


# --------------------------------------------------------- warm starts
def candidate_orders(graph: Graph, time_budget: float = 5.0, target: int | None = None) -> list[tuple[int, list[int], str]]:
    """(peak, order, name) for the given order, every ordering heuristic
    (memsched.solvers.ordering.heuristics.HEURISTICS) and the down-set beam search of
    growing width (memsched.solvers.ordering.downset_dp.beam_order), best first; both modules
    belong to the ordering work and are used when present. The beam stops
    widening once an order with peak <= ``target`` is found or the time budget
    would be exceeded."""
    out = []
    seen = set()

    def add(order, name):
        try:
            order = [graph.op_index[o] if isinstance(o, str) else int(o) for o in order]
        except Exception:
            return None
        if sorted(order) != list(range(graph.n_ops)):
            return None
        key = tuple(order)
        if key in seen:
            return None
        seen.add(key)
        try:
            pk = evaluate(graph, Schedule.from_order(graph, order)).peak
        except MemschedError:
            return None
        out.append((pk, list(order), name))
        return pk

    add(graph.given_order(), "given")
    t0 = time.perf_counter()
    try:
        from memsched.solvers.ordering.heuristics import HEURISTICS  # another helper's module
    except Exception:
        HEURISTICS = {}
    for name, fn in sorted(HEURISTICS.items()):
        if name == "best" or time.perf_counter() - t0 > time_budget:
            continue
        try:
            order = fn(graph)
        except Exception:
            continue
        if hasattr(order, "computes"):
            order = order.computes()
        add(order, name)
    try:
        from memsched.solvers.ordering.downset_dp import beam_order  # another helper's module
    except Exception:
        beam_order = None
    if beam_order is not None:
        width, last = 16, None
        while time.perf_counter() - t0 < time_budget:
            if target is not None and out and min(r[0] for r in out) <= target:
                break
            ts = time.perf_counter()
            try:
                order = beam_order(graph, width)
            except Exception:
                break
            add(order, f"beam{width}")
            took = time.perf_counter() - ts
            if width >= 4096 or time.perf_counter() - t0 + 4.5 * took > time_budget:
                break
            width *= 4
    out.sort(key=lambda r: (r[0], r[2]))
    return out


# ------------------------------------------------------------- dispatch
def solve_remat(graph: Graph, budget, method: str = "cp", cap=None, time_limit: float = 60.0,
                mip_solver: str = "highs", objective: str = "compute", eps: float = 0.0, seed: int = 0,
                progress: bool = False, workers: int = 1, order: str = "free") -> SolveResult:
    """Solve rematerialization with ``method`` (see module docstring).

    ``objective="compute"``: least compute with peak <= budget.
    ``objective="peak"``: least peak with compute <= (1 + eps) x baseline (the
    budget, if given, is an upper limit on the peak as well).
    ``cap``: extra computations per operator (None: unbounded).
    ``order``: "free" (any schedule) or "given" (first computations in the given order).
    ``status``/``lower_bound`` of the result refer to this asked problem; ``scope``,
    ``class_status`` and ``class_lower_bound`` to the class the method searched."""
    if method not in METHODS:
        raise MemschedError(f"remat: unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if objective not in ("compute", "peak"):
        raise MemschedError(f"remat: objective must be 'compute' or 'peak', got {objective!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise MemschedError(f"remat: eps must be a non-negative number, got {eps!r}")
    if not (time_limit and time_limit > 0):
        raise MemschedError(f"remat: time limit must be positive, got {time_limit!r}")
    check_order_scope(order)
    B = resolve_budget(graph, budget) if (budget is not None or objective == "compute") else None
    caps = resolve_caps(graph, cap)
    problem = RematProblem(budget=B, objective=objective, eps=eps, caps=None if caps is None else tuple(caps),
                           order=order)
    t0 = time.perf_counter()
    params = {"budget": B, "cap": cap, "objective": objective, "time_limit": time_limit, "order": order}
    if objective == "peak":
        params["eps"] = eps
    if method in ("sp-knapsack", "width-dp"):
        import importlib

        mod = importlib.import_module("memsched.solvers.special.sp_knapsack" if method == "sp-knapsack" else "memsched.solvers.special.width_dp")
        res = mod.solve(graph, B, cap=cap, objective=objective, eps=eps, time_limit=time_limit)
    elif method == "cp":
        _INTERRUPTED.clear()
        try:
            res = _solve_cp_escalating(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, order)
        except KeyboardInterrupt:  # Ctrl-C outside CP-SAT (warm starts): nothing to return yet
            res = make_result(graph, None, solver="remat-cp", status=Status.TIMEOUT, objective=objective,
                              message="interrupted before a schedule within the budget was found")
        if _INTERRUPTED.is_set() and res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIMEOUT):
            # an interrupted solve keeps its best schedule and bound, but never claims more
            res.status = Status.TIMEOUT
            res.message = ("interrupted; best schedule so far" if res.schedule is not None else "interrupted") \
                + (f" ({res.message})" if res.message else "")
    elif method == "milp":
        from memsched.solvers.remat.milp import solve_remat_milp

        res = solve_remat_milp(graph, B, caps, objective=objective, eps=eps, time_limit=time_limit,
                               mip_solver=mip_solver, progress=progress)
    else:
        import importlib

        mod = importlib.import_module("memsched.solvers.remat." + method.replace("-", "_"))
        kw = {}
        if order == "given" and method == "dtr-greedy":  # keep the asked class: only the given order
            kw["orders"] = [graph.given_order()]
        res = mod.solve(graph, B, caps=caps, objective=objective, eps=eps, **kw)
    res.wall_s = time.perf_counter() - t0
    for k, v in params.items():
        res.params.setdefault(k, v)
    res.params.setdefault("method", method)
    if res.scope is None:
        res.scope = METHOD_SCOPE.get(method, "heuristic")
    _check_result(graph, res, B, caps, objective, eps)
    lift_claims(graph, res, problem)
    anytime(res)
    return res


def anytime(res: SolveResult) -> SolveResult:
    """Anytime figures in ``res.extra`` (in place): ``time_to_first_s`` (the first schedule that
    answers the asked problem), ``time_to_best_s`` (the returned one), ``time_to_proof_s``
    (optimal or infeasible for the asked problem: the end of the solve) and ``gap``
    ((value - lower bound) / value, 0 when proven optimal). Times a method did not record are the wall time."""
    ex = res.extra
    has = res.schedule is not None
    wall = round(res.wall_s, 3)
    if not has:
        ex["time_to_first_s"] = ex["time_to_best_s"] = None
    else:
        if ex.get("time_to_best_s") is None:
            ex["time_to_best_s"] = wall
        if ex.get("time_to_first_s") is None or ex["time_to_first_s"] > ex["time_to_best_s"]:
            ex["time_to_first_s"] = ex["time_to_best_s"]
    ex["time_to_proof_s"] = wall if res.status in (Status.OPTIMAL, Status.INFEASIBLE) else None
    gap = None
    if has and res.status == Status.OPTIMAL:
        gap = 0.0
    elif has and res.lower_bound is not None and res.value:
        gap = max(0.0, (res.value - res.lower_bound) / res.value)
    ex["gap"] = None if gap is None else round(gap, 9)
    return res


def _check_result(graph, res, B, caps, objective, eps):
    """The guarantees every method must give; a failure is a bug (SolverDisagreement), not a user error."""
    if res.schedule is None:
        return

    def fail(msg):
        raise SolverDisagreement(f"{res.solver}: {msg}")

    if objective == "compute" and B is not None and res.peak > B:
        fail(f"schedule peak {res.peak} exceeds budget {B}")
    if objective == "peak":
        lim = (1 + eps) * graph.total_cost()
        if res.compute > lim * (1 + 1e-9) + 1e-9:
            fail(f"compute {res.compute} exceeds {lim}")
        if B is not None and res.peak > B:
            fail(f"schedule peak {res.peak} exceeds budget {B}")
    msg = check_caps(graph, res.schedule, caps)
    if msg is not None:
        fail(msg)
    for what, lb in (("lower bound", res.lower_bound), ("class lower bound", res.class_lower_bound)):
        if bound_above(lb, res.value, objective):
            fail(f"{what} {lb} is above the evaluated {objective} {res.value}")


# ---------------------------------------------------------------- claims
def covers(scope: str | None, problem: RematProblem, graph: Graph) -> bool:
    """True if a method that searched class ``scope`` searched the whole asked problem
    (so its proofs are proofs about the asked problem). docs/claims.md lists the scopes."""
    if scope is None or scope == "heuristic" or "capped:" in scope:
        return False
    if scope == "free":
        return problem.order == "free" or unique_topological_order(graph)
    if scope == "given-first-computations":
        return problem.order == "given" or unique_topological_order(graph)
    return False  # "given-order-stages" and anything else: narrower than both order scopes


def asked_lower_bound(graph: Graph, problem: RematProblem):
    """A lower bound valid for every schedule of the asked problem (any order, any
    recomputation), from facts that need no search; None when there is none.

    Compute objective: every operator runs at least once (the baseline); when no plain
    order fits the budget (ordering lower bound > B), some operator with a positive cap
    runs twice (docs/remat.md, "Compute floor"). Peak objective: the initial memory and each
    operator's own need while it runs (inputs, outputs, workspace, always-resident bytes)."""
    if problem.objective == "compute":
        lb = graph.total_cost()
        B = problem.budget
        if B is not None:
            olb = order_lower_bound(graph)
            if problem.order == "given":  # without recomputation the given class holds one order
                olb = max(olb or 0, given_peak(graph))
            if olb is not None and olb > B:
                caps = problem.caps
                extra = [graph.cost[v] for v in range(graph.n_ops)
                         if (caps is None or caps[v] is None or caps[v] > 0) and _useful(graph, v)]
                if extra:
                    lb += float(min(extra))
        return lb
    return local_peak_bound(graph)


def _useful(graph: Graph, v: int) -> bool:
    """Only an operator with an output someone reads or requires can usefully run twice."""
    return any(graph.consumers[j] or j in graph.output_idx for j in graph.op_out[v])


def local_peak_bound(graph: Graph) -> int:
    """max(initial memory, each operator's inputs + outputs + workspace + always-resident bytes):
    every schedule reaches it (docs/remat.md)."""
    const = graph.always_resident()
    keep = graph.pinned_idx | graph.output_idx
    lb = graph.resident_at_start()
    for v in range(graph.n_ops):
        need = (sum(graph.size[j] for j in set(graph.op_in[v]) if j not in keep)
                + sum(graph.size[j] for j in graph.op_out[v]) + graph.workspace[v] + const)
        lb = max(lb, need)
    return lb


def lift_claims(graph: Graph, res: SolveResult, problem: RematProblem) -> SolveResult:
    """Turn a method's claims about its own class into claims about the asked problem (in place).

    ``class_status``/``class_lower_bound`` keep what the method proved in ``res.scope``;
    ``status``/``lower_bound`` become statements about ``problem``."""
    res.class_status = res.status
    res.class_lower_bound = res.lower_bound
    if res.scope == "heuristic" and res.status != Status.FEASIBLE:
        res.class_status = None  # a heuristic that found nothing proved nothing, not even about itself
    if res.schedule is not None and problem.order == "given" and not first_computations_follow(graph, res.schedule):
        # a schedule outside the asked class answers a different problem: keep it out of the claims
        res.extra["schedule_outside_asked_class"] = res.schedule.to_names(graph)
        res.message = ("its schedule does not keep the given order of first computations"
                       + (f"; {res.message}" if res.message else ""))
        res.schedule = res.evaluation = None
        res.peak = res.compute = None
        res.class_status = None
    exact = covers(res.scope, problem, graph)
    glb = asked_lower_bound(graph, problem)
    lb = res.lower_bound if exact else None
    if glb is not None and (lb is None or glb > lb):
        lb = glb
    value = res.value if res.schedule is not None else None
    if res.schedule is not None:
        if same_value(lb, value, problem.objective):
            status = Status.OPTIMAL  # a bound valid for the asked problem meets the value: certified
        elif exact and res.status == Status.OPTIMAL:
            # the method calls it optimal but no bound equals the value: not certified
            status = Status.FEASIBLE
            res.message = "solver reported optimal, but its bound does not meet the value" + \
                (f"; {res.message}" if res.message else "")
        elif res.status in (Status.TIMEOUT,):
            status = Status.TIMEOUT
        else:
            status = Status.FEASIBLE
    else:
        if exact and res.status == Status.INFEASIBLE:
            status = Status.INFEASIBLE
        else:
            why = None
            if problem.budget is not None:
                why = local_infeasibility(graph, problem.budget) or pebbling_infeasibility(graph, problem.budget)
            if why:
                status = Status.INFEASIBLE
                res.message = why if res.status == Status.INFEASIBLE and res.message == why else \
                    f"{why}" + (f"; {res.message}" if res.message else "")
            elif res.status in (Status.TIMEOUT, Status.ERROR):
                status = res.status
            else:
                status = Status.UNKNOWN
        lb = lb if status != Status.INFEASIBLE else None
    res.status = status
    res.lower_bound = lb
    if bound_above(lb, value, problem.objective):
        raise SolverDisagreement(f"{res.solver}: lower bound {lb} for the asked problem is above the evaluated "
                                 f"{problem.objective} {value}")
    res.params.setdefault("asked", problem.describe())
    return res


def infeasible_result(graph, solver, objective, reason, *, params=None, wall_s=0.0) -> SolveResult:
    return make_result(graph, None, solver=solver, status=Status.INFEASIBLE, objective=objective,
                       message=reason, params=params, wall_s=wall_s)


# ------------------------------------------------------------------- CP
def _solve_cp_escalating(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, order):
    """cp with the asked caps; without a cap, the capped model with internal cap k = 2, 4, 8, ...
    (up to MAX_CP_CAP) while the capped model is proven infeasible and time is left. The
    result's scope names the last internal cap; its claims hold for that capped class only."""
    unbounded = caps is None or any(c is None for c in caps)
    k = DEFAULT_CP_CAP
    tried = []
    while True:
        left = time_limit - (time.perf_counter() - t0)
        res = _solve_cp(graph, B, caps, objective, eps, max(0.5, left), seed, progress, workers,
                        time.perf_counter(), order=order, internal_cap=k)
        if not unbounded:
            break
        k = max(k, int(res.params.get("effective_cap", k)) if str(res.params.get("effective_cap", "")).isdigit() else k)
        tried.append(k)
        res.params["internal_cap"] = k
        res.params["internal_caps_tried"] = list(tried)
        if (res.status != Status.INFEASIBLE or res.params.get("proof") == "local" or _INTERRUPTED.is_set()
                or 2 * k > MAX_CP_CAP or time_limit - (time.perf_counter() - t0) < 1.0):
            break
        k *= 2
    return res


def _solve_cp(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, *, order="free",
              internal_cap=DEFAULT_CP_CAP) -> SolveResult:
    from memsched.formulations.remat_cpsat import build_remat_cp

    solver_name = "remat-cp"
    n = graph.n_ops
    unbounded = caps is None or any(c is None for c in caps)
    ecaps = effective_caps(caps, n, internal_cap)
    given = order == "given"
    # one topological order: the free class is the given class, and the given-order model is much smaller
    gmodel = given or unique_topological_order(graph)
    params = {"workers": workers, "seed": seed, "effective_cap": ecaps[0] if len(set(ecaps)) == 1 else "per-op"}
    base_scope = "given-first-computations" if given else "free"
    scope = base_scope if not unbounded else (f"capped:{internal_cap}" if not given else
                                              f"given-first-computations,capped:{internal_cap}")
    params["scope"] = scope
    scope_box = [scope]  # the internal cap may be raised below (a warm start that needs more)
    _orig_make_result = globals()["make_result"]

    first_box: list = []  # seconds from t0 to the first schedule within the budget

    def make_result(*a, **kw):  # every result of this solve names its class
        kw.setdefault("scope", scope_box[0])
        res = _orig_make_result(*a, **kw)
        if first_box and res.schedule is not None:
            res.extra.setdefault("time_to_first_s", round(first_box[0], 3))
        return res

    def infeasible_result(graph, solver, objective, reason, *, params=None, wall_s=0.0, proof="model"):
        params = dict(params or {})
        params["proof"] = proof
        return make_result(graph, None, solver=solver, status=Status.INFEASIBLE, objective=objective,
                           message=reason, params=params, wall_s=wall_s)
    baseline = graph.total_cost()
    limit_c = (1 + eps) * baseline if objective == "peak" else None
    # 1. local infeasibility
    if B is not None:
        why = local_infeasibility(graph, B) or pebbling_infeasibility(graph, B)
        if why:
            return infeasible_result(graph, solver_name, objective, why, params=params, proof="local")
        if all(c == 0 for c in ecaps) and not unbounded:
            lb = order_lower_bound(graph)
            if lb is not None and lb > B:
                return infeasible_result(graph, solver_name, objective,
                                         f"with no recomputation the peak is at least {lb} (ordering lower bound) > budget {B}",
                                         params=params)
    # a compute floor: when no plain order can fit B (ordering lower bound > B), every
    # schedule within B recomputes some operator allowed to recompute (docs/remat.md)
    floor = baseline
    if objective == "compute" and B is not None:
        # without recomputation the given class holds one order: the given one
        olb = given_peak(graph) if gmodel else order_lower_bound(graph)
        if olb is not None and olb > B:
            extra_costs = [graph.cost[v] for v in range(n) if ecaps[v] > 0]
            if extra_costs:
                floor = baseline + float(min(extra_costs))
                params["recompute_needed"] = f"ordering lower bound {olb} > budget {B}"
    # 2. warm starts: the best no-recompute orders (only the given order when the order is given)
    if given:
        cands = [(given_peak(graph), graph.given_order(), "given")]
    else:
        cands = candidate_orders(graph, time_budget=min(20.0, time_limit / 4),
                                 target=B if objective == "compute" else None)
    best_peak, best_order, best_name = cands[0]
    params["warm_start"] = f"{best_name} order (peak {best_peak})"
    if objective == "compute" and best_peak <= B:
        # every operator must run once: the baseline is a lower bound, and this order attains it
        sched = Schedule.from_order(graph, best_order)
        return make_result(graph, sched, solver=solver_name, status=Status.OPTIMAL, objective="compute",
                           claimed=baseline, lower_bound=baseline, params=params,
                           message=f"the {best_name} order fits the budget without recomputation")
    hint = Schedule.from_order(graph, best_order)
    hint_compute = baseline
    if objective == "compute":
        least: list = []
        # without a cap the warm starts may recompute as often as they like; the model's
        # internal cap is then raised to hold the warm start (said in params and scope)
        ws = _greedy_warm_start(graph, B, caps if unbounded else ecaps, cands[:6], time_budget=min(20.0, time_limit / 5),
                                best_effort_out=least, keep_order=graph.given_order() if given else None)
        if ws is not None and unbounded:
            counts = evaluate(graph, ws[0]).compute_counts
            need = max(counts[v] - 1 for v in range(n) if caps is None or caps[v] is None)
            if need > internal_cap:
                internal_cap = min(need, MAX_CP_CAP)
                ecaps = effective_caps(caps, n, internal_cap)
                if check_caps(graph, ws[0], ecaps) is not None:
                    ws = None
                params["internal_cap_raised"] = f"to {internal_cap} for the warm start"
                params["effective_cap"] = ecaps[0] if len(set(ecaps)) == 1 else "per-op"
                scope_box[0] = params["scope"] = (f"capped:{internal_cap}" if not given else
                                                  f"given-first-computations,capped:{internal_cap}")
        if ws is not None:
            first_box.append(time.perf_counter() - t0)
            hint, how = ws
            hint_compute = evaluate(graph, hint).compute
            params["warm_start"] = f"{how} (compute {hint_compute:g})"
        elif least and least[0][2] < best_peak:
            # nothing fits B: start phase 1 from the least peak found (recomputations included)
            hint = least[0][0]
            params["warm_start"] = f"{least[0][1]} (least peak {least[0][2]}, over budget)"
    remaining = time_limit - (time.perf_counter() - t0)
    tb = time.perf_counter()
    hint_time = None
    done = None  # (model, start, _run_cpsat answer) when the first slice of the main model proved optimality
    if objective == "compute":
        hint_ok = evaluate(graph, hint).peak <= B
        phase1 = None
        if not hint_ok:
            # phase 1: least peak (clipped at B) to find a first schedule within the budget;
            # first with the best order of first computations fixed (small search), then free
            cap_units = None
            found = None
            phases = ((("phase 1 (given order)", graph.given_order(), 0.95),) if gmodel else
                      (("phase 1a (fixed order)", best_order, 0.3), ("phase 1b (free order)", None, 0.95)))
            for label, fix, share in phases:
                complete = fix is None or gmodel  # this phase's model is the whole class
                remaining = time_limit - (time.perf_counter() - t0)
                cp1 = build_remat_cp(graph, None, ecaps, objective="peak", fix_order=fix)
                cap_units = max(0, (B - cp1.const_bytes) // cp1.mem_unit)
                cp1.model.Add(cp1.capacity >= cap_units)
                cp1.hint_from_schedule(hint)
                t_p = time.perf_counter()
                st, sol, bound, wall, _log = _run_cpsat(cp1, remaining * share, seed, workers, progress, label)
                params["phase1_s"] = round(params.get("phase1_s", 0) + wall, 3)
                if sol is not None and sol[1] <= cap_units:
                    first_box.append(t_p - t0 + next((e["t"] for e in _log if e["objective"] <= cap_units), wall))
                    found = sol
                    params["phase1"] = label
                    break
                if sol is not None and evaluate(graph, sol[0]).peak < evaluate(graph, hint).peak:
                    hint = sol[0]  # least peak so far: a better start for the next try
                peak_lb_over = (sol is not None and bound is not None and math.ceil(bound - 1e-9) > cap_units)
                if complete and (st == "infeasible" or (st == "optimal" and sol is not None) or peak_lb_over):
                    lbp = None if sol is None else (sol[1] if st == "optimal" else math.ceil(bound - 1e-9)) \
                        * cp1.mem_unit + cp1.const_bytes
                    why = (f"CP-SAT proves no schedule with at most {max(ecaps)} recomputation(s) per operator"
                           + (" and first computations in the given order" if given else "")
                           + f" fits budget {B}" + (f" (least peak {'' if st == 'optimal' else '>= '}{lbp})"
                                                    if lbp else ""))
                    return infeasible_result(graph, solver_name, objective, why, params=params,
                                             wall_s=time.perf_counter() - t0)
            if found is None:
                best = evaluate(graph, hint).peak
                return make_result(graph, None, solver=solver_name, status=Status.TIMEOUT, objective=objective,
                                   params=params, lower_bound=floor,
                                   message=f"no schedule within budget {B} found in {time.perf_counter() - t0:.1f} s"
                                           + f" (least peak found {best})")
            hint = found[0]
        hint_time = time.perf_counter() - t0
        # phase 2: Moccasin's search space first (first computations in the given order),
        # a much smaller model in which CP-SAT often finds cheap schedules fast; its best
        # schedule hints the free-order model (a superset), whose bound alone is reported
        remaining = time_limit - (time.perf_counter() - t0)
        if remaining > 6.0 and FIXED_ORDER_SHARE > 0 and not gmodel:
            cpf = build_remat_cp(graph, B, ecaps, objective="compute", fix_order=graph.given_order())
            cpf.hint_from_schedule(hint)
            t_f = time.perf_counter()
            st_f, sol_f, _bf, wall_f, log_f = _run_cpsat(cpf, remaining * FIXED_ORDER_SHARE, seed, workers, progress,
                                                          "phase 2 (given order fixed)")
            params["fixed_order_s"] = round(time.perf_counter() - t_f, 3)
            params["fixed_order_status"] = st_f
            if sol_f is not None:
                c_f = evaluate(graph, sol_f[0]).compute
                params["fixed_order_compute"] = c_f
                if evaluate(graph, sol_f[0]).peak <= B and c_f < evaluate(graph, hint).compute - 1e-9:
                    hint = sol_f[0]
                    t_rel = next((e["t"] for e in log_f if e["objective"] <= sol_f[1] + 1e-9), wall_f)
                    hint_time = (t_f - t0) + t_rel
        remaining = time_limit - (time.perf_counter() - t0)
        if not unbounded and remaining > 4.0:
            # a first slice of the main model: easy instances end here, before any bound is computed
            cp0 = build_remat_cp(graph, B, ecaps, objective="compute",
                                 fix_order=graph.given_order() if gmodel else None)
            _add_floor(cp0, floor)
            cp0.hint_from_schedule(hint)
            t_p = time.perf_counter()
            pre = _run_cpsat(cp0, PRESOLVE_SHARE * remaining, seed, workers, progress, "solve, first slice")
            params["first_slice"] = {"status": pre[0], "s": round(pre[3], 3)}
            if pre[0] == "optimal":
                done = (cp0, t_p, pre)
            elif pre[1] is not None:
                floor = max(floor, _lb_compute(cp0, pre[2], floor))
                if evaluate(graph, pre[1][0]).compute < evaluate(graph, hint).compute - 1e-9:
                    hint = pre[1][0]
                    hint_time = (t_p - t0) + next((e["t"] for e in pre[4] if e["objective"] <= pre[1][1] + 1e-9),
                                                  pre[3])
    if objective == "compute" and done is None:
        sched_box: list = []  # a schedule the hitting-set bound proved optimal
        floor = _threshold_floor(graph, B, ecaps, hint, floor, unbounded, gmodel, baseline, params, workers, seed,
                                 THRESHOLD_SHARE * (time_limit - (time.perf_counter() - t0)), sched_box)
        if sched_box and evaluate(graph, sched_box[0]).peak <= B \
                and evaluate(graph, sched_box[0]).compute < evaluate(graph, hint).compute:
            hint = sched_box[0]
            hint_time = time.perf_counter() - t0
        if same_value(floor, evaluate(graph, hint).compute, "compute"):
            return make_result(graph, hint, solver=solver_name, status=Status.OPTIMAL, objective="compute",
                               lower_bound=floor, params=params, extra={"time_to_best_s": round(hint_time, 3)},
                               message="the threshold bound meets the warm start (docs/remat.md)")
        remaining = time_limit - (time.perf_counter() - t0)
        cp = build_remat_cp(graph, B, ecaps, objective="compute", fix_order=graph.given_order() if gmodel else None)
        _add_floor(cp, floor)
    elif objective == "compute":
        cp = done[0]
    else:
        cp = build_remat_cp(graph, B, ecaps, objective="peak", compute_budget=limit_c,
                            fix_order=graph.given_order() if gmodel else None)
    params["build_s"] = round(time.perf_counter() - tb, 3)
    params.update({k: v for k, v in cp.info.items()})
    if done is None:
        cp.hint_from_schedule(hint)
        t_s = time.perf_counter()
        st, sol, bound, wall, log = _run_cpsat(cp, max(0.5, remaining), seed, workers, progress, "solve")
    else:
        _cp, t_s, (st, sol, bound, wall, log) = done
    extra = {"time_to_best_s": None, "solutions": log}
    if sol is None:
        if st == "infeasible":
            why = (f"CP-SAT proves no schedule with at most {max(ecaps)} recomputation(s) per operator"
                   + (" and first computations in the given order" if given else "")
                   + (f" fits budget {B}" if objective == "compute" else f" has compute <= {limit_c:g}"))
            return infeasible_result(graph, solver_name, objective, why, params=params, wall_s=time.perf_counter() - t0)
        if objective == "compute" and evaluate(graph, hint).peak <= B:
            sched = hint  # the solver found nothing better in time: keep the warm start
            extra["time_to_best_s"] = round(hint_time, 3)
            return make_result(graph, sched, solver=solver_name, status=Status.FEASIBLE, objective="compute",
                               lower_bound=floor, params=params, extra=extra,
                               message="solver timed out; returning the warm start")
        return make_result(graph, None, solver=solver_name, status=Status.TIMEOUT, objective=objective,
                           params=params, message=f"no solution found in {time.perf_counter() - t0:.1f} s")
    sched, val = sol
    if log:
        # the first time the final objective value was reached; a value equal to the hint's is the hint's time
        t_rel = next((e["t"] for e in log if e["objective"] <= val + 1e-9), log[-1]["t"])
        extra["time_to_best_s"] = round((t_s - t0) + t_rel, 3)
        if objective == "compute" and hint_time is not None and evaluate(graph, hint).peak <= (B if B is not None else 0) \
                and evaluate(graph, sched).compute >= evaluate(graph, hint).compute - 1e-9:
            extra["time_to_best_s"] = round(hint_time, 3)
    if objective == "compute":
        claimed = sum(graph.cost[i] for i in sched.computes())
        lb = _lb_compute(cp, bound, floor)
        # certified in its class only when the bound meets the value (rounded costs may not)
        status = Status.OPTIMAL if lb is not None and same_value(lb, claimed, "compute") else Status.FEASIBLE
        params["model_status"] = st
        return make_result(graph, sched, solver=solver_name, status=status, objective="compute", claimed=claimed,
                           lower_bound=lb, params=params, extra=extra)
    peak_claim = val * cp.mem_unit + cp.const_bytes
    lb = None if bound is None else int(math.ceil(bound - 1e-9)) * cp.mem_unit + cp.const_bytes
    res = make_result(graph, sched, solver=solver_name, status=Status.OPTIMAL if st == "optimal" else Status.FEASIBLE,
                      objective="peak", claimed=peak_claim if st == "optimal" else None,
                      lower_bound=lb, params=params, extra=extra)
    if res.peak > peak_claim:
        raise SolverDisagreement(f"{solver_name}: decoded schedule peak {res.peak} exceeds the model's peak {peak_claim}")
    return res


def _threshold_floor(graph, B, ecaps, hint, floor, unbounded, gmodel, baseline, params, workers, seed, time_limit,
                     sched_box):
    """max(floor, the threshold bound of solvers/remat/proofs.py) for the model's class, climbing
    no higher than the warm start's extra compute; the floor unchanged without finite caps."""
    if unbounded or time_limit < 0.2:
        return floor
    from memsched.solvers.remat.proofs import hitting_set_bound, threshold_bound

    t = time.perf_counter()
    upto = evaluate(graph, hint).compute - baseline
    cls = "given" if gmodel else "free"
    tbd = threshold_bound(graph, B, ecaps, cls, upto=upto, time_limit=time_limit / 2, workers=workers, seed=seed)
    params["threshold_bound"] = {"extra": tbd.extra, "complete": tbd.complete, "s": round(time.perf_counter() - t, 3),
                                 "checks": [list(c) for c in tbd.checks]}
    left = time_limit - (time.perf_counter() - t)
    if tbd.extra < upto and left > 0.2:
        t = time.perf_counter()
        n0 = len(tbd.checks)
        hbd = hitting_set_bound(graph, B, ecaps, cls, upto=upto, time_limit=left, workers=workers, seed=seed, start=tbd)
        params["hitting_set_bound"] = {"extra": hbd.extra, "s": round(time.perf_counter() - t, 3),
                                       "checks": len(hbd.checks) - n0, "certificates": len(hbd.certificates)}
        if hbd.schedule is not None:
            sched_box.append(hbd.schedule)
        tbd = hbd
    return max(floor, tbd.lower_bound)


def _add_floor(cp, floor):
    """The objective floor as a redundant constraint (integer costs only: scaled costs are rounded)."""
    if cp.objective == "compute" and cp.cost_div < 0 and floor is not None:
        cp.model.Add(cp.objective_expr >= int(math.ceil(floor / -cp.cost_div - 1e-9)))


def _lb_compute(cp, bound, baseline):
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


def _greedy_warm_start(graph, B, caps, cands, time_budget=10.0, best_effort_out=None, keep_order=None):
    """The cheapest schedule within B and the caps found by the DTR-score greedy and
    by the peak-cutting local search (solvers/remat/local_search.py) started from
    the best plain orders; (schedule, description) or None. ``best_effort_out``, a
    list, receives (schedule, description, peak) of the least peak seen (over B or not)."""
    from memsched.solvers.remat.dtr_greedy import greedy_schedule
    from memsched.solvers.remat.local_search import cut_peak

    t0 = time.perf_counter()
    best = None
    least = None  # (peak, schedule, how): the least peak within the caps, over budget or not

    def consider(s, how):
        nonlocal best, least
        if s is None:
            return
        ev = evaluate(graph, s)
        if check_caps(graph, s, caps) is not None:
            return
        if keep_order is not None and not first_computations_follow(graph, s, keep_order):
            return
        if least is None or ev.peak < least[0]:
            least = (ev.peak, s, how)
        if ev.peak > B:
            return
        if best is None or ev.compute < best[0]:
            best = (ev.compute, s, how)

    for _pk, order, name in cands[:3]:
        consider(greedy_schedule(graph, B, caps, order), f"dtr-greedy on the {name} order")
    for _pk, order, name in cands:
        left = time_budget - (time.perf_counter() - t0)
        if left <= 0:
            break
        consider(cut_peak(graph, order, B, caps, time_limit=left, best_effort=True),
                 f"peak-cutting local search from the {name} order")
    if best_effort_out is not None and least is not None:
        best_effort_out.append((least[1], least[2], least[0]))
    return None if best is None else (best[1], best[2])


def _cp_units(cp, v) -> str:
    """A CP-SAT objective value in the result's units: peak bytes, or compute."""
    if cp.objective == "peak":
        return f"peak {int(round(v)) * cp.mem_unit + cp.const_bytes} B"
    c = v * -cp.cost_div if cp.cost_div < 0 else v / cp.cost_div
    return f"compute {c:.6g}"


def _run_cpsat(cp, time_limit, seed, workers, progress, label):
    """Solve through the one CP-SAT runner; returns (status, (schedule, objective value) |
    None, bound, wall, solution log). Ctrl-C stops the search, keeps its incumbent and sets
    the interrupt flag that later phases check."""
    from ortools.sat.python import cp_model

    log: list[dict] = []
    t0 = time.perf_counter()

    class CB(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            t = time.perf_counter() - t0
            log.append({"t": round(t, 3), "objective": self.ObjectiveValue()})
            if progress:  # in the result's units (bytes or compute), not CP-SAT's scaled integers
                print(f"  [{label}] {t:7.2f}s  {_cp_units(cp, self.ObjectiveValue())}  "
                      f"bound {_cp_units(cp, self.BestObjectiveBound())}", file=sys.stderr, flush=True)

    if _INTERRUPTED.is_set():  # Ctrl-C in an earlier phase: run no further search
        return "unknown", None, None, 0.0, log
    run = solve_cpsat(cp.model, time_limit=max(0.1, float(time_limit)), workers=workers, seed=seed, callback=CB(),
                      name=f"remat-{label}")
    if run.interrupted:
        _INTERRUPTED.set()
    solver, name, wall = run.solver, run.status, time.perf_counter() - t0
    if name == "invalid":
        raise MemschedError("remat cp: CP-SAT rejects the model for this graph (numbers too large for 64-bit "
                            "integers?): " + cp.model.Validate())
    if name in ("optimal", "feasible"):
        sched = cp.decode(solver.Value, solver.BooleanValue)
        val = solver.Value(cp.capacity) if cp.objective == "peak" else solver.ObjectiveValue()
        return name, (sched, val), solver.BestObjectiveBound(), wall, log
    return name, None, None, wall, log


# ---------------------------------------------------------- CLI helpers




def pareto_sweep(graph: Graph, budgets, method: str = "cp", cap=None, time_limit: float = 30.0,
                 progress: bool = False, **kw) -> list[dict]:
    """Solve at each budget (ratio or bytes); one row per budget."""
    rows = []
    P = given_peak(graph)
    base = graph.total_cost()
    for b in budgets:
        B = resolve_budget(graph, b)
        res = solve_remat(graph, b, method=method, cap=cap, time_limit=time_limit, **kw)
        rows.append({
            "budget_ratio": round(B / P, 6) if P else None, "budget": B, "status": res.status, "peak": res.peak,
            "compute": res.compute, "overhead_pct": None if res.compute is None else 100.0 * (res.compute - base) / base,
            "lower_bound": res.lower_bound, "scope": res.scope, "class_status": res.class_status,
            "class_lower_bound": res.class_lower_bound, "order": res.params.get("order"),
            "wall_s": round(res.wall_s, 3), "message": res.message,
        })
        if progress:
            r = rows[-1]
            print(f"  budget {B} ({r['budget_ratio']:.3f}): {r['status']}"
                  + ("" if r["overhead_pct"] is None else f", overhead {r['overhead_pct']:.3f} %") + f"  [{r['wall_s']} s]",
                  file=sys.stderr, flush=True)
    return rows


def result_json(graph: Graph, res: SolveResult) -> dict:
    base = graph.total_cost()
    d = {
        "status": res.status,
        "method": res.params.get("method", res.solver),
        "solver": res.solver,
        "objective": res.objective,
        "peak": res.peak,
        "compute": res.compute,
        "baseline_compute": base,
        "overhead_pct": None if res.compute is None else round(100.0 * (res.compute - base) / base, 6) if base else 0.0,
        "budget": res.params.get("budget"),
        "lower_bound": res.lower_bound,
        "order": res.params.get("order", "free"),
        "scope": res.scope,
        "class_status": res.class_status,
        "class_lower_bound": res.class_lower_bound,
        "wall_s": round(res.wall_s, 6),
        "schedule": res.schedule.to_names(graph) if res.schedule is not None else None,
        "recomputations": res.evaluation.recomputations if res.evaluation else None,
        "params": res.params,
    }
    if res.message:
        d["message"] = res.message
    for k, v in res.extra.items():
        d.setdefault(k, v)
    return d
