"""Stage no-good cuts: the given-order stage relaxation made exact for cap 1 (docs/remat.md,
"Stage no-good cuts").

The given-order stage relaxation (``memsched.formulations.remat_given_relax``) leaves out the
order of the recomputations inside a stage, so its optimum need not be a schedule
(docs/remat-low-budgets.md, section 7: rl_n100 at 0.7 peaks at 34,680 > B = 32,423 with every
order inside each stage). This module closes that gap by logic-based Benders cuts, for caps of
at most 1 (each operator computed at most twice, Moccasin's benchmark setting):

* :func:`realize_stage` decides exactly whether one stage of a solution can be run within the
  budget: the tensors resident as the stage begins (``start``), the operators it may recompute
  (``ops``, each at most once, any subset, any order) and the tensors that must be resident
  at its end (``end``: the inputs of the stage's first computation and the tensors the
  solution keeps past it). A backward search over the last recomputation, holding exactly the
  tensors demanded later (the least memory for a fixed sequence).
* :class:`StageCuts` reads each stage's ``(start, ops, end)`` off a relaxation solution and,
  for a stage that cannot be run, adds the clause "some tensor relevant to the stage that was
  not resident is resident, or some relevant operator that was not recomputed is recomputed,
  or some tensor that had to be kept is not" (valid for every schedule of the class:
  docs/remat.md gives the argument).
* :func:`given_relaxation_with_cuts` solves, cuts, and solves again. When every stage of an
  optimal solution runs, the stages concatenated are a schedule of the class whose compute is
  the relaxation's optimum: optimal in the class.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from memsched.formulations.graph import Graph

__all__ = ["realize_stage", "StageCuts", "StageLimit", "CutsOutcome", "given_relaxation_with_cuts"]


class StageLimit(Exception):
    """:func:`realize_stage` explored ``max_nodes`` states without deciding."""


def realize_stage(g: Graph, room: int, start, ops, end, *, max_nodes: int = 200_000,
                  deadline: float | None = None) -> list | None:
    """An order of a subset of ``ops`` that runs one stage within ``room`` bytes (the budget
    minus the always-resident bytes), or None when no subset in any order does.

    ``start``: tensors resident as the stage begins (anything may be freed at once);
    ``end``: tensors that must be resident when it ends. Each operator of ``ops`` runs at most
    once; always-resident tensors are neither in ``start`` nor counted.

    Backward search: a state is (the tensors demanded after this point, the operators not yet
    placed). The last operator before the point must make one of the demanded tensors; while it
    runs, the demanded tensors it does not make and its inputs are resident, with its outputs
    and workspace (holding exactly what is demanded later is the least memory for a fixed
    sequence, and none of its outputs is resident before it runs, as the evaluator requires).
    A state whose demands are all in ``start`` is reached. Failed states are remembered.

    Raises :class:`StageLimit` after ``max_nodes`` states, or once ``time.perf_counter()`` passes
    ``deadline`` (checked every 256 states). O(states x |ops| x degree).
    """
    keep = g.always_resident_idx()
    size, ws = g.size, g.workspace
    start = frozenset(start)
    outs = {u: frozenset(g.op_out[u]) for u in ops}
    ins = {u: frozenset(g.op_in[u]) - keep for u in ops}
    obytes = {u: sum(size[j] for j in outs[u]) + ws[u] for u in ops}
    failed: set = set()
    nodes = [0]

    def dfs(need: frozenset, left: frozenset):
        if need <= start:
            return []
        key = (need, left)
        if key in failed:
            return None
        nodes[0] += 1
        if nodes[0] > max_nodes:
            raise StageLimit(f"stage search passed {max_nodes} states")
        if deadline is not None and not nodes[0] & 255 and time.perf_counter() > deadline:
            raise StageLimit("stage search reached its deadline")
        missing = need - start
        # an operator that makes a demanded tensor not in start is needed at some point; try those
        # first, then those that make a demanded tensor again (freeing its start copy earlier)
        cands = sorted((u for u in left if outs[u] & need), key=lambda u: (not (outs[u] & missing), u))
        for u in cands:
            before = (need - outs[u]) | ins[u]
            if sum(size[j] for j in need - outs[u] | ins[u]) + obytes[u] > room:
                continue
            got = dfs(frozenset(before), left - {u})
            if got is not None:
                return got + [u]
        failed.add(key)
        return None

    return dfs(frozenset(end) - keep, frozenset(ops))


@dataclass
class StageView:
    """One stage of a relaxation solution."""

    stage: int
    start: frozenset
    ops: tuple
    end: frozenset  # all tensors required at the end (constants and kept ones)
    kept: frozenset  # the part of ``end`` that the solution chose (S[i+1, j] = 1)


class StageCuts:
    """Reads stages off solutions of a built :class:`GivenRelaxation` and adds their cuts.

    ``rx`` must hold every stage (no window) and come from caps of at most 1."""

    def __init__(self, rx, B: int, *, max_nodes: int = 200_000):
        g = rx.graph
        self.rx, self.g, self.max_nodes = rx, g, max_nodes
        self.deadline: float | None = None  # a time.perf_counter() value: searches past it give up
        self.n = len(rx.order)
        self.keep = g.always_resident_idx()
        self.room = B - g.always_resident()
        self.S_at: dict = {}
        for (i, j), v in rx.S.items():
            self.S_at.setdefault(i, []).append((j, v))
        self.R_at: dict = {}
        for (i, u), v in rx.R.items():
            self.R_at.setdefault(i, []).append((u, v))
        self.cuts = 0
        self.literals = 0

    def view(self, value, i: int) -> StageView:
        """Stage i of the solution ``value`` (the solver's ``BooleanValue``)."""
        g, pi = self.g, self.rx.order
        start = frozenset(j for j, v in self.S_at.get(i, ()) if (v == 1 if isinstance(v, int) else value(v)))
        ops = tuple(u for u, v in self.R_at.get(i, ()) if value(v))
        if i == self.n:
            fixed = frozenset(j for j in g.output_idx if j not in self.keep)
            kept = frozenset()
        else:
            v = pi[i]
            fixed = frozenset(g.op_in[v]) - self.keep
            made = set(g.op_out[v])
            kept = frozenset(j for j, s in self.S_at.get(i + 1, ())
                             if j not in made and j not in fixed and not isinstance(s, int) and value(s))
        return StageView(i, start, ops, fixed | kept, kept)

    def realize(self, st: StageView) -> list | None:
        return realize_stage(self.g, self.room, st.start, st.ops, st.end, max_nodes=self.max_nodes,
                             deadline=self.deadline)

    def _closure(self, i: int, end) -> tuple[set, set]:
        """The operators of stage i (those with a literal) that can make a tensor demanded
        from ``end`` backwards, and the tensors so demanded."""
        g = self.g
        need = set(end) - self.keep
        ops: set = set()
        cand = [u for u, _ in self.R_at.get(i, ())]
        grew = True
        while grew:
            grew = False
            for u in cand:
                if u not in ops and need.intersection(g.op_out[u]):
                    ops.add(u)
                    need |= set(g.op_in[u]) - self.keep
                    grew = True
        return ops, need

    def _still_fails(self, st: StageView) -> bool:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return False  # out of time: the literal stays (the clause is valid either way)
        try:
            return self.realize(st) is None
        except StageLimit:
            return False

    def add_cut(self, st: StageView) -> int:
        """Add the stage's no-good (the stage cannot be run: ``realize`` returned None) and
        return the clause's length. Before that the triple is made as strong as the stage
        allows, one element at a time while the stage still cannot be run (each step keeps a
        valid cut and removes one literal): kept tensors dropped, then relevant tensors added
        to ``start``, then relevant operators added to ``ops``."""
        for j in sorted(st.kept):
            trial = StageView(st.stage, st.start, st.ops, st.end - {j}, st.kept - {j})
            if self._still_fails(trial):
                st = trial
        i = st.stage
        ops, need = self._closure(i, st.end)
        s_lits = {j: v for j, v in self.S_at.get(i, ()) if j in need and j not in st.start and not isinstance(v, int)}
        for j in sorted(s_lits, key=lambda j: -self.g.size[j]):
            trial = StageView(i, st.start | {j}, st.ops, st.end, st.kept)
            if self._still_fails(trial):
                st = trial
        r_lits = {u: v for u, v in self.R_at.get(i, ()) if u in ops and u not in st.ops}
        for u in sorted(r_lits):
            trial = StageView(i, st.start, st.ops + (u,), st.end, st.kept)
            if self._still_fails(trial):
                st = trial
        lits = [v for j, v in s_lits.items() if j not in st.start]
        lits += [v for u, v in r_lits.items() if u not in st.ops]
        S_next = dict(self.S_at.get(i + 1, ()))
        lits += [S_next[j].Not() for j in st.kept]
        self.rx.model.AddBoolOr(lits)
        self.cuts += 1
        self.literals += len(lits)
        return len(lits)


# The loop also cuts the failing stages of up to EXTRA_SOLUTIONS other incumbents of each round
# (the latest ones), with stage searches of at most EXTRA_MAX_NODES states, for at most
# EXTRA_SHARE of the round's solve time (at least 1 s); EXTRA_SOLUTIONS = 0 turns it off
# (docs/remat.md, "Cuts from every incumbent").
EXTRA_SOLUTIONS = 16
EXTRA_MAX_NODES = 20_000
EXTRA_SHARE = 0.25
# The first round's first phase (proofs.solve_relaxation) lasts at most CUTS_FIRST_S seconds,
# less than a single relaxation solve's RELAX_FIRST_S: a loop has several rounds, and the rows
# whose rounds the first pair proves are proved in a few seconds. Once a round is solved, its
# pair runs the later rounds alone (docs/remat.md, "Which subsolver pair goes first").
CUTS_FIRST_S = 10.0
# A schedule known below which better ones are sought (``below``, the caller's or one found by
# the loop) ends the loop once a round's proven bound reaches it; it is not added to the model
# as ``objective <= below - 1`` unless BELOW_AS_CONSTRAINT: with that constraint the last round
# must prove a model infeasible, which CP-SAT's core search did far more slowly on random_layered
# n100 at 0.7 (below = 3,433, 150 s: not decided with the constraint, seeds 0 and 1; without it
# "below-optimal" in 25.8 s and 38.0 s; docs/remat.md, "A known schedule ends the loop").
BELOW_AS_CONSTRAINT = False


def _disagree(what: str):
    """An answer of the loop contradicts the evaluator or a known schedule of the class: a bug."""
    from memsched.solvers.result import SolverDisagreement

    raise SolverDisagreement(f"stage cuts: {what}")


def _run_stages(cuts: "StageCuts", value, first: int, last: int):
    """Decide the stages first..last of the solution ``value``: the sequence of the stages that
    run with the given order's first computations between them, the views of the stages that
    cannot run, and the number of stages left undecided (search limit)."""
    pi = cuts.rx.order
    seq, bad, undecided = [], [], 0
    for i in range(first, last + 1):
        st = cuts.view(value, i)
        if st.ops:
            try:
                got = cuts.realize(st)
            except StageLimit:
                got, undecided = None, undecided + 1
                st = None
            if got is None:
                if st is not None:
                    bad.append(st)
                continue
            seq += got
        if i < len(pi):
            seq.append(pi[i])
    return seq, bad, undecided


class _Incumbents:
    """A solution callback keeping the R and S literals of the latest ``EXTRA_SOLUTIONS``
    incumbents of a solve (as bytes of 0/1), to be read by :meth:`StageCuts.view`."""

    @staticmethod
    def make(cuts: "StageCuts"):
        import collections

        from ortools.sat.python import cp_model

        lits = [v for v in cuts.rx.R.values()] + [v for v in cuts.rx.S.values() if not isinstance(v, int)]
        pos = {v.Index(): k for k, v in enumerate(lits)}

        class Rec(cp_model.CpSolverSolutionCallback):
            def __init__(self):
                super().__init__()
                self.sols = collections.deque(maxlen=EXTRA_SOLUTIONS)
                self.lits = lits

            def on_solution_callback(self):
                bv = self.BooleanValue
                self.sols.append(bytes(bv(v) for v in lits))

            def reader(self, sol: bytes):
                return lambda v: sol[pos[v.Index()]] == 1

        return Rec()


def _cuts_from_incumbents(cuts: "StageCuts", rec, final_value, done: list, first: int, last: int, graph, B,
                          below, partial: bool, *, deadline: float) -> dict:
    """Cut the failing stages of the incumbents ``rec`` kept (newest first), other than the final
    solution ``final_value`` and the stages ``done`` already cut, until ``deadline``. Each cut is
    valid whatever solution it was read from (docs/remat.md, "Stage no-good cuts": the claim is
    about the triple). An incumbent whose stages all run (a whole model, not a window) is a
    schedule of the class within B: the cheapest such below ``below`` is returned with its extra
    compute."""
    from memsched.formulations import evaluate
    from memsched.solvers.remat.local_search import schedule_from_sequence

    final = bytes(final_value(v) for v in rec.lits)
    seen = {(st.stage, st.start, st.ops, st.end) for st in done}
    got = {"cuts": 0, "solutions": 0, "schedule": None, "extra": below}
    saved = cuts.deadline, cuts.max_nodes
    cuts.deadline = deadline if saved[0] is None else min(deadline, saved[0])
    cuts.max_nodes = min(cuts.max_nodes, EXTRA_MAX_NODES)
    try:
        for sol in reversed(list(dict.fromkeys(rec.sols))):
            if sol == final or time.perf_counter() > cuts.deadline:
                continue
            got["solutions"] += 1
            seq, bad, undecided = _run_stages(cuts, rec.reader(sol), first, last)
            if not bad and not undecided and not partial:
                sched = schedule_from_sequence(graph, seq)
                ev = evaluate(graph, sched)
                if ev.peak > B:
                    _disagree(f"every stage of an incumbent runs within B = {B}, but the schedule peaks at {ev.peak}")
                extra = ev.compute - graph.total_cost()
                if got["extra"] is None or extra < got["extra"] - 1e-9:
                    got["schedule"], got["extra"] = sched, extra
            for st in bad:
                key = (st.stage, st.start, st.ops, st.end)
                if key not in seen and time.perf_counter() <= cuts.deadline:
                    seen.add(key)
                    cuts.add_cut(st)
                    got["cuts"] += 1
    finally:
        cuts.deadline, cuts.max_nodes = saved
    return got


@dataclass
class CutsOutcome:
    """What :func:`given_relaxation_with_cuts` proved."""

    status: str = "bound"  # "optimal": ``schedule`` is optimal in the class; "feasible" (no
    # objective): ``schedule`` fits B, nothing more is claimed; "below-optimal": no
    # schedule of the class beats ``below`` (the caller's schedule is optimal); "infeasible": no
    # schedule of the class fits B; "bound": only ``extra`` is proven; "undecided" (no objective):
    # neither a schedule nor a refutation
    extra: float = 0.0  # proven extra compute over the baseline (a lower bound for the class)
    schedule: object = None  # the best schedule found (compute baseline + its extra), or None
    rounds: int = 0
    cuts: int = 0
    undecided_stages: int = 0
    log: list = field(default_factory=list)
    relaxation: object = None  # the GivenRelaxation with every cut added (for checks)


def given_relaxation_with_cuts(graph: Graph, B: int, caps, *, below: float | None = None, hint=None,
                               time_limit: float = 60.0, workers: int = 1, seed: int = 0,
                               max_nodes: int = 200_000, params: dict | None = None, progress=None,
                               build_limit: float | None = None, objective: bool = True,
                               compact: bool = False, on_bound=None, window: tuple | None = None) -> CutsOutcome:
    """The expanded given-order relaxation, solved again and again with stage no-good cuts.

    ``caps``: every cap 0 or 1. ``below``: the extra compute of a known schedule of the class
    within B; the loop then stops once a round's proven bound reaches it, and a schedule it
    meets replaces it only when cheaper (``BELOW_AS_CONSTRAINT``: also added to the model as
    ``objective <= below - 1``). Returns a :class:`CutsOutcome`: status "optimal" with a
    ``schedule`` when an optimal solution's stages all run (or no solution below a schedule
    found here is left), "below-optimal" when no solution below ``below`` is left, "infeasible"
    when no solution is left, else "bound": the
    best bound proven (each round's relaxation, cuts included, still holds every schedule of the
    class that recomputes nothing uselessly, so its objective bound is a bound for the class).

    ``build_limit``: seconds the build may take (past them: "bound" at 0). ``objective=False``:
    a feasibility question (any costs; ``below`` ignored): the loop stops at the first solution
    whose stages all run, status "feasible" with that schedule (a schedule of the class within
    B, nothing claimed about its compute), or at "infeasible" (no schedule of the class fits
    B); out of time: "undecided". ``compact``: the relaxation's compact form (the same variables, so the same cuts).
    ``on_bound(extra)`` is called with each round's proven extra compute (at most ``below``,
    a known schedule's). A bound above ``below``, or no relaxation solution at all while
    ``below`` is known, raises ``SolverDisagreement`` (``below`` must be a schedule's).

    ``window=(a, b)``: only the stages a..b (``build_given_relaxation``'s window; the cuts stay
    valid, docs/remat.md "Stage cuts on a window"). "infeasible" then still refutes the whole
    class, and with an objective each round's bound is still a bound for the class; but when
    every stage of a solution runs, that is no schedule: the loop stops with "bound" (objective)
    or "undecided" (feasibility) and no schedule. ``below`` is ignored with a window.
    """
    from memsched.formulations import evaluate
    from memsched.formulations.remat_given_relax import BuildDeadline, build_given_relaxation
    from memsched.solvers.engines.cpsat import solve_cpsat
    from memsched.solvers.remat.local_search import schedule_from_sequence
    from memsched.solvers.remat.proofs import (RELAX_PARAMS, RELAX_SUBSOLVERS, RELAX_SUBSOLVERS_THEN,
                                              _stop_if_interrupted, solve_relaxation)

    partial = window is not None and tuple(window) != (0, graph.n_ops)
    if not objective or partial:
        below = None
    if any(c is None or c > 1 for c in caps):
        raise ValueError("stage cuts need caps of at most 1")
    t0 = time.perf_counter()
    out = CutsOutcome()
    if sum(graph.size[j] for j in graph.input_idx) > B:  # the initial state alone (the relaxation has no row for it)
        out.status = "infeasible"
        out.log.append((0, "the graph inputs alone exceed B", 0.0))
        return out
    try:
        rx = build_given_relaxation(graph, B, [int(c) for c in caps], objective=objective, compact=compact,
                                    deadline=None if build_limit is None else t0 + build_limit,
                                    window=tuple(window) if partial else None)
    except BuildDeadline as e:
        out.log.append((0, f"relaxation not built: {e.args[0]}", round(time.perf_counter() - t0, 3)))
        return out
    cuts = StageCuts(rx, B, max_nodes=max_nodes)
    cuts.deadline = t0 + time_limit  # stage searches and cut strengthening stop with the time limit
    out.relaxation = rx
    div = rx.cost_div

    def seek_below(extra):  # only solutions of smaller extra compute than ``extra`` are sought
        if BELOW_AS_CONSTRAINT:
            rx.model.Add(rx.objective_expr <= math.ceil(extra / div - 1e-9) - 1)

    if below is not None:
        seek_below(below)
    if hint is not None:
        rx.hint(hint)
    lb = 0
    pairs, learned = (RELAX_SUBSOLVERS, RELAX_SUBSOLVERS_THEN), None
    pi = rx.order
    first, last = rx.window if partial else (0, len(pi))

    def note(*entry):
        out.log.append(entry)
        if progress is not None:
            progress(entry)

    while True:
        left = time_limit - (time.perf_counter() - t0)
        if left < 0.1:
            break
        if lb > 0 and objective:
            rx.model.Add(rx.objective_expr >= lb)
        # a pure Boolean model with a sum objective: the two phases of subsolvers of
        # proofs.solve_relaxation; a feasibility question: CP-SAT's default portfolio
        rec = _Incumbents.make(cuts) if objective and EXTRA_SOLUTIONS > 0 else None
        if objective and not params:
            run = solve_relaxation(rx.model, rx.objective_expr, time_limit=left, workers=workers, seed=seed,
                                   name="remat-given-cuts", callback=rec, pairs=pairs,
                                   first_s=CUTS_FIRST_S if learned is None else left)
            if run.status == "optimal":
                learned = run.subsolvers  # the pair that solved this round runs the next ones alone
                pairs = (learned, pairs[1] if pairs[0] == learned else pairs[0])
        else:
            run = solve_cpsat(rx.model, time_limit=left, workers=int(workers), seed=seed, name="remat-given-cuts",
                              params={**RELAX_PARAMS, **({"subsolvers": list(RELAX_SUBSOLVERS)} if objective else {}),
                                      **(params or {})}, callback=rec)
        _stop_if_interrupted(run)
        out.rounds += 1
        if run.status == "infeasible":
            if below is not None and not BELOW_AS_CONSTRAINT:
                _disagree(f"no relaxation solution, though a schedule of the class has extra compute {below:g}")
            if out.schedule is not None:
                out.status, out.extra = "optimal", below
            elif below is not None:
                out.status, out.extra = "below-optimal", below
            else:
                out.status = "infeasible"
            note(out.rounds, "no solution left", round(time.perf_counter() - t0, 3))
            break
        # CP-SAT's bound holds with or without a solution (solve_relaxation's: its phases' best)
        bound = run.bound if objective else 0.0
        if math.isfinite(bound):
            lb = max(lb, math.ceil(bound - 1e-6))
        if objective and below is not None and not BELOW_AS_CONSTRAINT and lb * div > below + 1e-9:
            _disagree(f"proven extra compute {lb * div:g}, above {below:g}, a schedule's of the class")
        out.extra = float(lb * div)
        if on_bound is not None and objective:
            on_bound(out.extra)  # a bound proven so far: the caller keeps it if a later round is interrupted
        if objective and below is not None and lb >= math.ceil(below / div - 1e-9):
            # no solution of the relaxation, cuts included, is cheaper than ``below``: neither is
            # any schedule of the class, so the known schedule of extra ``below`` is optimal
            out.status, out.extra = ("optimal" if out.schedule is not None else "below-optimal"), below
            note(out.rounds, f"relaxation {run.status}, extra >= {lb * div:g}: no solution below {below:g}",
                 round(time.perf_counter() - t0, 3))
            break
        if not run.has_solution:
            if objective:
                note(out.rounds, f"relaxation {run.status}, extra >= {lb * div:g}, no solution found",
                     round(time.perf_counter() - t0, 3))
            break
        value = run.solver.BooleanValue
        seq, bad, undecided = _run_stages(cuts, value, first, last)
        optimal = run.status == "optimal"
        what = (f"relaxation {run.status}, extra >= {lb * div:g}" if objective else "a relaxation solution") + \
            f", {len(bad)} stage(s) cannot run, {undecided} undecided"
        if not bad and not undecided and partial:
            note(out.rounds, what + f"; every stage of the window {first}..{last} runs (no schedule)",
                 round(time.perf_counter() - t0, 3))
            break  # "bound" with an objective, "undecided" without
        if not bad and not undecided:
            sched = schedule_from_sequence(graph, seq)
            ev = evaluate(graph, sched)
            if ev.peak > B:
                _disagree(f"every stage runs within B = {B}, but the schedule peaks at {ev.peak}")
            if objective and below is not None and ev.compute - graph.total_cost() >= below - 1e-9:
                note(out.rounds, what + f"; a schedule of compute {ev.compute:g}, not below the known one",
                     round(time.perf_counter() - t0, 3))
                break  # a round ended by the time limit with a solution no cheaper than ``below``
            out.schedule = sched
            note(out.rounds, what + f"; a schedule of compute {ev.compute:g}", round(time.perf_counter() - t0, 3))
            if not objective:
                out.status = "feasible"
                break
            if optimal:
                out.status = "optimal"
                out.extra = ev.compute - graph.total_cost()
                break
            # a schedule below ``below`` but not proven optimal: seek better ones
            below = ev.compute - graph.total_cost()
            seek_below(below)
            continue
        if undecided and not bad:
            note(out.rounds, what, round(time.perf_counter() - t0, 3))
            break  # nothing to cut and nothing proven beyond the bound
        lens = [cuts.add_cut(st) for st in bad]
        more = ""
        if rec is not None and rec.sols:
            # the round's other incumbents: their failing stages give cuts too, and one whose
            # stages all run is a schedule below ``below`` (docs/remat.md, "Cuts from every incumbent")
            t_in = time.perf_counter()
            got = _cuts_from_incumbents(cuts, rec, value, bad, first, last, graph, B, below, partial,
                                        deadline=t_in + max(1.0, EXTRA_SHARE * run.wall_s))
            if got["cuts"]:
                more = (f"; {got['cuts']} more from {got['solutions']} other incumbent(s) in "
                        f"{time.perf_counter() - t_in:.1f} s")
            if got["schedule"] is not None:
                out.schedule, below = got["schedule"], got["extra"]
                seek_below(below)
                more += f"; an incumbent runs: a schedule of compute {below + graph.total_cost():g}"
        note(out.rounds, what + f"; cuts of {lens} literals" + more, round(time.perf_counter() - t0, 3))
        rx.hint_solution(value)  # the next round starts from this solution (it breaks only the new cuts)
        out.cuts = cuts.cuts
        out.undecided_stages = undecided
    if not objective and out.status == "bound":
        out.status = "undecided"  # a feasibility question left open: no bound is claimed
    return out
