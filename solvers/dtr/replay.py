"""Replaying a trace under a budget: one run, repeated runs, and the simrd budget rule."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from memsched.formulations import MemschedError
from memsched.instances.dtr_trace import DTRTrace, TraceError, parse_trace

from .runtime import Runtime, baseline, canonical_heuristic

__all__ = ["ReplayResult", "load_trace", "trace_baseline", "budget_for", "replay", "parse_limit"]

# engine='auto' uses the compiled engine from this many schedule commands on (the four shared
# traces have 3,552-32,673): a smaller trace replays in milliseconds in Python, less than
# loading numba (about 0.5 s per process) or compiling the engine (about 9 s without its cache)
JIT_MIN_COMMANDS = 1000


@dataclass
class ReplayResult:
    outcome: str  # ok | oom | remat_exceeded | unresolved (timeout) | thrash_or_oom (early_stop)
    clock: int | float
    peak: int
    evictions: int
    baseline_memory: int
    baseline_compute: int | float
    budget: int
    wall_s: float
    heuristic: str
    ratio: float | None = None
    eager_evictions: int = 0
    remat_compute: int | float = 0
    recomputations: int = 0
    overhead_limit: float = 2.0
    failure: dict | None = None
    runtime: Runtime | None = field(default=None, repr=False)  # or a jit_runtime.JitRun (engine 'jit')

    @property
    def overhead(self) -> float:
        """simrd's pareto metric: clock / baseline_compute (the clock starts at 1)."""
        return self.clock / self.baseline_compute if self.baseline_compute else math.inf

    def to_json(self) -> dict:
        d = {"outcome": self.outcome, "clock": self.clock, "peak": self.peak, "evictions": self.evictions,
             "baseline_memory": self.baseline_memory, "baseline_compute": self.baseline_compute,
             "budget": self.budget, "wall_s": round(self.wall_s, 6), "heuristic": self.heuristic,
             "ratio": self.ratio, "overhead": self.overhead, "eager_evictions": self.eager_evictions,
             "remat_compute": self.remat_compute, "recomputations": self.recomputations,
             "overhead_limit": self.overhead_limit}
        if self.failure:
            d["failure"] = {k: v for k, v in self.failure.items() if k != "op"}
            if "op" in self.failure and self.runtime is not None:
                d["failure"]["op"] = self.runtime.trace.ops[self.failure["op"]].name
        return d


def load_trace(trace, start: bool | None = None) -> DTRTrace:
    """``trace`` itself, or the DTR log at that path parsed (``start``: as
    :func:`parse_trace`); a log without operator calls is refused (it would "replay" as ok
    at every budget)."""
    if isinstance(trace, DTRTrace):
        return trace
    tr = parse_trace(Path(trace), start=start)
    if not tr.ops:
        raise TraceError(f"{trace}: empty trace (no operator calls); nothing to replay")
    return tr


def trace_baseline(trace: DTRTrace) -> dict:
    """simrd's V1 infinite-budget baseline, cached on the trace."""
    b = trace.meta.get("_baseline")
    if b is None:
        b = baseline(trace)
        trace.meta["_baseline"] = b
    return b


def budget_for(trace: DTRTrace, ratio: float) -> int:
    """floor(ratio x baseline_memory), the one rounding rule
    (:func:`memsched.formulations.ratio_budget`; simrd's int(ratio x baseline) but exact)."""
    from memsched.formulations import ratio_budget

    return ratio_budget(ratio, trace_baseline(trace)["baseline_memory"])


def parse_limit(text) -> float:
    """Overhead limit: a number >= 1 or 'inf'."""
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise MemschedError(f"--overhead-limit: expected a number >= 1 or 'inf', got {text!r}") from None
    if math.isnan(x) or x < 1:
        raise MemschedError(f"--overhead-limit: expected a number >= 1 or 'inf', got {text!r}")
    return x


