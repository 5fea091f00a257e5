"""The cross-check: solve one instance every way and check the answers against each other.

On one graph it runs the heuristic orders, the exact order with its
certificate, the lower bounds, rematerialization at a budget (exact CP, the
MILP where it fits, the static baselines, DTR online eviction replayed on the
graph), then emits and runs every resulting schedule and measures the
realized peak and output hashes.

Every row is re-judged here by the evaluator, independently of the solver
that produced it. :func:`find_disagreements` is a pure function of the rows;
any disagreement it names is a bug somewhere in the suite:

* a solver's claimed peak/compute differs from the evaluator's figure;
* realized peak != modeled peak on CPU;
* an output hash differs from the given order's;
* an "optimal" result beaten by another valid result of the same problem;
* an "infeasible" result while another result fits the budget;
* a lower bound above a feasible value of the same problem.

Remat rows answer the asked problem (free order, or with ``order="given"`` the
given order of first computations; unbounded recomputation): their ``status`` and
``lower_bound`` are claims about it (docs/claims.md), so every row is checked,
whatever class its method searched. With ``order="given"`` a schedule whose first
computations leave the given order is not a solution of the asked problem and is
not used to refute claims.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.evaluator import ScheduleError
from memsched.formulations.problems import check_order_scope, first_computations_follow

__all__ = ["Row", "CrosscheckReport", "crosscheck", "find_disagreements", ]

RATIOS = (0.7, 0.8, 0.9)  # the default budget is the smallest of these that is feasible
MILP_MAX_OPS = 120
EXEC_MAX_BYTES = 128 << 20  # larger graphs are executed with sizes divided by a common scale
# the O(n^2)-variable stage MILP is run only up to MILP_MAX_OPS operators


@dataclass
class Row:
    """One method's answer. ``problem`` is "order" (minimize peak, no recomputation)
    or "remat" (minimize compute with peak <= budget)."""

    method: str
    problem: str
    status: str
    schedule: Schedule | None = None
    claimed_peak: int | None = None
    claimed_compute: float | None = None
    lower_bound: float | None = None  # on peak for "order", on compute for "remat"
    peak: int | None = None  # re-judged by the evaluator here
    compute: float | None = None
    realized: dict = field(default_factory=dict)  # backend/device -> {"realized_peak", "output_hash"}
    wall_s: float = 0.0
    message: str = ""
    json: dict = field(default_factory=dict)  # the underlying command's JSON keys
    # status/lower_bound are claims about the asked problem (solve_remat lifts each method's
    # class claims; docs/claims.md); kept for rows built elsewhere that claim less
    global_claims: bool = True

    @property
    def feasible(self) -> bool:
        return self.schedule is not None and self.status in ("optimal", "feasible", "timeout")


@dataclass
class CrosscheckReport:
    graph: Graph
    budget: int | None
    budget_ratio: float | None
    rows: list[Row]
    order_lower_bound: float | None
    baseline_compute: float
    disagreements: list[str]
    backends: list[str]
    wall_s: float
    exec_scale: int = 1  # programs ran with every size divided by this (1 = real sizes)
    order: str = "free"  # the remat problem's order scope

    def to_json(self) -> dict:
        return {
            "graph": self.graph.name,
            "budget": self.budget,
            "budget_ratio": self.budget_ratio,
            "order": self.order,
            "order_lower_bound": self.order_lower_bound,
            "baseline_compute": self.baseline_compute,
            "backends": self.backends,
            "exec_scale": self.exec_scale,
            "verdict": "agree" if not self.disagreements else "DISAGREE",
            "disagreements": self.disagreements,
            "wall_s": self.wall_s,
            "rows": [self._row_json(r) for r in self.rows],
        }

    def _row_json(self, r: Row) -> dict:
        d = dict(r.json)
        d.update({
            "method": r.method, "problem": r.problem, "status": r.status, "peak": r.peak, "compute": r.compute,
            "lower_bound": r.lower_bound, "wall_s": r.wall_s, "realized": r.realized,
            "extra_compute_pct": self.extra_pct(r),
        })
        if r.message:
            d["message"] = r.message
        return d

    def extra_pct(self, r: Row) -> float | None:
        if r.compute is None or not self.baseline_compute:
            return None
        return 100.0 * (r.compute - self.baseline_compute) / self.baseline_compute


# ------------------------------------------------------------------ checks
def _same_cost(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def find_disagreements(graph: Graph, rows: list[Row], *, budget: int | None, order_lower_bound: float | None,
                       reference_hash_method: str = "given", order: str = "free") -> list[str]:
    """Every inconsistency between the rows, as human-readable messages (empty = all agree).

    Re-evaluates every schedule with the evaluator and fills ``row.peak``/``row.compute``."""
    out: list[str] = []
    for r in rows:
        if r.schedule is None:
            continue
        try:
            ev = evaluate(graph, r.schedule)
        except ScheduleError as e:
            out.append(f"{r.method}: its schedule is invalid: {e}")
            r.peak = r.compute = None
            continue
        r.peak, r.compute = ev.peak, ev.compute
        if r.claimed_peak is not None and r.claimed_peak != ev.peak:
            out.append(f"{r.method}: claims peak {r.claimed_peak} but the evaluator finds {ev.peak}")
        if r.claimed_compute is not None and not _same_cost(r.claimed_compute, ev.compute):
            out.append(f"{r.method}: claims compute {r.claimed_compute} but the evaluator finds {ev.compute}")
        if r.problem == "order" and not r.schedule.is_plain_order():
            out.append(f"{r.method}: an ordering result recomputes an operator")
        if r.problem == "remat" and budget is not None and ev.peak > budget and r.status != "infeasible":
            out.append(f"{r.method}: peak {ev.peak} exceeds the budget {budget}")
        for where, m in r.realized.items():
            modeled = ev.peak if m.get("scale", 1) == 1 else m.get("modeled_peak")
            if where.endswith(":cpu") and m.get("realized_peak") != modeled:
                out.append(f"{r.method}: realized peak {m.get('realized_peak')} on {where} != modeled {modeled}"
                           + (f" (sizes / {m['scale']})" if m.get("scale", 1) > 1 else ""))

    # output hashes: every run must produce the same outputs as the reference
    ref = next((r for r in rows if r.method == reference_hash_method and r.realized), None) or \
        next((r for r in rows if r.realized), None)
    if ref is not None:
        for where, m in ref.realized.items():
            h0 = m.get("output_hash")
            for r in rows:
                m2 = r.realized.get(where)
                if m2 is not None and m2.get("output_hash") != h0:
                    out.append(f"{r.method}: output hash on {where} differs from {ref.method}'s "
                               f"({str(m2.get('output_hash'))[:12]} vs {str(h0)[:12]})")

    # optimality and bounds, per problem
    for problem, key in (("order", "peak"), ("remat", "compute")):
        valid = [r for r in rows if r.problem == problem and r.feasible and getattr(r, key) is not None
                 and (problem == "order" or budget is None or r.peak <= budget)
                 and (problem == "order" or order == "free" or first_computations_follow(graph, r.schedule))]
        if not valid:
            continue
        best = min(valid, key=lambda r: getattr(r, key))
        best_v = getattr(best, key)
        for r in rows:
            if r.problem != problem:
                continue
            if not r.global_claims:
                continue
            v = getattr(r, key)
            if r.status == "optimal" and v is not None and best_v < v and not _same_cost(best_v, v):
                out.append(f"{r.method}: claims optimal {key} {v} but {best.method} reaches {best_v}")
            if r.status == "infeasible" and best.feasible:
                out.append(f"{r.method}: claims infeasible but {best.method} fits the budget with peak {best.peak}")
            lb = r.lower_bound
            if lb is not None and lb > best_v and not _same_cost(lb, best_v):
                out.append(f"{r.method}: lower bound {lb} is above a feasible {key} {best_v} ({best.method})")
        if problem == "order" and order_lower_bound is not None and order_lower_bound > best_v:
            out.append(f"bounds: lower bound {order_lower_bound} is above a feasible peak {best_v} ({best.method})")
    return out


# ------------------------------------------------------------------- runs
def _row_from_result(res, method: str, problem: str) -> Row:
    claimed_peak = res.peak
    claimed_compute = res.compute
    r = Row(method=method, problem=problem, status=res.status, schedule=res.schedule, claimed_peak=claimed_peak,
            claimed_compute=claimed_compute, lower_bound=res.lower_bound, wall_s=res.wall_s, message=res.message)
    return r


def _available_backends(device_check: bool = True) -> list[tuple[str, str]]:
    out = [("numpy", "cpu")]
    try:
        import torch  # noqa: F401

        out.append(("torch", "cpu"))
        if device_check and torch.cuda.is_available():
            out.append(("torch", "cuda"))
    except ImportError:
        pass
    return out


def crosscheck(graph: Graph, *, budget: float | None = None, time_limit: float = 30.0, run_programs: bool = True,
               backends: list[tuple[str, str]] | None = None, progress=None, order: str = "free") -> CrosscheckReport:
    """Run everything on ``graph`` and return the report (see module docstring).

    ``budget``: ratio (<= 1) of the given order's peak or bytes; default the smallest of
    0.7/0.8/0.9 at which the exact remat finds a schedule. ``progress``: a callable
    receiving one line per finished step. ``order``: the remat problem's order scope
    ("free", or "given": first computations in the given order)."""
    check_order_scope(order)
    from memsched.solvers.ordering import bounds as bounds_mod
    from memsched.solvers.ordering import dispatch as ordering
    from memsched.solvers.remat import dispatch as remat
    from memsched.solvers.ordering.exact import solve_exact
    from memsched.solvers.ordering.heuristics import HEURISTICS
    import memsched.solvers.dtr as dtr

    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    rows: list[Row] = []

    # 1. orders
    for name in HEURISTICS:
        if name == "liu" and not graph.is_tree():
            continue
        res = ordering.solve_order(graph, method=name)
        rows.append(_row_from_result(res, name, "order"))
        rows[-1].json = res.to_json(graph)
        say(f"order {name}: peak {res.peak}")
    rep = bounds_mod.bound_report(graph)
    lb = rep["lower_bound"]
    say(f"bounds: {lb}")
    ex = solve_exact(graph, time_limit=time_limit, workers=2)
    r = _row_from_result(ex, "exact", "order")
    r.json = ex.to_json(graph)
    rows.append(r)
    say(f"exact order: peak {ex.peak} ({ex.status})")

    # 2. remat at a budget
    baseline = graph.total_cost()
    ratio = None
    chosen = None
    cp_res = None
    candidates = [budget] if budget is not None else list(RATIOS)
    for b in candidates:
        bb = remat.resolve_budget(graph, b)
        res = remat.solve_remat(graph, b, method="cp", time_limit=time_limit, cap=None, order=order)
        say(f"remat cp at {b}: {res.status}")
        if res.schedule is not None or budget is not None:
            chosen, cp_res, ratio = bb, res, (b if b <= 1 else None)
            break
    if chosen is None:  # nothing feasible even at 0.9: report the 0.9 attempt
        chosen, cp_res, ratio = remat.resolve_budget(graph, RATIOS[-1]), res, RATIOS[-1]
    remat_results = [("remat-cp", cp_res)]
    if graph.n_ops <= MILP_MAX_OPS:
        remat_results.append(("remat-milp", remat.solve_remat(graph, chosen, method="milp", time_limit=time_limit,
                                                              order=order)))
    for m in ("checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy"):
        try:
            remat_results.append((m, remat.solve_remat(graph, chosen, method=m, time_limit=time_limit, order=order)))
        except Exception as e:  # a baseline that does not apply to this graph class says so
            rows.append(Row(method=m, problem="remat", status="n/a", message=str(e)))
    for m, res in remat_results:
        row = _row_from_result(res, m, "remat")
        row.json = remat.result_json(graph, res)
        rows.append(row)
        say(f"{m}: {res.status} compute {res.compute}")
    d = dtr.replay_graph(graph, chosen, heuristic="dtr")
    d.scope = "heuristic"
    if d.status == "infeasible":  # the online heuristic found nothing: that proves nothing
        d.class_status, d.status = None, "unknown"
    row = _row_from_result(d, "dtr", "remat")
    row.json = d.to_json(graph)
    rows.append(row)
    say(f"dtr: {d.status}")

    # 3. execute: every schedule, one subprocess per backend; graphs whose peaks exceed
    # EXEC_MAX_BYTES run with every size divided by a common scale (rounded up)
    backends = backends if backends is not None else (_available_backends() if run_programs else [])
    scale = 1
    if backends:
        from memsched.solvers.executors import run_schedules

        ran = [r for r in rows if r.schedule is not None]
        top = max(evaluate(graph, r.schedule).peak for r in ran)
        scale = max(1, -(-top // EXEC_MAX_BYTES))
        for be, dev in backends:
            ms = run_schedules(graph, [r.schedule for r in ran], backend=be, device=dev, scale=scale)
            for r, m in zip(ran, ms):
                r.realized[f"{be}:{dev}"] = {"realized_peak": m["realized_peak"], "modeled_peak": m["modeled_peak"],
                                             "output_hash": m["output_hash"], "scale": scale}
            say(f"ran {len(ran)} programs on {be}:{dev}" + (f" (sizes / {scale})" if scale > 1 else ""))
    dis = find_disagreements(graph, rows, budget=chosen, order_lower_bound=lb, order=order)
    return CrosscheckReport(graph=graph, budget=chosen, budget_ratio=ratio, rows=rows, order_lower_bound=lb,
                            baseline_compute=baseline, disagreements=dis,
                            backends=[f"{b}:{d}" for b, d in backends], wall_s=time.perf_counter() - t0,
                            exec_scale=scale, order=order)


# ----------------------------------------------------------------- output








