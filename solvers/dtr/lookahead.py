"""Lookahead eviction policies (memsched; not in simrd): the commit-lag axis.

With H operators of known future, at each eviction the runtime looks up, for every
candidate storage, its next use in the replay schedule (the next top-level operator
reading one of its tensors, or the final pin), measured in operators from now; uses
inside recomputation cascades are not part of the known future (docs/dtr.md).

* candidates not needed within the next H operators go first, least h_DTR among them;
* otherwise ``lookahead-H`` (H an integer, or ``inf``): least e*(s) / (size x (distance
  + 1)), h_DTR with the staleness proxy replaced by the known distance to the next use;
  ``belady``: the candidate needed furthest in the future (ties: least h_DTR), Belady's
  rule (L. A. Belady, IBM Systems Journal 5(2), 1966), which ignores recompute cost.

h_DTR and e*(s) come from the heuristics table (:mod:`.heuristics`, row ``dtr``).
"""
from __future__ import annotations

import bisect
import math

from memsched.instances.dtr_trace import COMPUTE, PIN

__all__ = ["LookaheadMixin", "horizon"]

INF = math.inf


def horizon(name: str):
    """The horizon H of a canonical lookahead name (``belady``, ``lookahead-inf``: INF;
    ``lookahead-K``: K), None for any other heuristic."""
    if name in ("belady", "lookahead-inf"):
        return INF
    if name.startswith("lookahead-"):
        return int(name.split("-")[1])
    return None


class LookaheadMixin:
    """Next-use tables and the lookahead choice of :class:`Runtime`."""

    def _build_uses(self) -> None:
        """``t_uses[t]``: the schedule positions that read tensor t (operators, the final
        pin), increasing; ``op_rank[k]``: the number of operators before position k.

        Complexity: O(schedule + arguments)."""
        uses: list[list[int]] = [[] for _ in range(self.trace.n_tensors)]
        ops = self.trace.ops
        for k, (kind, x) in enumerate(self.trace.schedule):
            if kind == COMPUTE:
                for a in ops[x].args:
                    if not uses[a] or uses[a][-1] != k:
                        uses[a].append(k)
            elif kind == PIN:
                uses[x].append(k)
        self.t_uses = uses
        # schedule position -> number of COMPUTE commands before it (distance in operators)
        cnt, acc = [], 0
        for kind, _ in self.trace.schedule:
            cnt.append(acc)
            if kind == COMPUTE:
                acc += 1
        cnt.append(acc)
        self.op_rank = cnt

    def _next_use(self, s: int) -> float:
        """Schedule position of the next use of storage ``s`` from now (INF: none).
        Complexity: O(tensors of s x log uses)."""
        pos, uses, best = self.pos, self.t_uses, INF
        for t in self.st_tensors[s]:
            u = uses[t]
            i = bisect.bisect_left(u, pos)
            if i < len(u) and u[i] < best:
                best = u[i]
        return best

    def _choose_lookahead(self, pool, clock) -> int:
        """The lookahead choice over ``pool`` (see the module docstring): the last
        candidate of least key in pool order.

        Complexity: O(pool x next-use lookup)."""
        H = self.lookahead
        rank = self.op_rank
        now = rank[self.pos]
        pure = self.pure_belady
        h_dtr, e_star = self.cost_dtr, self.num_dtr
        size = self.st_size
        best_key, bs = None, None
        for s in pool:
            nu = self._next_use(s)
            dist = INF if nu == INF else rank[nu] - now
            if dist > H:
                key = (0, h_dtr(s, clock))
            elif pure:
                key = (1, -dist, h_dtr(s, clock))
            else:
                den = size[s] * (dist + 1)
                key = (1, e_star(s) / den if den > 0 else INF)
            if best_key is None or key <= best_key:
                best_key, bs = key, s
        return bs
