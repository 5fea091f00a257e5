"""Warm starts of the remat CP driver: good plain orders, and schedules within the budget
built from them by the DTR-score greedy and the peak-cutting local search.

Both are heuristics: they prove nothing; the driver hands their schedules to CP-SAT as
hints and keeps the best one should the search find nothing better (or be interrupted).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from memsched.formulations import Graph, Schedule, evaluate
from memsched.formulations.problems import first_computations_follow
from memsched.solvers.remat.budgets import check_caps

__all__ = ["candidate_orders", "WarmStarts", "greedy_warm_start", "GIVEN_LS_LIMIT"]

# Seconds for the peak-cutting local search with a kept order when neither the DTR-score greedy
# nor the stage greedy fits (the driver's stage-class search then gets the time).
GIVEN_LS_LIMIT = 3.0


def candidate_orders(graph: Graph, time_budget: float = 5.0, target: int | None = None) -> list[tuple[int, list[int], str]]:
    """Good plain orders, best first.

    Parameters
    ----------
    graph : Graph
    time_budget : float
        Seconds for the heuristics and the beam search together.
    target : int, optional
        The beam stops widening once an order with peak <= target is found.

    Returns
    -------
    list of (peak, order, name)
        The given order, every applicable ordering heuristic
        (:func:`memsched.solvers.ordering.heuristics.run_heuristics`) and the down-set
        beam search of growing width 16, 64, ... (:func:`memsched.solvers.ordering.downset_dp.beam_order`),
        without duplicates, sorted by (peak, name).

    Complexity
    ----------
    The heuristics' own costs; the beam widens while a 4x wider run is expected to fit
    the time budget.
    """
    from memsched.solvers.ordering.downset_dp import beam_order
    from memsched.solvers.ordering.heuristics import applicable, run_heuristics

    out: list = []
    seen: set = set()

    def add(order, name, peak=None):
        key = tuple(order)
        if key in seen:
            return
        seen.add(key)
        pk = evaluate(graph, Schedule.from_order(graph, order)).peak if peak is None else peak
        out.append((pk, list(order), name))

    add(graph.given_order(), "given")
    t0 = time.perf_counter()
    for name, order, peak in run_heuristics(graph, sorted(applicable(graph)), deadline=t0 + time_budget):
        add(order, name, peak)
    width = 16
    while time.perf_counter() - t0 < time_budget:
        if target is not None and min(r[0] for r in out) <= target:
            break
        ts = time.perf_counter()
        order = beam_order(graph, width)
        if order is not None:
            add(order, f"beam{width}")
        took = time.perf_counter() - ts
        if width >= 4096 or time.perf_counter() - t0 + 4.5 * took > time_budget:
            break
        width *= 4
    out.sort(key=lambda r: (r[0], r[2]))
    return out


@dataclass
class WarmStarts:
    """What the warm-start searches saw so far (filled as they run, so that a Ctrl-C keeps
    it): ``best`` = (compute, schedule, how, seconds) of the cheapest schedule within the
    budget and caps, ``least`` = (peak, schedule, how) of the least peak within the caps
    (over the budget or not)."""
    best: tuple | None = None
    least: tuple | None = None


def greedy_warm_start(graph: Graph, B: int, caps, cands, *, time_budget: float = 10.0, keep_order=None,
                      found: WarmStarts | None = None, t0: float | None = None, say=None) -> WarmStarts:
    """The cheapest schedule within ``B`` and ``caps`` built by the DTR-score greedy on the
    three best orders of ``cands`` and by the peak-cutting local search from each order
    (``solvers/remat/local_search.py``), within ``time_budget`` seconds.

    ``keep_order``: keep only schedules whose first computations follow it; when the DTR-score
    greedy finds nothing within ``B``, the stage greedy of the stage class of ``keep_order``
    is tried next, and the local search is skipped if it fits, else limited to
    ``GIVEN_LS_LIMIT`` seconds. ``found``: the
    record to fill (returned); ``t0``: the clock its times count from; ``say(text)``:
    called on each better schedule within the budget (progress lines)."""
    from memsched.solvers.remat.dtr_greedy import greedy_schedule
    from memsched.solvers.remat.local_search import cut_peak

    rec = found if found is not None else WarmStarts()
    start = time.perf_counter()
    t0 = start if t0 is None else t0

    def consider(s, how):
        if s is None or check_caps(graph, s, caps) is not None:
            return
        if keep_order is not None and not first_computations_follow(graph, s, keep_order):
            return
        ev = evaluate(graph, s)
        if rec.least is None or ev.peak < rec.least[0]:
            rec.least = (ev.peak, s, how)
        if ev.peak <= B and (rec.best is None or ev.compute < rec.best[0]):
            rec.best = (ev.compute, s, how, time.perf_counter() - t0)
            if say is not None:
                say(f"compute {ev.compute:.6g}, peak {ev.peak} B <= budget {B} B ({how})")

    for _pk, order, name in cands[:3]:
        consider(greedy_schedule(graph, B, caps, order), f"dtr-greedy on the {name} order")
    if keep_order is not None and rec.best is None:
        # the given order's stage class (solvers/remat/stage_class.py): a stage-by-stage greedy
        # with recompute planning; when it fits, the peak-cutting search is skipped (the driver's
        # stage-class compute search improves the schedule instead)
        from memsched.solvers.remat.stage_class import GREEDY_EXT_WEIGHTS, stage_greedy

        for w in GREEDY_EXT_WEIGHTS:
            consider(stage_greedy(graph, B, caps, keep_order, ext_weight=w), f"stage greedy (ext_weight {w:g})")
        if rec.best is not None:
            return rec
        # neither greedy fits: the driver's stage-class search comes next; the local search
        # gets at most GIVEN_LS_LIMIT seconds (on random_layered n250 it used its whole 12 s and
        # never fitted; on n100 0.8 it fits in under a second)
        time_budget = min(time_budget, GIVEN_LS_LIMIT)
    for _pk, order, name in cands:
        left = time_budget - (time.perf_counter() - start)
        if left <= 0:
            break
        if keep_order is not None and list(order) != list(keep_order):
            continue  # its schedules would leave the class
        # with a kept order, the search keeps its first computations in that order
        consider(cut_peak(graph, order, B, caps, time_limit=left, best_effort=True, keep_first=keep_order is not None),
                 f"peak-cutting local search from the {name} order")
    return rec
