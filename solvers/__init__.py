"""HOW the problems are solved: heuristics, exact drivers, lower bounds,
special-class algorithms, the DTR simulator, executors of emitted schedules."""
from .result import SolveResult, SolverDisagreement, Status, make_result

__all__ = ["SolveResult", "SolverDisagreement", "Status", "make_result"]
