"""A declarative CP-SAT model of the peak-minimizing ordering problem.

Problem: choose a topological order of the operators (no recomputation) that
minimizes the peak memory under the project's semantics (formulations/evaluator.py
with frees after last use, ``Schedule.from_order``).

Model (built by :func:`build_order_model`, solved by :func:`memsched.solvers.ordering.cpsat.solve_order_model`):

* one integer position ``pos[v]`` in ``0..n-1`` per operator, all different, with
  domain ``[#ancestors(v), n-1-#descendants(v)]`` and ``pos[p] < pos[c]`` for
  every edge of the transitive reduction;
* every tensor is an interval of the step axis: produced at its producer's step,
  live through the step of its last consumer (``end = max(pos[c]) + 1``); required
  outputs live to the end; non-required tensors nobody reads live only during
  their producer's step; freeable graph inputs live from step 0 to their last use;
* operator workspace is an interval of length one at the operator's step;
* one cumulative constraint bounds the live bytes at every step by
  ``peak - (pinned and required graph inputs)``;
* ``peak >= lower_bound`` (the trap bound: a floor that lets CP-SAT close the gap
  as soon as it finds a matching order), ``peak <= upper_bound - 1`` when only
  improving orders are wanted, extra precedences known to hold in every
  improving order, and ``minimize peak``;
* symmetry breaking: operators with identical inputs, consumers, sizes and
  workspace are interchangeable and are ordered by index;
* the hint is the best known order.

Memory at step k (while the k-th operator runs) is then exactly the evaluator's
``resident + outputs + workspace``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .graph import Graph

__all__ = ["OrderModel", "OrderSolution", "build_order_model"]


@dataclass
class OrderModel:
    graph: Graph
    model: object  # cp_model.CpModel
    pos: list  # IntVar per operator
    peak: object  # IntVar
    lower_bound: int
    upper_bound: int | None
    n_precedences: int = 0
    n_symmetry: int = 0


@dataclass
class OrderSolution:
    status: str  # "optimal" | "feasible" | "infeasible" | "unknown"
    order: list[int] | None
    peak: int | None  # the model's objective for ``order``
    bound: int  # proven lower bound on the optimum (within the model's constraints)
    wall_s: float
    interrupted: bool = False
    stats: dict = field(default_factory=dict)


def _symmetry_classes(g: Graph) -> list[list[int]]:
    """Groups of interchangeable operators (same inputs, same consumer sets of outputs in
    the same size pattern, same workspace), each group in index order."""
    kept = g.pinned_idx | g.output_idx
    groups: dict = {}
    for v in range(g.n_ops):
        outs = tuple(sorted((g.size[j], tuple(sorted(g.consumers[j])), j in kept) for j in g.op_out[v]))
        key = (tuple(sorted(g.op_in[v])), outs, g.workspace[v])
        groups.setdefault(key, []).append(v)
    return [vs for vs in groups.values() if len(vs) > 1]


def build_order_model(g: Graph, *, lower_bound: int = 0, upper_bound: int | None = None,
                      precedences: Sequence[tuple[int, int]] = (), hint: Sequence[int] | None = None,
                      symmetry: bool = True) -> OrderModel:
    """Build the CP-SAT model (see the module docstring).

    ``upper_bound``: if given, only orders with peak < upper_bound are feasible (the
    model is then infeasible exactly when no order beats it). ``precedences``: pairs
    (a, b) meaning a runs before b in every order the caller cares about (for instance
    every order with peak < upper_bound). ``hint``: an order (operator indices) used as
    the solution hint.
    """
    from ortools.sat.python import cp_model

    n = g.n_ops
    m = cp_model.CpModel()
    anc, desc = g.reach_masks()
    pos = [m.new_int_var(anc[v].bit_count(), n - 1 - desc[v].bit_count(), f"pos_{v}") for v in range(n)]
    if n:
        m.add_all_different(pos)
    pred = g.op_pred()
    for c in range(n):
        # transitive reduction: skip p if p is an ancestor of another predecessor of c
        ps = pred[c]
        for p in ps:
            if any((anc[q] >> p) & 1 for q in ps if q != p):
                continue
            m.add(pos[p] < pos[c])
    n_prec = 0
    for a, b in precedences:
        if (anc[b] >> a) & 1:
            continue
        m.add(pos[a] < pos[b])
        n_prec += 1
    kept = g.pinned_idx | g.output_idx
    const = 0
    intervals, demands = [], []
    horizon = n
    for j in range(g.n_tensors):
        sz = g.size[j]
        p = g.producer[j]
        cons = g.consumers[j]
        if sz == 0:
            continue
        if p == -1:
            if j in kept:
                const += sz
                continue
            if not cons:
                continue  # freed before the first operator
            start = 0
        else:
            start = pos[p]
        if j in kept:
            end = horizon
        elif not cons:
            end = pos[p] + 1
        elif len(cons) == 1:
            end = pos[cons[0]] + 1
        else:
            lo = max(anc[c].bit_count() for c in cons)
            e = m.new_int_var(lo, n - 1, f"last_{j}")
            m.add_max_equality(e, [pos[c] for c in cons])
            end = e + 1
        if p == -1:
            iv = m.new_interval_var(0, end, end, f"t_{j}")
        elif j in kept:
            iv = m.new_interval_var(start, n - start, horizon, f"t_{j}")
        elif not cons:
            iv = m.new_fixed_size_interval_var(start, 1, f"t_{j}")
        else:
            length = m.new_int_var(1, n, f"len_{j}")
            iv = m.new_interval_var(start, length, end, f"t_{j}")
        intervals.append(iv)
        demands.append(sz)
    for v in range(n):
        if g.workspace[v]:
            intervals.append(m.new_fixed_size_interval_var(pos[v], 1, f"ws_{v}"))
            demands.append(g.workspace[v])
    total = sum(g.size) + max(g.workspace, default=0)
    # the evaluator's peak includes the initial state (every graph input resident)
    lb = max(lower_bound, const, g.resident_at_start())
    ub = total if upper_bound is None else min(total, upper_bound - 1)
    peak = m.new_int_var(min(lb, ub) if ub >= lb else lb, max(ub, lb), "peak")
    if upper_bound is not None and ub < lb:
        m.add(peak <= ub)  # infeasible on purpose: nothing beats the upper bound
    m.add_cumulative(intervals, demands, peak - const)
    n_sym = 0
    if symmetry:
        for vs in _symmetry_classes(g):
            for a, b in zip(vs, vs[1:]):
                m.add(pos[a] < pos[b])
                n_sym += 1
    m.minimize(peak)
    if hint is not None:
        for k, v in enumerate(hint):
            m.add_hint(pos[v], k)
    return OrderModel(g, m, pos, peak, lb, upper_bound, n_prec, n_sym)