def replay(trace, ratio: float | None = None, *, budget: int | None = None, heuristic: str = "dtr",
           overhead_limit: float = 2.0, seed: int = 0, timeout: float | None = None, record: bool = False,
           pin=(), eager: bool = True, keep_runtime: bool = False, early_stop: bool = False,
           engine: str = "auto") -> ReplayResult:
    """Replay ``trace`` (a DTRTrace or a path) with budget ``floor(ratio x baseline_memory)`` (:func:`budget_for`)
    (or ``budget`` bytes) under simrd's RuntimeV2EagerOptimized semantics.

    remat limit = baseline_compute x (overhead_limit - 1) (simrd's thrash rule).
    ``timeout`` seconds: past it the outcome is 'unresolved'. ``pin``: tensor ids pinned
    as soon as computed (never evictable). ``early_stop``: stop as soon as the run provably
    cannot end 'ok' (outcome 'thrash_or_oom': the full run ends in 'remat_exceeded' or 'oom';
    clock, peak and evictions are those at the stop; ``failure`` says where, docs/dtr.md
    section 3, "Early stop"); other outcomes and their figures are the full run's.

    ``engine``: 'auto' (default) replays with the compiled engine (:mod:`.jit_runtime`: the
    same decisions and figures as :class:`Runtime`, docs/dtr.md section 2) when it supports
    the configuration (heuristic dtr, msps or an ab-e* ablation; eager, no record, no pin;
    an acyclic storage graph; integer costs) and the trace has at least
    :data:`JIT_MIN_COMMANDS` commands, and with :class:`Runtime` otherwise; 'python' always
    uses :class:`Runtime`; 'jit' requires the compiled engine (MemschedError if it cannot
    replay this). With the compiled engine, ``runtime`` (keep_runtime) is a
    :class:`.jit_runtime.JitRun`: the figures and the budget interval (``eq_lo``, ``eq_hi``),
    no events or forks."""
    tr = load_trace(trace)
    h = canonical_heuristic(heuristic)
    b = trace_baseline(tr)
    if budget is None:
        if ratio is None:
            raise MemschedError("replay: give a ratio or a budget")
        if not ratio > 0:
            raise MemschedError(f"--ratio must be positive, got {ratio}")
        budget = budget_for(tr, ratio)
    limit = b["baseline_compute"] * (overhead_limit - 1)
    if engine not in ("auto", "python", "jit"):
        raise MemschedError(f"replay: engine must be 'auto', 'python' or 'jit', got {engine!r}")
    t0 = time.perf_counter()
    deadline = None if timeout is None else t0 + timeout
    res = None
    if engine == "jit" or (engine == "auto" and len(tr.schedule) >= JIT_MIN_COMMANDS):
        from . import jit_runtime

        if jit_runtime.supported(h, eager=eager, record=record, pin_extra=pin):
            res = jit_runtime.run(tr, budget, h, remat_limit=limit, early_stop=early_stop, deadline=deadline)
        if res is None and engine == "jit":
            raise MemschedError(f"replay: the compiled engine cannot replay {tr.path} with heuristic {h} here "
                                f"(numba {'missing or disabled' if not jit_runtime.AVAILABLE else 'available'}; "
                                "see docs/dtr.md section 2)")
    if res is not None:
        out, rt = res
    else:
        rt = Runtime(tr, budget, h, remat_limit=limit, eager=eager, record=record, seed=seed, pin_extra=pin,
                     deadline=deadline, early_stop=early_stop)
        try:
            out = rt.run()
        except TimeoutError:
            out = "unresolved"
    wall = time.perf_counter() - t0
    return ReplayResult(outcome=out, clock=rt.clock, peak=rt.peak, evictions=rt.evictions,
                        baseline_memory=b["baseline_memory"], baseline_compute=b["baseline_compute"],
                        budget=budget, wall_s=wall, heuristic=h, ratio=ratio, eager_evictions=rt.eager_evictions,
                        remat_compute=rt.remat_compute, recomputations=rt.remat_count,
                        overhead_limit=overhead_limit, failure=rt.failure,
                        runtime=rt if (keep_runtime or record) else None)
