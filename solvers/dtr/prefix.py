"""Prefix sharing between replays of one trace at different budgets.

A replay reads its budget only in the tests ``memory + need > budget``. At a top-level
schedule position k, let ``[eq_lo, eq_hi)`` be the interval of the tests made so far
(:attr:`Runtime.eq_lo`: the largest tested value <= budget, ``eq_hi``: the smallest
tested value > budget). Every budget b' in that interval answers every test so far as the
run did, so an independent run at b' reaches position k in exactly the same state (by
induction over the tests), and its own interval at k is the same one (no tested value lies
between the two budgets). A copy of the state taken at k (:meth:`Runtime.fork`) and run on
from k with budget b' (:meth:`Runtime.resume`) therefore makes every decision of an
independent replay at b' and ends with the same outcome, clock, peak, evictions and
budget interval.

:class:`PrefixStore` keeps such snapshots of the replays of one (trace, heuristic,
overhead limit, seed), each with its position and interval; :func:`replay_shared` starts a
replay from the deepest snapshot whose interval holds its budget, and snapshots the run
at chosen positions for later replays. Snapshots are taken every ``every`` commands while
the run's interval is at least ``min_width`` bytes wide (a narrower interval holds no other
sampled budget), at most ``per_run`` per run; the store keeps the ``capacity`` most
recently used, and a dropped snapshot's state is cleared at once (its bound functions
make it a reference cycle).

Measured limit (docs/dtr.md, BENCHMARKS.md "DTR dense sweeps"): on the shared traces,
replays at budgets one or more resolution steps apart first differ near the first
memory pressure, after 1-15 % of a replay's time, so this saves at most that share.
"""
from __future__ import annotations

import gc
import time

from .runtime import Runtime

__all__ = ["PrefixStore", "replay_shared"]


class PrefixStore:
    """Snapshots ``(position, eq_lo, eq_hi, runtime)`` of the replays of one (trace,
    heuristic, overhead limit, seed).

    Parameters
    ----------
    n_commands : int
        Length of the trace's schedule.
    min_width : int
        Bytes; no snapshot of a run whose interval is narrower (typically one resolution
        step of the sweep).
    every : int, optional
        Commands between two snapshots of a run (default: 1/64 of the schedule).
    per_run, capacity : int
        At most ``per_run`` snapshots per run; the store keeps the ``capacity`` most
        recently used snapshots. One snapshot per run, ``every`` commands past the position
        the run started from, was the fastest setting measured (more forks cost more than
        they save: a fork copies the whole state, about 10 ms on the shared traces, and the
        snapshots make every garbage collection longer); resumed runs then extend the
        deepest shared prefix step by step.
    """

    def __init__(self, n_commands: int, min_width: int, every: int | None = None, per_run: int = 1,
                 capacity: int = 24):
        self.min_width = min_width
        self.every = every or max(1, n_commands // 64)
        self.per_run = per_run
        self.capacity = capacity
        self.snaps: list[list] = []  # [pos, lo, hi, runtime, last_used]
        self.tick = 0
        self.forks = 0
        self.fork_s = 0.0

    def best(self, budget):
        """The deepest snapshot whose interval holds ``budget``: ``(pos, runtime)``, or None.
        Complexity: O(snapshots)."""
        best = None
        for e in self.snaps:
            if e[1] <= budget < e[2] and (best is None or e[0] > best[0]):
                best = e
        if best is None:
            return None
        self.tick += 1
        best[4] = self.tick
        return best[0], best[3]

    def hook(self):
        """A checkpoint function for one run (:meth:`Runtime.resume`)."""
        taken = [0]

        def checkpoint(rt, k):
            if k == 0:  # the initial state: nothing to share
                return self.every
            if rt.eq_hi - rt.eq_lo < self.min_width or taken[0] >= self.per_run:
                return -1
            if not any(e[0] == k and e[1] == rt.eq_lo and e[2] == rt.eq_hi for e in self.snaps):
                self._add(k, rt)
                taken[0] += 1
            return k + self.every
        return checkpoint

    def _add(self, k: int, rt) -> None:
        t = time.perf_counter()
        enabled = gc.isenabled()
        gc.disable()  # a fork allocates many containers: no collection in the middle
        try:
            snap = rt.fork(deadline=None)
        finally:
            if enabled:
                gc.enable()
        self.tick += 1
        self.snaps.append([k, rt.eq_lo, rt.eq_hi, snap, self.tick])
        if len(self.snaps) > self.capacity:
            old = min(self.snaps, key=lambda e: e[4])
            self.snaps.remove(old)
            old[3].__dict__.clear()  # break the cycles through its bound functions now
        self.forks += 1
        self.fork_s += time.perf_counter() - t


def replay_shared(trace, budget: int, heuristic: str, *, remat_limit, seed: int = 0, deadline=None,
                  store: PrefixStore) -> tuple[str, Runtime, int]:
    """One replay at ``budget`` that starts from the deepest snapshot of ``store`` whose
    interval holds the budget (else from the start) and snapshots itself into the store.

    Returns
    -------
    (outcome, runtime, start)
        ``outcome`` as :meth:`Runtime.run` ('ok', 'oom', 'remat_exceeded'; TimeoutError
        past ``deadline``); ``start``: the schedule position the run resumed at (0: a
        fresh run). The runtime's clock, peak, evictions and ``eq_lo`` / ``eq_hi`` equal
        those of an independent replay at ``budget``.

    Complexity: the replay from ``start`` on, plus at most ``store.per_run`` forks.
    """
    found = store.best(budget)
    if found is None:
        rt, start = Runtime(trace, budget, heuristic, remat_limit=remat_limit, seed=seed, deadline=deadline), 0
    else:
        start, snap = found
        enabled = gc.isenabled()
        gc.disable()
        try:
            rt = snap.fork(budget=budget, deadline=deadline)
        finally:
            if enabled:
                gc.enable()
    return rt.resume(start, store.hook()), rt, start
