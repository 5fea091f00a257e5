"""Rematerialization under a memory budget: the dispatcher and the CLI helpers.

Problem (docs/remat.md): given a graph, a memory budget ``B`` and per-operator
recompute caps ``c_v`` (v runs at most ``1 + c_v`` times), find a schedule of
least total compute whose peak is at most ``B`` (``objective="compute"``); or
the least peak whose compute is at most ``(1 + eps) x`` the no-recompute
baseline (``objective="peak"``).

Methods (one module each, one result type):

* ``cp``: the Moccasin-style CP-SAT interval model with a free order
  (formulations/remat_cpsat.py); exact within the caps.
* ``milp``: Checkmate's stage MILP over the given order (formulations/remat_milp.py),
  any Pyomo solver; exact among schedules that keep the given order of first
  computations.
* ``checkpoint-all``, ``chen-sqrt``, ``revolve``, ``dtr-greedy``: baselines
  (solvers/remat/).
* ``sp-knapsack``, ``width-dp``: special-class algorithms written elsewhere,
  dispatched lazily.

Every schedule is re-checked by the evaluator (solvers.result.make_result) and
must satisfy ``peak <= B`` and the caps; an infeasible budget is a result with
status ``infeasible`` and the reason in ``message``, never an exception.
"""
from __future__ import annotations

import math
import sys
import threading
import time

from memsched.formulations import Graph, MemschedError, Schedule, evaluate
from memsched.solvers.result import SolveResult, Status, make_result

__all__ = ["METHODS", "resolve_budget", "resolve_caps", "solve_remat", "result_json",
           "pareto_sweep", "local_infeasibility", "pebbling_infeasibility", "check_caps",
           "DEFAULT_CP_CAP"]

METHODS = ("cp", "milp", "checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy", "sp-knapsack", "width-dp")

# Set when Ctrl-C stopped a CP-SAT search of the current remat solve (see _run_cpsat).
_INTERRUPTED = threading.Event()

# The CP model needs a finite number of occurrences per operator; an unbounded
# cap is approximated by this many extra computations (stated in the result).
DEFAULT_CP_CAP = 2
# Share of the time left after the warm starts given to the fixed-given-order CP model
# before the free-order one (compute objective, when a schedule within the budget is known).
FIXED_ORDER_SHARE = 0.35


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


def always_resident(graph: Graph) -> int:
    return sum(graph.size[j] for j in graph.input_idx if j in graph.pinned_idx or j in graph.output_idx)


