"""Solver registry: names in a spec -> callables that return a SolveResult.

Every entry is resolved lazily, inside the worker, when a run starts: a solver whose
module is missing (or fails to import) gives an ``error`` row naming the module,
never a crash of the sweep.

=================  ==========================================================
name               calls
=================  ==========================================================
``given``          the graph's given (program) order; always available
``order``          ``memsched.solvers.ordering.dispatch.solve_order(graph, method=..., ...)``
``exact``          ``memsched.solvers.ordering.exact.solve_exact(graph, time_limit=..., ...)``
``remat``          ``memsched.solvers.remat.dispatch.solve_remat(graph, budget, method=..., cap=..., time_limit=...)``
``dtr``            DTR online eviction on the given order: ``solvers.dtr.graph.replay_graph``
                   (``heuristic=``, ``overhead_limit=``; budget as for remat)
``pkg.mod:func``   any importable ``func(graph, **params)`` returning a SolveResult
``debug.*``        harness self-tests: ``sleep``, ``spin``, ``raise``, ``crash``, ``hang``,
                   ``alloc`` (holds ``nbytes`` bytes: tests the per-run memory cap)
=================  ==========================================================

The harness adds ``time_limit``, ``seed``, ``budget`` (when the entry has budgets),
``workers=1`` and ``progress=False`` where the callee's signature accepts them; the
spec's ``params`` are passed verbatim (an unknown parameter is the callee's error).
"""
from __future__ import annotations

import importlib
import inspect
import os
import time

from memsched.formulations import Graph, Schedule
from memsched.solvers.result import SolveResult, Status, make_result

__all__ = ["NAMES", "check_name", "check_budgets", "resolve", "call_solver", "SolverUnavailable"]


class SolverUnavailable(RuntimeError):
    """The solver's module or function cannot be imported."""


# name -> (module, function); None = built in
_LAZY = {
    "order": ("memsched.solvers.ordering.dispatch", "solve_order"),
    "exact": ("memsched.solvers.ordering.exact", "solve_exact"),
    "remat": ("memsched.solvers.remat.dispatch", "solve_remat"),
}
_BUDGETED = {"remat", "dtr"}
_UNBUDGETED = {"given", "order", "exact"}  # minimize peak; a budget would be ignored
_BUILTIN = {"given", "dtr"}
_DEBUG = {"sleep", "spin", "raise", "crash", "hang", "alloc"}
NAMES = ["given", "dtr", *_LAZY, "pkg.module:function", *(f"debug.{d}" for d in sorted(_DEBUG))]


def check_name(name: str) -> str | None:
    """None if ``name`` is a valid registry name, else a message."""
    if name in _BUILTIN or name in _LAZY:
        return None
    if name.startswith("debug."):
        return None if name[6:] in _DEBUG else f"unknown debug solver {name!r} (debug.{', debug.'.join(sorted(_DEBUG))})"
    if ":" in name:
        mod, _, fn = name.partition(":")
        if mod and fn.isidentifier():
            return None
    return f"unknown solver {name!r} (known: {', '.join(NAMES)})"


def check_budgets(name: str, has_budgets: bool) -> str | None:
    """None if solver ``name`` may run with (``has_budgets``) or without budgets, else a
    message: ``remat`` and ``dtr`` need one, ``given``/``order``/``exact`` take none (they
    minimize peak; a budget would label a run it never constrained)."""
    if name in _BUDGETED and not has_budgets:
        return f"solver {name!r} needs a budget: give budgets = [...] (ratios <= 1 or bytes)"
    if name in _UNBUDGETED and has_budgets:
        return f"solver {name!r} takes no budget (it minimizes peak); remove 'budgets'/'budget' or use remat/dtr"
    return None


# --------------------------------------------------------------- builtins
def solve_given(graph: Graph, **_ignored) -> SolveResult:
    """The graph's given order, frees after last use."""
    t0 = time.perf_counter()
    sched = Schedule.from_order(graph, graph.given_order())
    return make_result(graph, sched, solver="given", status=Status.FEASIBLE, wall_s=time.perf_counter() - t0)


