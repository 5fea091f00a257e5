"""The one result type every solver returns.

A solver hands back a schedule (and optionally what it *claims* the objective
is); :func:`make_result` re-checks the schedule with the evaluator and fills
peak and compute from the evaluator's figures. A claim that disagrees with
the evaluator raises :class:`SolverDisagreement`: that is a bug, never a
tolerance.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.evaluator import Evaluation

__all__ = ["Status", "SolveResult", "SolverDisagreement", "make_result", "check_bounds", "bound_above",
           "same_value", "Timer"]


class Status:
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C: the best schedule and bound found so far
    UNKNOWN = "unknown"  # no schedule and no proof for the asked problem (e.g. a narrower class is infeasible)
    ERROR = "error"


class SolverDisagreement(AssertionError):
    """A solver's claim contradicts the evaluator: a claimed objective differs from the
    evaluator's figure, or a proven lower bound lies above an evaluated value. Always a bug;
    the CLI prints one line and exits with status 1."""


# Relative tolerance for comparing two sums of FRACTIONAL costs that may have been added
# in different orders (float summation error of up to ~10^4 terms). Whole-number values
# (integer costs: FLOP counts, unit costs, gcd-scaled costs) are compared exactly: a
# tolerance there would call a schedule 27 FLOPs above a proven bound "optimal".
FLOAT_SUM_RTOL = 1e-12


def _exact(a, b, objective: str) -> bool:
    """Whether two objective values must be compared exactly (peaks; whole-number costs)."""
    return objective == "peak" or (float(a).is_integer() and float(b).is_integer())


def bound_above(lower_bound, value, objective: str) -> bool:
    """True if ``lower_bound`` exceeds ``value``.

    Peaks and whole-number costs are compared exactly; fractional costs beyond float
    summation error (``FLOAT_SUM_RTOL``)."""
    if lower_bound is None or value is None:
        return False
    if _exact(lower_bound, value, objective):
        return lower_bound > value
    return lower_bound > value and not math.isclose(lower_bound, value, rel_tol=FLOAT_SUM_RTOL, abs_tol=0.0)


def same_value(a, b, objective: str) -> bool:
    """Equality of objective values: exact for peaks and whole-number costs; fractional
    costs up to float summation order (``FLOAT_SUM_RTOL``)."""
    if a is None or b is None:
        return False
    if _exact(a, b, objective):
        return a == b
    return math.isclose(a, b, rel_tol=FLOAT_SUM_RTOL, abs_tol=0.0)


@dataclass
class SolveResult:
    solver: str
    status: str
    schedule: Schedule | None = None
    peak: int | None = None
    compute: float | None = None
    lower_bound: float | None = None  # best proven bound on the objective OF THE ASKED PROBLEM
    objective: str = "peak"  # "peak" or "compute"
    wall_s: float = 0.0
    params: dict = field(default_factory=dict)
    message: str = ""
    evaluation: Evaluation | None = None
    extra: dict = field(default_factory=dict)
    # The claims contract (docs/claims.md): ``status`` (optimal / infeasible) and ``lower_bound``
    # are statements about the asked problem. ``scope`` names the class of schedules the
    # method searched ("free", "given-first-computations", "given-order-stages",
    # "capped:<k>", "heuristic", ...); ``class_status`` / ``class_lower_bound`` are what it
    # proved inside that class (None when it proved nothing there).
    scope: str | None = None
    class_status: str | None = None
    class_lower_bound: float | None = None

    @property
    def value(self):
        """The objective value as judged by the evaluator."""
        return self.peak if self.objective == "peak" else self.compute

    @property
    def gap(self) -> float | None:
        if self.value is None or self.lower_bound is None:
            return None
        if self.value == 0:
            return 0.0
        return max(0.0, (self.value - self.lower_bound) / self.value)

    def to_json(self, graph: Graph) -> dict:
        d = {
            "status": self.status,
            "method": self.solver,
            "peak": self.peak,
            "compute": self.compute,
            "lower_bound": self.lower_bound,
            "gap": self.gap,
            "scope": self.scope,
            "class_status": self.class_status,
            "class_lower_bound": self.class_lower_bound,
            "wall_s": round(self.wall_s, 6),
            "params": self.params,
        }
        if self.message:
            d["message"] = self.message
        if self.schedule is not None:
            if self.schedule.is_plain_order():
                d["order"] = self.schedule.order_names(graph)
            d["schedule"] = self.schedule.to_names(graph)
        d.update(self.extra)
        return d


def make_result(
    graph: Graph,
    schedule: Schedule | None,
    *,
    solver: str,
    status: str,
    objective: str = "peak",
    claimed: float | None = None,
    lower_bound: float | None = None,
    wall_s: float = 0.0,
    params: dict | None = None,
    message: str = "",
    extra: dict | None = None,
    scope: str | None = None,
    class_status: str | None = None,
    class_lower_bound: float | None = None,
) -> SolveResult:
    """Build a :class:`SolveResult`, re-checking ``schedule`` with the evaluator.

    ``claimed`` is the solver's own figure for the objective; it must equal the
    evaluator's (costs compared with a 1e-9 relative tolerance only because
    float sums depend on summation order). A ``lower_bound`` or ``class_lower_bound``
    above the evaluated value raises :class:`SolverDisagreement` (a bound is never clipped)."""
    res = SolveResult(solver=solver, status=status, schedule=schedule, objective=objective,
                      lower_bound=lower_bound, wall_s=wall_s, params=dict(params or {}),
                      message=message, extra=dict(extra or {}), scope=scope, class_status=class_status,
                      class_lower_bound=class_lower_bound)
    if schedule is not None:
        ev = evaluate(graph, schedule)
        res.evaluation = ev
        res.peak, res.compute = ev.peak, ev.compute
        if claimed is not None:
            actual = res.value
            ok = (claimed == actual) if objective == "peak" else math.isclose(claimed, actual, rel_tol=1e-9, abs_tol=1e-9)
            if not ok:
                raise SolverDisagreement(
                    f"{solver}: claimed {objective} {claimed} but the evaluator finds {actual}")
        check_bounds(res)
    return res


def check_bounds(res: SolveResult) -> None:
    """Raise :class:`SolverDisagreement` when a proven bound lies above the evaluated value."""
    for what, lb in (("lower bound", res.lower_bound), ("class lower bound", res.class_lower_bound)):
        if bound_above(lb, res.value, res.objective):
            raise SolverDisagreement(f"{res.solver}: {what} {lb} on {res.objective} is above the evaluated "
                                     f"{res.objective} {res.value} of its own schedule")


class Timer:
    """Wall-clock timer: ``with Timer() as t: ...; t.s``."""

    def __enter__(self):
        import time

        self._t0 = time.perf_counter()
        self.s = 0.0
        return self

    def __exit__(self, *exc):
        import time

        self.s = time.perf_counter() - self._t0
        return False

    def elapsed(self) -> float:
        import time

        return time.perf_counter() - self._t0
