"""Ruin and recreate over compute sequences: a large-neighbourhood search for remat schedules
at scale (docs/remat-scale.md, "Ruin and recreate").

A *compute sequence* (solvers/remat/local_search.py) lists operator indices, repeats being
recomputations; every copy is freed right after its last reader. Starting from a sequence
whose schedule fits the budget, each step

1. **ruins** it: removes the recomputations (never a first computation) of one part, chosen
   at random among a window of positions, a window of operators of the given order, or a
   random share of all recomputations;
2. **recreates** it: the on-demand eviction executor (solvers/remat/executor.py) walks the
   ruined sequence with the budget, keeping the planned recomputations that are left and
   evicting by a chain score (optionally with a random factor per tensor) wherever the memory
   would overflow, recomputing on demand;
3. drops every recomputation the result can do without (``drop_recomputations``);

and keeps the result when it fits and costs no more than the current sequence (equal cost
is accepted, so the search drifts across plateaus). The evaluator judges every sequence kept;
the search proves nothing and never returns a sequence dearer than its start.
"""
from __future__ import annotations

import math
import random
import time

from memsched.formulations import Graph, evaluate
from memsched.solvers.remat.budgets import check_caps
from memsched.solvers.remat.executor import ExecutionFailed, Executor
from memsched.solvers.remat.local_search import drop_recomputations, schedule_from_sequence

__all__ = ["ruin_and_recreate", "RUIN_KINDS"]

RUIN_KINDS = ("positions", "operators", "share")
SCORES = ("chain", "chain-stale")  # the fast scores (DTR's and Belady's were slower and dearer here)


class _NoisyExecutor(Executor):
    """The executor with a random factor on each tensor's chain cost (a priority only)."""

    def __init__(self, *args, factor=None, **kw):
        super().__init__(*args, **kw)
        self.factor = factor

    def _chain_cost(self, j, memo, depth=0):
        c = super()._chain_cost(j, memo, depth)
        return c * self.factor[j] if self.factor is not None and depth == 0 else c


def _judge(g: Graph, seq: list[int], budget: int, caps):
    """The evaluated schedule of ``seq`` if it fits ``budget`` and ``caps``, else None."""
    sched = schedule_from_sequence(g, seq)
    ev = evaluate(g, sched)
    return ev if ev.peak <= budget and check_caps(g, sched, caps) is None else None


def ruin_and_recreate(g: Graph, budget: int, seq: list[int], *, caps=None, deadline: float,
                      seed: int = 0, progress=None, max_steps: int | None = None,
                      patience: int | None = None) -> tuple[list[int], dict]:
    """The cheapest sequence found from ``seq`` (whose schedule must fit ``budget`` and
    ``caps``) until ``deadline`` (a ``time.perf_counter()`` value), ``max_steps`` steps, or
    ``patience`` steps in a row without a cheaper sequence (default: max(20, operators));
    returns (sequence, stats: steps, improved, failed, start and best compute, best_at: the
    ``time.perf_counter()`` value of the last improvement). See the module docstring."""
    B = int(budget)
    ev = _judge(g, list(seq), B, caps)
    if ev is None:
        raise ValueError("ruin_and_recreate: the start sequence does not fit the budget and caps")
    rnd = random.Random(seed)
    found = {"cur": (ev.compute, list(seq)), "best": (ev.compute, list(seq))}
    stats = {"steps": 0, "improved": 0, "failed": 0, "start": ev.compute, "best_at": None}
    try:
        _search(g, B, caps, deadline, max_steps, max(20, g.n_ops) if patience is None else patience, rnd, stats,
                found, progress)
    except KeyboardInterrupt:  # Ctrl-C: the cheapest sequence so far
        stats["interrupted"] = True
    stats["best"] = found["best"][0]
    return found["best"][1], stats


def _search(g, B, caps, deadline, max_steps, patience, rnd, stats, found, progress):
    """The steps of :func:`ruin_and_recreate`; ``found`` holds the current and the cheapest
    (compute, sequence), updated in place."""
    pos_given = {v: i for i, v in enumerate(g.given_order())}
    last = 0  # the step of the last improvement
    while time.perf_counter() < deadline and (max_steps is None or stats["steps"] < max_steps):
        if stats["steps"] - last >= patience:
            stats["stopped"] = f"{patience} steps without a cheaper sequence"
            break
        stats["steps"] += 1
        s = found["cur"][1]
        kind = rnd.choice(RUIN_KINDS)
        if kind == "positions":
            w = rnd.choice((20, 40, 80, 160))
            a = rnd.randrange(0, max(1, len(s) - w))
            gone = [a <= k < a + w for k in range(len(s))]
        elif kind == "operators":
            w = rnd.choice((10, 20, 40, 80))
            a = rnd.randrange(0, max(1, g.n_ops - w))
            gone = [a <= pos_given[v] < a + w for v in s]
        else:
            share = rnd.choice((0.05, 0.1, 0.2))
            gone = [rnd.random() < share for _ in s]
        seen: set[int] = set()
        ruined = []
        for v, out in zip(s, gone):
            if v not in seen:
                seen.add(v)
                ruined.append(v)
            elif not out:
                ruined.append(v)
        sigma = rnd.choice((0.0, 0.0, 0.3))
        factor = [math.exp(sigma * rnd.gauss(0.0, 1.0)) for _ in range(g.n_tensors)] if sigma else None
        now = time.perf_counter()
        try:
            sched = _NoisyExecutor(g, ruined, budget=B, caps=caps, evict=True, score=rnd.choice(SCORES),
                                   deadline=min(deadline, now + 30.0), factor=factor).execute()
        except ExecutionFailed:
            stats["failed"] += 1
            continue
        new = drop_recomputations(g, sched.computes(), B, deadline=min(deadline, time.perf_counter() + 30.0))
        ev = _judge(g, new, B, caps)
        if ev is None:
            stats["failed"] += 1
            continue
        if ev.compute <= found["cur"][0]:
            found["cur"] = (ev.compute, new)
            if ev.compute < found["best"][0]:
                found["best"] = found["cur"]
                last = stats["steps"]
                stats["improved"] += 1
                stats["best_at"] = time.perf_counter()
                if progress is not None:
                    progress(f"ruin and recreate, step {stats['steps']} ({kind}): extra compute "
                             f"{ev.compute - g.total_cost():.6g}")
