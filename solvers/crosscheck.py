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

from memsched.formulations import Graph, MemschedError, Schedule, evaluate
from memsched.formulations.evaluator import ScheduleError
from memsched.formulations.problems import check_order_scope, first_computations_follow

__all__ = ["Row", "Step", "CrosscheckReport", "crosscheck", "find_disagreements"]

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
    status: str = "complete"  # or "interrupted" (Ctrl-C): the rows are those finished before it
    interrupted_in: str | None = None  # the phase Ctrl-C stopped: heuristic orders, bounds, exact order, remat, programs
    steps_done: int = 0
    steps_total: int = 0

    def to_json(self) -> dict:
        return {
            "graph": self.graph.name,
            "status": self.status,
            "interrupted_in": self.interrupted_in,
            "steps": [self.steps_done, self.steps_total],
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

    Re-evaluates every schedule with the evaluator and fills ``row.peak``/``row.compute``.
    A pure function of the rows (and the graph, budget and order bound): schedules against
    the evaluator and the budget, realized against modeled peaks, output hashes against
    the reference method's, and every optimality, infeasibility and bound claim against
    the best valid row of its problem. O(rows x (events + rows))."""
    out: list[str] = []
    for r in rows:
        out += _judge(graph, r, budget)
    out += _hash_disagreements(rows, reference_hash_method)
    for problem, key in (("order", "peak"), ("remat", "compute")):
        out += _claim_disagreements(graph, rows, problem, key, budget=budget, order=order,
                                    order_lower_bound=order_lower_bound)
    return out


def _judge(graph: Graph, r: Row, budget: int | None) -> list[str]:
    """One row against the evaluator: its validity, its claimed figures, its problem's
    rules (no recomputation in an order, the budget) and its realized peaks."""
    if r.schedule is None:
        return []
    try:
        ev = evaluate(graph, r.schedule)
    except ScheduleError as e:
        r.peak = r.compute = None
        return [f"{r.method}: its schedule is invalid: {e}"]
    out = []
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
    return out


def _hash_disagreements(rows: list[Row], reference_method: str) -> list[str]:
    """Every run must produce the same outputs as the reference method's (else the first run's)."""
    ref = next((r for r in rows if r.method == reference_method and r.realized), None) or \
        next((r for r in rows if r.realized), None)
    if ref is None:
        return []
    out = []
    for where, m in ref.realized.items():
        h0 = m.get("output_hash")
        for r in rows:
            m2 = r.realized.get(where)
            if m2 is not None and m2.get("output_hash") != h0:
                out.append(f"{r.method}: output hash on {where} differs from {ref.method}'s "
                           f"({str(m2.get('output_hash'))[:12]} vs {str(h0)[:12]})")
    return out


def _claim_disagreements(graph: Graph, rows: list[Row], problem: str, key: str, *, budget, order: str,
                         order_lower_bound) -> list[str]:
    """The optimal / infeasible / lower-bound claims of ``problem``'s rows against its best
    valid row (``key``: "peak" for orders, "compute" for remat within the budget, in the
    asked order scope)."""
    valid = [r for r in rows if r.problem == problem and r.feasible and getattr(r, key) is not None
             and (problem == "order" or budget is None or r.peak <= budget)
             and (problem == "order" or order == "free" or first_computations_follow(graph, r.schedule))]
    if not valid:
        return []
    best = min(valid, key=lambda r: getattr(r, key))
    best_v = getattr(best, key)
    out = []
    for r in rows:
        if r.problem != problem or not r.global_claims:
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
def _row_from_result(res, method: str, problem: str, json: dict | None = None) -> Row:
    """A row holding ``res``'s claims (the evaluator's figures are filled in later)."""
    return Row(method=method, problem=problem, status=res.status, schedule=res.schedule, claimed_peak=res.peak,
               claimed_compute=res.compute, lower_bound=res.lower_bound, wall_s=res.wall_s, message=res.message,
               json=json or {})


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


@dataclass
class Step:
    """One finished step of a cross-check, handed to ``progress`` (the caller formats it).

    ``phase`` is "heuristic orders" or "exact order" (``row`` is set), "bounds"
    (``lower_bound`` on the peak of an order), "remat" (``row``; ``budget`` in bytes), or
    "programs" (``method`` names the backend, ``count`` programs ran there). ``done``/``total``
    count steps; ``total`` is the plan and grows if the default budget needs another try."""

    done: int
    total: int
    phase: str
    method: str
    row: Row | None = None
    lower_bound: float | None = None
    budget: int | None = None
    count: int = 0
    note: str = ""


class _Run:
    """The state of one cross-check while it runs: rows so far, the step count, and the
    ``progress`` callback (which may raise KeyboardInterrupt to stop the run)."""

    def __init__(self, graph: Graph, time_limit: float, order: str, progress, total: int):
        self.graph, self.time_limit, self.order = graph, time_limit, order
        self.progress = progress
        self.rows: list[Row] = []
        self.done, self.total = 0, total
        self.lb = None
        self.budget = self.ratio = None
        self.backends: list[str] = []
        self.scale = 1
        self.phase = "heuristic orders"

    def step(self, phase: str, method: str, **kw) -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        if self.progress is not None:
            self.progress(Step(self.done, self.total, phase, method, **kw))

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.step(self.phase, row.method, row=row, budget=self.budget)


def _plan(graph: Graph, backends: list) -> int:
    """How many steps a cross-check of ``graph`` takes (before any extra budget tries)."""
    from memsched.solvers.ordering.heuristics import HEURISTICS

    orders = sum(1 for name in HEURISTICS if name != "liu" or graph.is_tree())
    remat = 1 + (graph.n_ops <= MILP_MAX_OPS) + len(BASELINES) + 1
    return orders + 2 + remat + len(backends)


BASELINES = ("checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy")


def _orders(st: _Run) -> None:
    """Phase 1: every heuristic order, the lower bounds, the exact order."""
    from memsched.solvers.ordering import bounds as bounds_mod
    from memsched.solvers.ordering import dispatch as ordering
    from memsched.solvers.ordering.exact import solve_exact
    from memsched.solvers.ordering.heuristics import HEURISTICS

    g = st.graph
    st.phase = "heuristic orders"
    for name in HEURISTICS:
        if name == "liu" and not g.is_tree():
            continue
        res = ordering.solve_order(g, method=name)
        st.add(_row_from_result(res, name, "order", res.to_json(g)))
    st.phase = "bounds"
    st.lb = bounds_mod.bound_report(g)["lower_bound"]
    st.step("bounds", "bounds", lower_bound=st.lb)
    st.phase = "exact order"
    ex = solve_exact(g, time_limit=st.time_limit, workers=2)
    st.add(_row_from_result(ex, "exact", "order", ex.to_json(g)))


def _remat(st: _Run, budget) -> None:
    """Phase 2: remat at the asked budget (default: the smallest of RATIOS at which cp finds
    a schedule), by cp, the MILP where it fits, the static baselines and DTR."""
    st.phase = "remat"  # first: the imports below are this phase's work (Ctrl-C during them lands here)
    import memsched.solvers.dtr as dtr
    from memsched.solvers.remat import dispatch as remat

    g, order = st.graph, st.order
    candidates = [budget] if budget is not None else list(RATIOS)
    for k, b in enumerate(candidates):
        st.budget = remat.resolve_budget(g, b)
        st.ratio = b if b <= 1 else None
        res = remat.solve_remat(g, b, method="cp", time_limit=st.time_limit, cap=None, order=order)
        last = k == len(candidates) - 1
        if res.schedule is not None or last:  # nothing feasible even at the last ratio: report that attempt
            st.add(_row_from_result(res, "remat-cp", "remat", remat.result_json(g, res)))
            break
        st.total += 1
        st.step("remat", "remat-cp", note=f"no schedule ({res.status}); trying the next ratio", budget=st.budget)
    methods = (["remat-milp"] if g.n_ops <= MILP_MAX_OPS else []) + list(BASELINES)
    for m in methods:
        try:
            res = remat.solve_remat(g, st.budget, method=m.removeprefix("remat-"), time_limit=st.time_limit,
                                    order=order)
        except MemschedError as e:  # a baseline that does not apply to this graph class says so
            st.add(Row(method=m, problem="remat", status="n/a", message=str(e)))
            continue
        st.add(_row_from_result(res, m, "remat", remat.result_json(g, res)))
    d = dtr.replay_graph(g, st.budget, heuristic="dtr")
    d.scope = "heuristic"
    if d.status == "infeasible":  # the online heuristic found nothing: that proves nothing
        d.class_status, d.status = None, "unknown"
    st.add(_row_from_result(d, "dtr", "remat", d.to_json(g)))


def _execute(st: _Run, backends: list[tuple[str, str]]) -> None:
    """Phase 3: every schedule as a program, one subprocess per backend; graphs whose peaks
    exceed EXEC_MAX_BYTES run with every size divided by a common scale (rounded up)."""
    st.phase = "programs"  # first: the import below is this phase's work
    from memsched.solvers.executors import run_schedules

    ran = [r for r in st.rows if r.schedule is not None]
    if not ran:
        return
    top = max(evaluate(st.graph, r.schedule).peak for r in ran)
    st.scale = max(1, -(-top // EXEC_MAX_BYTES))
    for be, dev in backends:
        ms = run_schedules(st.graph, [r.schedule for r in ran], backend=be, device=dev, scale=st.scale)
        for r, m in zip(ran, ms):
            r.realized[f"{be}:{dev}"] = {"realized_peak": m["realized_peak"], "modeled_peak": m["modeled_peak"],
                                         "output_hash": m["output_hash"], "scale": st.scale}
        st.backends.append(f"{be}:{dev}")
        st.step("programs", f"{be}:{dev}", count=len(ran), note=f"sizes / {st.scale}" if st.scale > 1 else "")


def crosscheck(graph: Graph, *, budget: float | None = None, time_limit: float = 30.0, run_programs: bool = True,
               backends: list[tuple[str, str]] | None = None, progress=None, order: str = "free") -> CrosscheckReport:
    """Solve ``graph`` every way and check every answer against the others.

    Parameters
    ----------
    graph : Graph
    budget : float or int, optional
        The remat budget: a ratio (<= 1) of the given order's peak, or bytes. Default: the
        smallest of ``RATIOS`` at which the exact remat (cp) finds a schedule.
    time_limit : float
        Seconds for each exact solve (exact order, remat cp, MILP, baselines).
    run_programs : bool
        Emit and run every schedule (on ``backends``, default numpy and torch when installed).
    progress : callable, optional
        Called with a :class:`Step` after every step. If it raises KeyboardInterrupt (as the
        command line does after Ctrl-C), the cross-check stops there.
    order : {"free", "given"}
        The remat problem's order scope ("given": first computations in the given order).

    Returns
    -------
    CrosscheckReport
        Every finished row, re-judged by the evaluator, and the disagreements among them.
        After Ctrl-C (KeyboardInterrupt, raised by a step or by a solver that does not
        catch it), ``status`` is "interrupted" and the rows are those finished before it;
        the checks hold for those rows.

    Complexity: the sum of the solvers' time limits, plus one program run per schedule and backend.
    """
    check_order_scope(order)
    t0 = time.perf_counter()
    backends = backends if backends is not None else (_available_backends() if run_programs else [])
    st = _Run(graph, time_limit, order, progress, _plan(graph, backends))
    status = "complete"
    try:
        _orders(st)
        _remat(st, budget)
        if backends:
            _execute(st, backends)
    except KeyboardInterrupt:
        status = "interrupted"
    dis = find_disagreements(graph, st.rows, budget=st.budget, order_lower_bound=st.lb, order=order)
    return CrosscheckReport(graph=graph, budget=st.budget, budget_ratio=st.ratio, rows=st.rows,
                            order_lower_bound=st.lb, baseline_compute=graph.total_cost(), disagreements=dis,
                            backends=st.backends, wall_s=time.perf_counter() - t0, exec_scale=st.scale, order=order,
                            status=status, interrupted_in=st.phase if status == "interrupted" else None,
                            steps_done=st.done, steps_total=st.total)
