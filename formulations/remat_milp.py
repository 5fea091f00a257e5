"""Rematerialization as a MILP over stages of a fixed order (Checkmate).

Reference: P. Jain, A. Jain, A. Nrusimha, A. Gholami, P. Abbeel, K. Keutzer,
I. Stoica, J. Gonzalez, "Checkmate: Breaking the Memory Wall with Optimal
Tensor Rematerialization", MLSys 2020 (the "stage" formulation, Sec. 4).

Let ``pi = (o_0, ..., o_{n-1})`` be the given order. Stage ``t`` ends with the
first computation of ``o_t``; inside a stage, operators run in the order of
``pi``. Variables (all indices are positions in ``pi``):

* ``R[t,i]`` (binary, i <= t): ``o_i`` is computed in stage t; ``R[t,t] = 1``.
* ``S[t,j]`` (binary): tensor j is resident when stage t starts (j produced by
  an operator of position < t, or a non-pinned graph input).
* ``F[t,j,k]`` (continuous in [0,1], k a consumer of j or its producer):
  j is freed right after position k of stage t. Upper bounds make it 1 only
  when that is allowed: ``F <= R[t,k]``, ``F <= 1 - S[t+1,j]``,
  ``F <= 1 - R[t,c]`` for every later consumer c of j in the stage.
* ``M[t,k]`` (continuous): resident bytes after position k of stage t.

Constraints: a computation needs its inputs (``R[t,c] <= S[t,j] + R[t,p(j)]``),
retention needs presence (``S[t+1,j] <= S[t,j] + R[t,p(j)]``), recompute only
after free (``R[t,p(j)] + S[t,j] <= 1``), caps (``sum_t R[t,i] <= 1 + c_i``),
required outputs resident at the end, and memory: while ``o_k`` runs in
stage t, ``M[t,k-1] + R[t,k] * (out_k + ws_k) <= B`` with
``M[t,k] = M[t,k-1] + R[t,k] out_k - sum_j size_j F[t,j,k]``.

What it can express: any schedule whose *first* computations follow ``pi``,
with any recomputations in between (at most one computation of each operator
per stage), multi-output operators, workspace, pinned inputs, required
outputs, per-operator caps (unbounded caps are exact: at most n runs each).
What it cannot: a different order of first computations (the main
limitation: the CP model of formulations/remat_cpsat.py lifts it), or two
computations of one operator within one stage (never useful: the second
could reuse the first's outputs only if they were kept). The memory it
accounts is an upper bound of the evaluator's (a tensor kept across a stage
that does not use it counts until the stage ends); the decoded schedule frees
every tensor right after its last use in the stage, so its evaluated peak is
at most the model's and its compute equals the model's objective exactly.

Size: O(n^2) binaries R and S, O(n x edges) continuous F.

Shape (as every encoding of the project): :func:`build_remat_milp` returns a
:class:`RematMILP` whose :meth:`RematMILP.hint` loads a schedule as a warm start and
whose :meth:`RematMILP.decode` reads the solved variables back as a schedule; solving
lives in ``memsched.solvers.remat.milp``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .graph import Graph
from .schedule import COMPUTE, FREE, Schedule

__all__ = ["RematMILP", "build_remat_milp", "MIP_SOLVERS", "BuildDeadline"]

MIP_SOLVERS = ("highs", "appsi_highs", "cbc", "glpk", "gurobi", "cplex", "scip", "xpress")


class BuildDeadline(Exception):
    """:func:`build_remat_milp` passed its ``deadline`` (``time.perf_counter()`` seconds)
    before the model was complete; ``args[0]`` says how far it got."""


@dataclass
class RematMILP:
    """The Pyomo model of the stage MILP and what :meth:`hint` and :meth:`decode` need.

    ``order`` is the stage order (operator indices); ``tens`` the modelled tensors;
    ``ppos``/``cons_pos`` the order positions of each tensor's producer (-1: a graph
    input) and consumers; ``unit``/``const_bytes`` the memory unit and the
    always-resident bytes left out of the model; ``S_set`` the index set of ``S``."""

    model: object  # pyomo ConcreteModel
    graph: Graph
    order: list
    tens: list
    ppos: dict
    cons_pos: dict
    unit: int
    const_bytes: int
    S_set: set
    stats: dict = field(default_factory=dict)
    deadline: float | None = None

    def check_deadline(self, where: str) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise BuildDeadline(f"the model build reached its deadline at {where}")

    def hint(self, schedule: Schedule) -> bool:
        """Give every variable (R, S, F, M and P) the value of ``schedule`` and return True
        when that assignment satisfies every constraint; otherwise leave the values unset
        and return False. Only schedules of the stage class (first computations in the
        model's order, each stage's recomputations in increasing position, nothing after
        the last stage) can be represented; the model may also count more memory than the
        evaluator (a tensor it can free only at a reader or producer of the stage), so a
        schedule within the budget can still be rejected. O(n^2 + model size)."""
        stages = _stages_of(self, schedule)
        if stages is None:
            return _clear(self.model)
        R, S = stages
        F = _frees_of(self, R, S)
        M = _memory_of(self, R, S, F)
        _load(self, R, S, F, M)
        return _all_satisfied(self.model) or _clear(self.model)

    def decode(self) -> Schedule:
        """The schedule of the loaded solution: stage by stage, computations in order, every
        tensor freed right after its last use within the stage unless retained. O(n^2 + tensors n)."""
        return _decode(self)


def build_remat_milp(graph: Graph, budget: int | None, caps: list[int | None], *, objective: str = "compute",
                     compute_budget: float | None = None, order: list[int] | None = None,
                     deadline: float | None = None) -> RematMILP:
    """Build Checkmate's stage MILP (module docstring) in Pyomo.

    Parameters
    ----------
    graph : Graph
    budget : int or None
        Bytes; the memory limit for ``objective="compute"``, an optional upper limit on
        the peak variable for ``objective="peak"``.
    caps : list of (int or None)
        Extra computations per operator (None: unbounded, exact since a stage computes
        each operator at most once).
    objective : "compute" or "peak"
    compute_budget : float, optional
        With ``objective="peak"``: total compute at most this.
    order : list of int, optional
        The stage order (default: the graph's given order).
    deadline : float, optional
        ``time.perf_counter()`` value; checked between groups of constraints (each stage
        of the memory constraints), so that a time limit covers the build.

    Returns
    -------
    RematMILP

    Raises
    ------
    BuildDeadline
        The deadline passed before the model was complete.

    Complexity
    ----------
    O(n^2) binaries, O(n x edges) continuous variables and constraints.

    References
    ----------
    Jain et al., "Checkmate: Breaking the Memory Wall with Optimal Tensor
    Rematerialization", MLSys 2020, Sec. 4.
    """
    import pyomo.environ as pyo

    enc = _index_sets(graph, order)
    m = pyo.ConcreteModel(name="checkmate-stage")
    n = graph.n_ops
    R_idx = [(t, i) for t in range(n) for i in range(t + 1)]
    S_idx = [(t, j) for j in enc.tens for t in range(max(enc.ppos[j] + 1, 0), n)]
    F_idx = _free_index(enc, n)
    m.R = pyo.Var(R_idx, domain=pyo.Binary)
    m.S = pyo.Var(S_idx, domain=pyo.Binary)
    m.F = pyo.Var(F_idx, bounds=(0, 1))
    m.M = pyo.Var(R_idx, bounds=(0, None))
    m.c = pyo.ConstraintList()
    enc.model = m
    enc.deadline = deadline
    enc.check_deadline("variables")
    _add_presence(enc, caps)
    enc.check_deadline("dependencies")
    _add_free_bounds(enc, F_idx)
    enc.check_deadline("free bounds")
    cap_expr = _add_capacity(enc, objective, budget)
    _add_memory(enc, F_idx, cap_expr)
    cost = [graph.cost[enc.order[i]] for i in range(n)]
    compute_expr = sum(cost[i] * m.R[t, i] for (t, i) in R_idx)
    if objective == "compute":
        m.obj = pyo.Objective(expr=compute_expr, sense=pyo.minimize)
    else:
        if compute_budget is not None:
            m.c.add(compute_expr <= compute_budget)
        m.obj = pyo.Objective(expr=m.P, sense=pyo.minimize)
    enc.stats = {"binaries": len(R_idx) + len(S_idx), "continuous": len(F_idx) + len(R_idx), "constraints": len(m.c)}
    return enc


def _index_sets(g: Graph, order) -> RematMILP:
    """The model-free part: stage order, modelled tensors (produced ones and consumed
    freeable inputs), producer/consumer positions, memory unit."""
    pi = list(order) if order is not None else g.given_order()
    pos = [0] * g.n_ops
    for k, v in enumerate(pi):
        pos[v] = k
    keep_const = g.always_resident_idx()
    tens = [j for j in range(g.n_tensors) if (g.producer[j] != -1) or (j not in keep_const and g.consumers[j])]
    ppos = {j: (pos[g.producer[j]] if g.producer[j] != -1 else -1) for j in tens}
    cons_pos = {j: sorted(pos[c] for c in g.consumers[j]) for j in tens}
    S_set = set((t, j) for j in tens for t in range(max(ppos[j] + 1, 0), g.n_ops))
    return RematMILP(model=None, graph=g, order=pi, tens=tens, ppos=ppos, cons_pos=cons_pos, unit=g.memory_unit(),
                     const_bytes=g.always_resident(), S_set=S_set)


def _free_index(enc: RematMILP, n: int) -> list:
    """(t, j, k): tensor j may be freed right after position k (a reader or its producer) of stage t."""
    F_idx = []
    for j in enc.tens:
        p = enc.ppos[j]
        spots = sorted(set(enc.cons_pos[j]) | ({p} if p >= 0 else set()))
        for t in range(max(p, 0), n):
            F_idx.extend((t, j, k) for k in spots if k <= t)
    return F_idx


def _S(enc, t, j):
    return enc.model.S[t, j] if (t, j) in enc.S_set else 0


def _Rp(enc, t, j):
    """R of j's producer in stage t (0 for inputs / not yet available)."""
    p = enc.ppos[j]
    return enc.model.R[t, p] if 0 <= p <= t else 0


def _add_presence(enc: RematMILP, caps) -> None:
    """R[t,t] = 1, inputs resident at stage 0, dependencies, retention, recompute only
    after free, required outputs at the end, caps."""
    g, m = enc.graph, enc.model
    n, c, R, S, pi = g.n_ops, m.c, m.R, m.S, enc.order
    keep_const = g.always_resident_idx()
    for t in range(n):
        R[t, t].fix(1)
    for j in enc.tens:
        if enc.ppos[j] == -1:
            S[0, j].fix(1)
    for t in range(n):
        for k in range(t + 1):
            for j in g.op_in[pi[k]]:
                if j not in keep_const:
                    c.add(R[t, k] <= _S(enc, t, j) + _Rp(enc, t, j))
    for j in enc.tens:
        p = enc.ppos[j]
        for t in range(max(p + 1, 0), n - 1):
            c.add(S[t + 1, j] <= _S(enc, t, j) + _Rp(enc, t, j))
        if p >= 0:
            for t in range(p + 1, n):
                c.add(R[t, p] + S[t, j] <= 1)
    for j in enc.tens:
        if j in g.output_idx:
            c.add(_S(enc, n - 1, j) + _Rp(enc, n - 1, j) >= 1)
    for i in range(n):
        cap = caps[pi[i]] if caps is not None else None
        if cap is not None and cap < n - 1 - i:
            c.add(sum(R[t, i] for t in range(i, n)) <= 1 + cap)


def _add_free_bounds(enc: RematMILP, F_idx) -> None:
    """F[t,j,k] <= R[t,k]; <= 1 - S[t+1,j]; <= 1 - R[t,c'] for every later consumer c' <= t;
    a required output is never freed in the last stage."""
    g, m = enc.graph, enc.model
    n = g.n_ops
    for (t, j, k) in F_idx:
        m.c.add(m.F[t, j, k] <= m.R[t, k])
        if t + 1 < n:
            if (t + 1, j) in enc.S_set:
                m.c.add(m.F[t, j, k] <= 1 - m.S[t + 1, j])
        elif j in g.output_idx:
            m.F[t, j, k].fix(0)
        for q in enc.cons_pos[j]:
            if k < q <= t:
                m.c.add(m.F[t, j, k] <= 1 - m.R[t, q])


def _add_capacity(enc: RematMILP, objective: str, budget):
    """The memory limit in units: a constant (compute objective) or the peak variable P."""
    import pyomo.environ as pyo

    g, m = enc.graph, enc.model
    if objective == "compute":
        return (budget - enc.const_bytes) // enc.unit
    m.P = pyo.Var(bounds=(0, None))
    if budget is not None:
        m.c.add(m.P <= (budget - enc.const_bytes) // enc.unit)
    # the evaluator's peak includes the initial state: every graph input is resident
    # before the first event, read or not (an unread input is freed only afterwards)
    keep_const = g.always_resident_idx()
    m.c.add(m.P >= sum(g.size[j] for j in g.input_idx if j not in keep_const) // enc.unit)
    return m.P


def _add_memory(enc: RematMILP, F_idx, cap_expr) -> None:
    """While o_k runs in stage t: M[t,k-1] + R[t,k] (out_k + ws_k) <= capacity, with
    M[t,k] = M[t,k-1] + R[t,k] out_k - sum_j size_j F[t,j,k]."""
    g, m = enc.graph, enc.model
    n, pi, unit = g.n_ops, enc.order, enc.unit
    sz = {j: g.size[j] // unit for j in enc.tens}
    out_units = [sum(g.size[j] for j in g.op_out[pi[k]]) // unit for k in range(n)]
    ws_units = [g.workspace[pi[k]] // unit for k in range(n)]
    frees_at: dict = {}
    for (t, j, k) in F_idx:
        frees_at.setdefault((t, k), []).append(j)
    for t in range(n):
        enc.check_deadline(f"memory of stage {t}")
        prev = sum(sz[j] * m.S[t, j] for j in enc.tens if (t, j) in enc.S_set)
        for k in range(t + 1):
            m.c.add(prev + (out_units[k] + ws_units[k]) * m.R[t, k] <= cap_expr)
            m.c.add(m.M[t, k] == prev + out_units[k] * m.R[t, k]
                    - sum(sz[j] * m.F[t, j, k] for j in frees_at.get((t, k), ())))
            prev = m.M[t, k]


# ------------------------------------------------------------------ decode
def _decode(enc: RematMILP) -> Schedule:
    g, model = enc.graph, enc.model
    n, pi = g.n_ops, enc.order
    R = {(t, i): model.R[t, i].value is not None and model.R[t, i].value > 0.5 for t in range(n) for i in range(t + 1)}

    def Sv(t, j):
        return (t, j) in enc.S_set and model.S[t, j].value is not None and model.S[t, j].value > 0.5

    keep = g.pinned_idx | g.output_idx
    resident = bytearray(g.n_tensors)
    events: list[tuple[int, int]] = []
    for j in g.input_idx:
        resident[j] = 1
        if j not in keep and not g.consumers[j]:
            events.append((FREE, j))
            resident[j] = 0
    posv = {v: k for k, v in enumerate(pi)}
    for t in range(n):
        comp = [k for k in range(t + 1) if R[(t, k)]]
        last_use: dict[int, int] = {}  # last position in this stage at which each tensor is read
        for k in comp:
            for j in g.op_in[pi[k]]:
                last_use[j] = k

        def retained(j):
            return Sv(t + 1, j) if t + 1 < n else j in g.output_idx

        # tensors not read in this stage and not retained: free at the stage start
        for j in range(g.n_tensors):
            if resident[j] and j not in g.pinned_idx and j not in last_use and not retained(j) \
                    and not (g.producer[j] != -1 and R.get((t, posv[g.producer[j]]), False)):
                if j in g.input_idx and j in g.output_idx:
                    continue
                events.append((FREE, j))
                resident[j] = 0
        for k in comp:
            v = pi[k]
            events.append((COMPUTE, v))
            for j in g.op_out[v]:
                resident[j] = 1
            for j in list(g.op_in[v]) + list(g.op_out[v]):
                if not resident[j] or j in g.pinned_idx or (j in g.input_idx and j in g.output_idx):
                    continue
                if last_use.get(j, -1) <= k and not retained(j):
                    events.append((FREE, j))
                    resident[j] = 0
    return Schedule(tuple(events))


# ------------------------------------------------------------------ hint
def _stages_of(enc: RematMILP, sched: Schedule):
    """(R, S) of a schedule of the stage class, or None when it is not in the class."""
    g, n = enc.graph, enc.graph.n_ops
    pos = {v: k for k, v in enumerate(enc.order)}
    R = {(t, i): 0 for t in range(n) for i in range(t + 1)}
    stage, last, seen = 0, -1, set()
    resident = set(g.input_idx)
    starts: dict[int, set] = {0: set(resident)}
    for kind, x in sched.events:
        if kind == COMPUTE:
            if stage >= n:
                return None  # a computation after the last first computation
            k = pos[x]
            if k <= last or k > stage or (k < stage and x not in seen) or (k == stage and x in seen):
                return None
            R[stage, k] = 1
            last = k
            resident.update(g.op_out[x])
            if k == stage:
                seen.add(x)
                stage += 1
                last = -1
                starts[stage] = set(resident)
        else:
            resident.discard(x)
        if stage < n and stage in starts and kind == FREE and last == -1:
            starts[stage].discard(x)  # frees before the stage's first computation
    if stage != n:
        return None
    S = {}
    for (t, j) in enc.S_set:
        p = enc.ppos[j]
        S[t, j] = 1 if (j in starts.get(t, set()) and not (p >= 0 and R.get((t, p), 0))) else 0
    for j in enc.tens:  # inputs: resident at the start (fixed to 1 in the model)
        if enc.ppos[j] == -1:
            S[0, j] = 1
    return R, S


def _frees_of(enc: RematMILP, R, S) -> dict:
    """F: each tensor freed at the last position of the stage that touches it, unless retained."""
    n = enc.graph.n_ops
    F = {key: 0 for key in enc.model.F}
    for t in range(n):
        for j in enc.tens:
            p = enc.ppos[j]
            present = S.get((t, j), 0) or (0 <= p <= t and R[t, p])
            if not present:
                continue
            kept = S.get((t + 1, j), 0) if t + 1 < n else (j in enc.graph.output_idx)
            if kept:
                continue
            spots = [k for k in set(enc.cons_pos[j]) | ({p} if p >= 0 else set()) if k <= t and R[t, k]]
            if spots and (t, j, max(spots)) in F:
                F[t, j, max(spots)] = 1
    return F


def _memory_of(enc: RematMILP, R, S, F) -> dict:
    g, n, pi, unit = enc.graph, enc.graph.n_ops, enc.order, enc.unit
    sz = {j: g.size[j] // unit for j in enc.tens}
    out_units = [sum(g.size[j] for j in g.op_out[pi[k]]) // unit for k in range(n)]
    frees_at: dict = {}
    for (t, j, k), val in F.items():
        if val:
            frees_at.setdefault((t, k), []).append(j)
    M = {}
    for t in range(n):
        prev = sum(sz[j] * S.get((t, j), 0) for j in enc.tens if (t, j) in enc.S_set)
        for k in range(t + 1):
            M[t, k] = prev + out_units[k] * R[t, k] - sum(sz[j] for j in frees_at.get((t, k), ()))
            prev = M[t, k]
    return M


def _load(enc: RematMILP, R, S, F, M) -> None:
    g, model = enc.graph, enc.model
    n, pi, unit = g.n_ops, enc.order, enc.unit

    def put(var, v):
        if not var.fixed:
            var.set_value(v)

    for (t, i), v in R.items():
        put(model.R[t, i], v)
    for key in model.S:
        put(model.S[key], S.get(key, 0))
    for key, v in F.items():
        put(model.F[key], v)
    for key, v in M.items():
        put(model.M[key], max(0, v))
    if hasattr(model, "P"):
        sz = {j: g.size[j] // unit for j in enc.tens}
        out_units = [sum(g.size[j] for j in g.op_out[pi[k]]) // unit for k in range(n)]
        ws_units = [g.workspace[pi[k]] // unit for k in range(n)]

        def start(t):
            return sum(sz[j] * S.get((t, j), 0) for j in enc.tens if (t, j) in enc.S_set)

        need = max([0] + [(M[t, k - 1] if k else start(t)) + (out_units[k] + ws_units[k]) * R[t, k]
                          for t in range(n) for k in range(t + 1)])
        keep_const = g.always_resident_idx()
        init = sum(g.size[j] for j in g.input_idx if j not in keep_const) // unit
        model.P.set_value(max(need, init))


def _all_satisfied(model) -> bool:
    import pyomo.environ as pyo

    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body, exception=False)
        if body is None:
            return False
        if (con.has_lb() and body < pyo.value(con.lower) - 1e-6) or (con.has_ub() and body > pyo.value(con.upper) + 1e-6):
            return False
    return True


def _clear(model) -> bool:
    import pyomo.environ as pyo

    for v in model.component_data_objects(pyo.Var):
        if not v.fixed:
            v.set_value(None, skip_validation=True)
    return False
