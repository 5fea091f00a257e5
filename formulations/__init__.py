"""WHAT the problems are: graph model, schedules, the one evaluator, and the
declarative encodings (CP-SAT, Pyomo MILP)."""
from .errors import MemschedError
from .graph import Graph, GraphError, Operator, Tensor
from .schedule import COMPUTE, FREE, Schedule, ScheduleFormatError
from .evaluator import Evaluation, ScheduleError, evaluate, order_peak
from .budget import ratio_budget

__all__ = [
    "MemschedError",
    "Graph", "GraphError", "Operator", "Tensor", "COMPUTE", "FREE", "Schedule",
    "ScheduleFormatError", "Evaluation", "ScheduleError", "evaluate", "order_peak", "ratio_budget",
]