def local_infeasibility(graph: Graph, B: int) -> str | None:
    """A reason why no schedule at all (any recomputation) fits ``B``, from local
    facts: the initial memory, and each operator's own need (its inputs, outputs
    and workspace plus the always-resident inputs) while it runs."""
    init = graph.resident_at_start()
    if init > B:
        return f"the graph inputs alone need {init} bytes > budget {B}"
    const = always_resident(graph)
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
    const = always_resident(graph)
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
                progress: bool = False, workers: int = 1) -> SolveResult:
    """Solve rematerialization with ``method`` (see module docstring).

    ``objective="compute"``: least compute with peak <= budget.
    ``objective="peak"``: least peak with compute <= (1 + eps) x baseline (the
    budget, if given, is an upper limit on the peak as well)."""
    if method not in METHODS:
        raise MemschedError(f"remat: unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if objective not in ("compute", "peak"):
        raise MemschedError(f"remat: objective must be 'compute' or 'peak', got {objective!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise MemschedError(f"remat: eps must be a non-negative number, got {eps!r}")
    if not (time_limit and time_limit > 0):
        raise MemschedError(f"remat: time limit must be positive, got {time_limit!r}")
    B = resolve_budget(graph, budget) if (budget is not None or objective == "compute") else None
    caps = resolve_caps(graph, cap)
    t0 = time.perf_counter()
    params = {"budget": B, "cap": cap, "objective": objective, "time_limit": time_limit}
    if objective == "peak":
        params["eps"] = eps
    if method in ("sp-knapsack", "width-dp"):
        import importlib

        mod = importlib.import_module("memsched.solvers.special.sp_knapsack" if method == "sp-knapsack" else "memsched.solvers.special.width_dp")
        res = mod.solve(graph, B, cap=cap, objective=objective, eps=eps, time_limit=time_limit)
    elif method == "cp":
        _INTERRUPTED.clear()
        try:
            res = _solve_cp(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0)
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
        res = mod.solve(graph, B, caps=caps, objective=objective, eps=eps)
    res.wall_s = time.perf_counter() - t0
    for k, v in params.items():
        res.params.setdefault(k, v)
    res.params.setdefault("method", method)
    _check_result(graph, res, B, caps, objective, eps)
    return res


def _check_result(graph, res, B, caps, objective, eps):
    """The guarantees every method must give (a failure is a bug, not a user error)."""
    if res.schedule is None:
        return
    if objective == "compute" and B is not None:
        assert res.peak <= B, f"{res.solver}: schedule peak {res.peak} exceeds budget {B}"
    if objective == "peak":
        lim = (1 + eps) * graph.total_cost()
        assert res.compute <= lim * (1 + 1e-9) + 1e-9, f"{res.solver}: compute {res.compute} exceeds {lim}"
        if B is not None:
            assert res.peak <= B, f"{res.solver}: schedule peak {res.peak} exceeds budget {B}"
    msg = check_caps(graph, res.schedule, caps)
    assert msg is None, f"{res.solver}: {msg}"


def infeasible_result(graph, solver, objective, reason, *, params=None, wall_s=0.0) -> SolveResult:
    return make_result(graph, None, solver=solver, status=Status.INFEASIBLE, objective=objective,
                       message=reason, params=params, wall_s=wall_s)


# ------------------------------------------------------------------- CP
def _solve_cp(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0) -> SolveResult:
    from memsched.formulations.remat_cpsat import build_remat_cp

    solver_name = "remat-cp"
    n = graph.n_ops
    unbounded = caps is None or any(c is None for c in caps)
    ecaps = effective_caps(caps, n, DEFAULT_CP_CAP)
    params = {"workers": workers, "seed": seed, "effective_cap": ecaps[0] if len(set(ecaps)) == 1 else "per-op"}
    scope = "free order, caps as given" if not unbounded else \
        f"free order; unbounded caps approximated by {DEFAULT_CP_CAP} extra computations per operator"
    params["scope"] = scope
    baseline = graph.total_cost()
    limit_c = (1 + eps) * baseline if objective == "peak" else None
    # 1. local infeasibility
    if B is not None:
        why = local_infeasibility(graph, B) or pebbling_infeasibility(graph, B)
        if why:
            return infeasible_result(graph, solver_name, objective, why, params=params)
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
        olb = order_lower_bound(graph)
        if olb is not None and olb > B:
            extra_costs = [graph.cost[v] for v in range(n) if ecaps[v] > 0]
            if extra_costs:
                floor = baseline + float(min(extra_costs))
                params["recompute_needed"] = f"ordering lower bound {olb} > budget {B}"
    # 2. warm starts: the best no-recompute orders
    cands = candidate_orders(graph, time_budget=min(20.0, time_limit / 4), target=B if objective == "compute" else None)
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
        ws = _greedy_warm_start(graph, B, ecaps, cands[:6], time_budget=min(20.0, time_limit / 5), best_effort_out=least)
        if ws is not None:
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
    if objective == "compute":
        hint_ok = evaluate(graph, hint).peak <= B
        phase1 = None
        if not hint_ok:
            # phase 1: least peak (clipped at B) to find a first schedule within the budget;
            # first with the best order of first computations fixed (small search), then free
            cap_units = None
            found = None
            for label, fix, share in (("phase 1a (fixed order)", best_order, 0.3), ("phase 1b (free order)", None, 0.95)):
                remaining = time_limit - (time.perf_counter() - t0)
                cp1 = build_remat_cp(graph, None, ecaps, objective="peak", fix_order=fix)
                cap_units = max(0, (B - cp1.const_bytes) // cp1.mem_unit)
                cp1.model.Add(cp1.capacity >= cap_units)
                cp1.hint_from_schedule(hint)
                st, sol, bound, wall, _log = _run_cpsat(cp1, remaining * share, seed, workers, progress, label)
                params["phase1_s"] = round(params.get("phase1_s", 0) + wall, 3)
                if sol is not None and sol[1] <= cap_units:
                    found = sol
                    params["phase1"] = label
                    break
                if sol is not None and evaluate(graph, sol[0]).peak < evaluate(graph, hint).peak:
                    hint = sol[0]  # least peak so far: a better start for the next try
                if fix is None and (st == "infeasible" or (st == "optimal" and sol is not None)):
                    lbp = None if sol is None else sol[1] * cp1.mem_unit + cp1.const_bytes
                    why = (f"CP-SAT proves no schedule with at most {max(ecaps)} recomputation(s) per operator "
                           f"fits budget {B}" + (f" (least peak {lbp})" if lbp else ""))
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
        if remaining > 6.0 and FIXED_ORDER_SHARE > 0:
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
        cp = build_remat_cp(graph, B, ecaps, objective="compute")
    else:
        cp = build_remat_cp(graph, B, ecaps, objective="peak", compute_budget=limit_c)
    params["build_s"] = round(time.perf_counter() - tb, 3)
    params.update({k: v for k, v in cp.info.items()})
    cp.hint_from_schedule(hint)
    t_s = time.perf_counter()
    st, sol, bound, wall, log = _run_cpsat(cp, max(0.5, remaining), seed, workers, progress, "solve")
    extra = {"time_to_best_s": None, "solutions": log}
    if sol is None:
        if st == "infeasible":
            why = (f"CP-SAT proves no schedule with at most {max(ecaps)} recomputation(s) per operator"
                   + (f" fits budget {B}" if objective == "compute" else f" has compute <= {limit_c:g}"))
            return infeasible_result(graph, solver_name, objective, why, params=params, wall_s=time.perf_counter() - t0)
        if objective == "compute" and evaluate(graph, hint).peak <= B:
            sched = hint  # the solver found nothing better in time: keep the warm start
            extra["time_to_best_s"] = round(hint_time, 3)
            return make_result(graph, sched, solver=solver_name, status=Status.FEASIBLE, objective="compute",
                               lower_bound=_lb_compute(cp, bound, floor, unbounded), params=params, extra=extra,
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
        lb = _lb_compute(cp, bound, floor, unbounded)
        status = Status.OPTIMAL if (st == "optimal" and not unbounded) or (lb is not None and math.isclose(lb, claimed)) \
            else Status.FEASIBLE
        if st == "optimal" and unbounded:
            params["model_status"] = "optimal"
        return make_result(graph, sched, solver=solver_name, status=status, objective="compute", claimed=claimed,
                           lower_bound=lb, params=params, extra=extra)
    peak_claim = val * cp.mem_unit + cp.const_bytes
    lb = None if bound is None or unbounded else int(math.ceil(bound - 1e-9)) * cp.mem_unit + cp.const_bytes
    res = make_result(graph, sched, solver=solver_name, status=Status.OPTIMAL if st == "optimal" and not unbounded
                      else Status.FEASIBLE, objective="peak", claimed=peak_claim if st == "optimal" else None,
                      lower_bound=lb, params=params, extra=extra)
    assert res.peak <= peak_claim, "CP decode exceeds the model's peak"
    return res


def _lb_compute(cp, bound, baseline, unbounded):
    if bound is None or unbounded:
        return baseline
    div = cp.cost_div
    val = bound * -div if div < 0 else bound / div
    return max(baseline, float(val))


def _greedy_warm_start(graph, B, caps, cands, time_budget=10.0, best_effort_out=None):
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


def _run_cpsat(cp, time_limit, seed, workers, progress, label):
    """Solve; returns (status, (schedule, objective value) | None, bound, wall, solution log)."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.max_time_in_seconds = max(0.1, float(time_limit))
    prm.num_workers = max(1, int(workers))
    prm.random_seed = int(seed)
    log: list[dict] = []
    t0 = time.perf_counter()

    class CB(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            t = time.perf_counter() - t0
            log.append({"t": round(t, 3), "objective": self.ObjectiveValue()})
            if progress:
                print(f"  [{label}] {t:7.2f}s  objective {self.ObjectiveValue():.6g}  bound {self.BestObjectiveBound():.6g}",
                      file=sys.stderr, flush=True)

    if _INTERRUPTED.is_set():  # Ctrl-C in an earlier phase: run no further search
        return "unknown", None, None, 0.0, log
    # The search runs in a helper thread so that Ctrl-C reaches this thread as a
    # KeyboardInterrupt: the search is then stopped and its best solution kept.
    prm.catch_sigint_signal = False
    out: dict = {}
    cb = CB()
    th = threading.Thread(target=lambda: out.setdefault("code", solver.Solve(cp.model, cb)), daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(0.05)
    except KeyboardInterrupt:
        _INTERRUPTED.set()
        solver.StopSearch()
        th.join()
    code = out.get("code", cp_model.UNKNOWN)
    wall = time.perf_counter() - t0
    name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible",
            cp_model.MODEL_INVALID: "invalid"}.get(code, "unknown")
    if name == "invalid":
        raise AssertionError("remat CP model invalid: " + cp.model.Validate())
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
            "lower_bound": res.lower_bound, "wall_s": round(res.wall_s, 3), "message": res.message,
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