def budget_bytes(graph: Graph, budget) -> int:
    """A budget ratio (<= 1) of the given order's peak, or bytes (> 1): the one rounding
    rule of remat and the command line (:func:`memsched.solvers.remat.budgets.resolve_budget`,
    floor(r x P)), so that DTR and remat rows of one sweep share their budget in bytes."""
    from memsched.solvers.remat.budgets import resolve_budget

    return resolve_budget(graph, budget)


def solve_dtr(graph: Graph, budget, heuristic: str = "dtr", overhead_limit: float = 2.0, seed: int = 0,
              **_ignored) -> SolveResult:
    """DTR online eviction replayed on the graph's given order
    (``solvers.dtr.graph.replay_graph``); ``budget`` as in :func:`budget_bytes`.
    Status feasible (objective: total compute) or infeasible (OOM / thrashing)."""
    try:
        from memsched.solvers.dtr.graph import replay_graph
    except ImportError as e:
        raise SolverUnavailable(f"solver 'dtr' needs solvers.dtr.graph, which cannot be imported: {e}") from None
    return replay_graph(graph, budget_bytes(graph, budget), heuristic=heuristic, overhead_limit=overhead_limit,
                        seed=seed)


def _debug(kind: str):
    def run(graph: Graph, seconds: float = 0.05, code: int = 3, message: str = "debug failure", only=None,
            nbytes: int = 0, **_ignored) -> SolveResult:
        hit = only is None or graph.name in (only if isinstance(only, list) else [only])
        if hit and kind == "sleep":
            time.sleep(seconds)
        elif hit and kind == "spin":
            end = time.process_time() + seconds
            x = 0
            while time.process_time() < end:
                x += 1
        elif hit and kind == "raise":
            raise RuntimeError(message)
        elif hit and kind == "crash":
            if code < 0:
                os.kill(os.getpid(), -code)
            os._exit(code)
        elif hit and kind == "alloc":
            block = bytearray(int(nbytes))  # touched: really resident
            block[::4096] = b"x" * len(block[::4096])
            del block
        elif hit and kind == "hang":
            while True:
                time.sleep(3600)
        res = solve_given(graph)
        res.solver = f"debug.{kind}"
        return res

    return run


# ---------------------------------------------------------------- resolve
def resolve(name: str):
    """The callable behind ``name``; raises SolverUnavailable with a clear message."""
    if name == "given":
        return solve_given
    if name == "dtr":
        return solve_dtr
    if name.startswith("debug.") and name[6:] in _DEBUG:
        return _debug(name[6:])
    if name in _LAZY:
        mod, fn = _LAZY[name]
    elif ":" in name:
        mod, _, fn = name.partition(":")
    else:
        raise SolverUnavailable(check_name(name) or name)
    try:
        m = importlib.import_module(mod)
    except ImportError as e:
        raise SolverUnavailable(f"solver {name!r} needs module {mod}, which cannot be imported: {e}") from None
    f = getattr(m, fn, None)
    if not callable(f):
        raise SolverUnavailable(f"solver {name!r}: module {mod} has no function {fn}()")
    return f


def _accepts(f, kw: str) -> bool:
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return False
    return kw in sig.parameters or any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


def call_solver(name: str, graph: Graph, params: dict, *, budget=None, time_limit: float | None = None,
                seed: int = 0, fn=None) -> SolveResult:
    """Run solver ``name`` (already resolved: ``fn``) on ``graph``. Raises whatever the solver raises."""
    f = fn or resolve(name)
    kw = dict(params)
    if budget is not None:
        kw.setdefault("budget", budget)
    elif name in _BUDGETED:
        raise ValueError(f"solver {name!r} needs a budget: give budgets = [...] in the spec")
    for k, v in (("time_limit", time_limit), ("seed", seed), ("workers", 1), ("progress", False)):
        if v is not None and k not in kw and _accepts(f, k):
            kw[k] = v
    res = f(graph, **kw)
    if not isinstance(res, SolveResult):
        raise TypeError(f"solver {name!r} returned {type(res).__name__}, not a SolveResult")
    return res

