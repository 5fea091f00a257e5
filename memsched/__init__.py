"""memsched: memory-constrained scheduling of computation graphs.

The three layers live in their own folders at the top of the source tree and are
imported as ``memsched.formulations`` (what the problems are), ``memsched.instances``
(what is solved) and ``memsched.solvers`` (how); ``memsched.cli`` is the command
line. This module names the entry points most users need::

    import memsched
    g = memsched.load_graph("instances/shipped/unet_small.json")
    res = memsched.solve_order(g, exact=True, time_limit=10)
    res = memsched.solve_remat(g, budget=0.8, method="cp", cap=1)
    memsched.evaluate(g, res.schedule).peak

Solver modules are imported lazily (on first use of the name), so ``import memsched``
stays cheap.
"""
from __future__ import annotations

from memsched.formulations import Graph, MemschedError, Operator, Schedule, Tensor, evaluate, order_peak
from memsched.instances import load_graph, load_schedule, save_graph

__all__ = ["Graph", "MemschedError", "Operator", "Schedule", "Tensor", "evaluate", "order_peak",
           "load_graph", "load_schedule", "save_graph", "solve_order", "solve_remat", "crosscheck"]

_LAZY = {
    "solve_order": ("memsched.solvers.ordering.dispatch", "solve_order"),
    "solve_remat": ("memsched.solvers.remat.dispatch", "solve_remat"),
    "crosscheck": ("memsched.solvers.crosscheck", "crosscheck"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'memsched' has no attribute {name!r}")
