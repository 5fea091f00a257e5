"""Probes of the issue-14 rows still open (docs/remat-low-budgets.md, section 7).

Explorations, not benchmark rows: each prints what it found and proves nothing beyond what
it says. Graphs: ../shared/data/graphs/random_layered (as in bench_remat_proofs.py), cap 1,
B = floor(r x P) with P the given order's peak.

* ``windows GRAPH R SPEC...``: the compact given-order stage relaxation restricted to the
  windows of stages ``a-b`` (docs/remat.md, "Windows of stages"), as a feasibility test; a
  window with no solution would refute every schedule whose first computations follow the
  given order.
* ``realize GRAPH R``: the expanded given-order relaxation solved to optimality, then its
  recomputation sets run stage by stage, trying every order of the recomputations inside
  each stage of at most ``--max-perm`` of them: the least peak found against B (a peak <= B
  would be a schedule of compute = the relaxation's optimum, hence optimal in the class).
* ``cuts GRAPH R [--below C]``: the expanded given-order relaxation solved with stage no-good
  cuts (solvers/remat/stage_cuts.py; docs/remat.md, "Stage no-good cuts"), only for schedules
  of compute below C when given: "below-optimal" proves that no schedule of the given-order
  class with cap 1 has compute < C; "optimal" comes with a schedule (re-checked here by the
  evaluator). Prints each round. ``--feasibility``: no objective, the first schedule within B
  or a refutation of B for the class; ``--compact``: the compact form; ``--order-from FILE``:
  the class of the order of first computations of a stored schedule instead of the given order
  (a schedule found there is a free-order schedule; B stays that of the given order);
  ``--window A``: only the stages A..n (docs/remat.md, "Stage cuts on a window": "infeasible"
  still refutes the class, nothing else is claimed); ``--max-nodes N``: the stage search's limit.
* ``joint GRAPH R``: the given-order bound of several moments at once (docs/remat.md,
  "Several moments at once"), alone, with ``--no-couple`` without its cap-1 rows; ``--highs
  [--moments N]``: the program of the N tightest moments (default all) solved by HiGHS as a MIP
  instead (docs/remat-low-budgets.md, section 17).
* ``gap-cover GRAPH R``: the per-gap covering program (docs/remat-low-budgets.md, section 11).
* ``subgraphs GRAPH R``: the restriction to ancestor-closed subgraphs (docs/remat-low-budgets.md,
  sections 12-13). For each distinct set anc(v) (v and its ancestors) whose plain given-order
  peak exceeds B, the CP driver with cap 1 (``--order``, ``--time-limit`` each): a subgraph
  with no schedule within B would refute the row, and a subgraph's proven extra compute
  (lower bound minus its baseline) is a lower bound on the whole graph's. ``--free-relax V``
  instead runs the free-order down-set relaxation of anc(V) as a feasibility test
  (``--solve-s``, one worker, no presolve): no solution would refute the row for every order.
  ``--from-position K [--with-producers-of V...]`` instead runs the driver on the one set of the
  operators at given positions >= K (and V with its inputs' producers), the tensors made
  outside it weightless (formulations/subgraph.py; section 16).
* ``anneal GRAPH R``: simulated annealing over compute sequences for the least peak within
  ``--cap`` (docs/remat-low-budgets.md, section 14), free order or ``--order given``, from the
  given order or ``--start SCHEDULE_JSON``; ``--objective compute``: the least compute within B
  instead; ``--out FILE`` writes the schedule found (judged again by the evaluator). It proves
  nothing.
* ``free-size GRAPH R``: builds the free-order down-set relaxation (docs/remat.md,
  "Free-order stage relaxation") without the driver's limit on down-sets and prints its
  size; ``--solve-s S`` then runs CP-SAT on it as a feasibility test (``--workers``,
  ``--no-presolve``). On rl_n100 at 0.6 it needs 2.8 GB to build; CP-SAT with 2 workers and
  presolve exceeded this machine's 24 GB.

    .venv/bin/python benchmarks/probe_remat_open_rows.py windows rl_n250 0.6 200-215 230-250
    .venv/bin/python benchmarks/probe_remat_open_rows.py realize rl_n100 0.7 --time-limit 300
    .venv/bin/python benchmarks/probe_remat_open_rows.py free-size rl_n100 0.6
    .venv/bin/python benchmarks/probe_remat_open_rows.py cuts rl_n100 0.7 --below 51202 --time-limit 1200
    .venv/bin/python benchmarks/probe_remat_open_rows.py subgraphs rl_n100 0.7 --time-limit 20 --workers 1
    .venv/bin/python benchmarks/probe_remat_open_rows.py subgraphs rl_n100 0.6 --free-relax 83 --solve-s 1500
    .venv/bin/python benchmarks/probe_remat_open_rows.py subgraphs rl_n250 0.6 --order given --from-position 130 \
        --with-producers-of 249 --time-limit 300 --workers 1
    .venv/bin/python benchmarks/probe_remat_open_rows.py anneal rl_n100 0.6 \
        --start benchmarks/results/remat_order_search_rl_n100_0.6_cap1.json \
        --out benchmarks/results/remat_anneal_rl_n100_0.6_cap1.json
    .venv/bin/python benchmarks/probe_remat_open_rows.py cuts rl_n250 0.6 --feasibility --window 245 \
        --max-nodes 2000 --workers 1 --time-limit 600
"""
from __future__ import annotations

import argparse
import json
import itertools
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = (ROOT / ".." / "shared" / "data" / "graphs" / "random_layered").resolve()
GRAPHS = {
    "rl_n100": "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json",
    "rl_n250": "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json",
}


def _load(name: str, r: float):
    from memsched.formulations import Schedule, evaluate
    from memsched.instances.formats import load_graph

    path = DATA / GRAPHS[name]
    if not path.exists():
        print(f"probe: {path} not found (../shared/data is needed)", file=sys.stderr)
        sys.exit(2)
    g = load_graph(path)
    P = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    return g, int(r * P)


def _rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def windows(a) -> None:
    from memsched.formulations.remat_given_relax import build_given_relaxation
    from memsched.solvers.engines.cpsat import solve_cpsat

    g, B = _load(a.graph, a.ratio)
    form = "expanded" if a.expanded else "compact"
    print(f"{a.graph} r={a.ratio} B={B}: {form} relaxation windows, feasibility, {a.time_limit} s each"
          f"{', no presolve' if a.no_presolve else ''}")
    for spec in a.windows:
        lo, hi = (int(x) for x in spec.split("-"))
        t = time.perf_counter()
        rx = build_given_relaxation(g, B, [1] * g.n_ops, compact=not a.expanded, objective=False, window=(lo, hi))
        params = {"cp_model_presolve": False} if a.no_presolve else None
        run = solve_cpsat(rx.model, time_limit=a.time_limit, workers=a.workers, seed=0, params=params,
                          name="probe-window")
        verdict = {"optimal": "feasible", "feasible": "feasible",
                   "infeasible": "no solution: no schedule of the given-order class fits B"}.get(run.status, run.status)
        print(f"  stages {lo}..{hi}: {verdict} ({time.perf_counter() - t:.1f} s)", flush=True)


def realize(a) -> None:
    from memsched.formulations import evaluate
    from memsched.formulations.evaluator import ScheduleError
    from memsched.formulations.remat_given_relax import build_given_relaxation
    from memsched.solvers.remat.local_search import schedule_from_sequence
    from memsched.solvers.remat.proofs import solve_relaxation

    g, B = _load(a.graph, a.ratio)
    t = time.perf_counter()
    rx = build_given_relaxation(g, B, [1] * g.n_ops)
    run = solve_relaxation(rx.model, rx.objective_expr, time_limit=a.time_limit, workers=a.workers, seed=0,
                           name="probe-realize")
    if not run.has_solution:
        print(f"{a.graph} r={a.ratio} B={B}: relaxation {run.status} after {time.perf_counter() - t:.1f} s")
        return
    extra = run.solver.ObjectiveValue() * rx.cost_div
    print(f"{a.graph} r={a.ratio} B={B}: relaxation {run.status}, extra {extra:g} "
          f"(compute {g.total_cost() + extra:g}), {time.perf_counter() - t:.1f} s", flush=True)
    stages = rx.decode(run.solver.BooleanValue)
    pi = g.given_order()
    pos = {v: i for i, v in enumerate(pi)}
    orders = {i: sorted(v, key=pos.__getitem__) for i, v in stages.items() if v}
    print(f"  recomputations per stage: {({i: len(v) for i, v in orders.items()})}")

    def peak(o) -> int | None:
        seq: list[int] = []
        for i in range(len(pi) + 1):
            seq += o.get(i, [])
            if i < len(pi):
                seq.append(pi[i])
        try:
            return evaluate(g, schedule_from_sequence(g, seq)).peak
        except ScheduleError:
            return None

    print(f"  run stage by stage in the given order's positions: peak {peak(orders)}")
    for i in sorted(orders):  # each stage's peak depends on its own order only
        if 1 < len(orders[i]) <= a.max_perm:
            tried = [(pk, list(p)) for p in itertools.permutations(orders[i])
                     if (pk := peak({**orders, i: list(p)})) is not None]
            if tried:  # the given-order positions are one of the orders, so never empty in practice
                orders[i] = min(tried)[1]
    print(f"  best order inside each stage: peak {peak(orders)} against B = {B}")


def cuts(a) -> None:
    from memsched.formulations import evaluate
    from memsched.solvers.remat.stage_cuts import given_relaxation_with_cuts

    g, B = _load(a.graph, a.ratio)
    base = g.total_cost()
    if a.order_from:  # the class of another order: the first computations of a stored schedule
        from memsched.formulations import Graph
        if not Path(a.order_from).is_file():
            print(f"probe: {a.order_from} not found", file=sys.stderr)
            sys.exit(2)
        events = json.loads(Path(a.order_from).read_text())["events"]  # [kind, operator or tensor name]
        first = tuple(dict.fromkeys(x for kind, x in events if kind == "compute"))
        g = Graph(g.ops, g.tensors, pinned=g.pinned, outputs=g.outputs, order=first, name=g.name)
        print(f"given order: the first computations of {a.order_from} (B stays {B})")
    if a.window is not None and not 0 <= a.window <= g.n_ops:
        print(f"probe: --window needs 0 <= A <= {g.n_ops} (the stages A..n), got {a.window}", file=sys.stderr)
        sys.exit(2)
    print(f"{a.graph} r={a.ratio} B={B} baseline {base:g}: relaxation with stage cuts"
          + ("" if a.below is None else f", schedules of compute < {a.below:g} only"), flush=True)
    t = time.perf_counter()
    out = given_relaxation_with_cuts(g, B, [1] * g.n_ops, below=None if a.below is None else a.below - base,
                                     time_limit=a.time_limit, workers=a.workers, objective=not a.feasibility,
                                     compact=a.compact, max_nodes=a.max_nodes,
                                     window=None if a.window is None else (a.window, g.n_ops),
                                     progress=lambda e: print(f"  round {e[0]}: {e[1]} ({e[2]:.1f} s)", flush=True))
    proven = "" if out.status in ("undecided", "feasible", "infeasible") else f": compute >= {base + out.extra:g}"
    print(f"  {out.status}{proven} ({out.rounds} rounds, {out.cuts} cuts, {time.perf_counter() - t:.1f} s)")
    if out.schedule is not None:
        ev = evaluate(g, out.schedule)
        print(f"  schedule: compute {ev.compute:g}, peak {ev.peak} (B {B}), at most "
              f"{max(ev.compute_counts)} computations per operator")


def free_size(a) -> None:
    from memsched.formulations.remat_free_relax import build_free_relaxation
    from memsched.solvers.engines.cpsat import solve_cpsat

    g, B = _load(a.graph, a.ratio)
    t = time.perf_counter()
    rx = build_free_relaxation(g, B, [1] * g.n_ops, max_downsets=a.max_downsets)
    rx.model.ClearObjective()
    print(f"{a.graph} r={a.ratio} B={B}: built in {time.perf_counter() - t:.1f} s, {rx.stats}, "
          f"peak RSS {_rss_mb()} MB", flush=True)
    if a.solve_s > 0:
        run = solve_cpsat(rx.model, time_limit=a.solve_s, workers=a.workers, seed=0, name="probe-free",
                          params={"cp_model_presolve": not a.no_presolve})
        print(f"  CP-SAT feasibility: {run.status} after {time.perf_counter() - t:.1f} s, peak RSS {_rss_mb()} MB")


def gap_cover(a) -> None:
    """The moment covering program of docs/remat.md ("Moment-cut covering bound", given order,
    simple rows) with one variable per inter-read gap of each tensor instead of one per
    operator (docs/remat-low-budgets.md, section 11); ``--per-operator``: the plain program."""
    from ortools.sat.python import cp_model

    g, B = _load(a.graph, a.ratio)
    if g.input_idx or g.pinned_idx or g.output_idx or any(len(o) != 1 for o in g.op_out):
        print("probe: gap-cover handles graphs without graph inputs, pinned or required outputs, one output per "
              "operator (the random_layered graphs)", file=sys.stderr)
        sys.exit(2)
    t = time.perf_counter()
    pi = g.given_order()
    pos = {v: i for i, v in enumerate(pi)}
    reads = [sorted(pos[c] for c in g.consumers[j]) for j in range(g.n_tensors)]
    md = cp_model.CpModel()
    z, rows = {}, 0
    for k, v in enumerate(pi):
        io = set(g.op_in[v]) | set(g.op_out[v])
        live = [j for j in range(g.n_tensors)
                if j not in io and pos[g.producer[j]] < k and reads[j] and reads[j][-1] > k and g.size[j]]
        d = sum(g.size[j] for j in io) + g.workspace[v] + sum(g.size[j] for j in live) - B
        if d <= 0:
            continue
        terms = []
        for j in live:
            key = (j, 0 if a.per_operator else sum(1 for s in reads[j] if s < k))  # the gap holding moment k
            if key not in z:
                z[key] = md.NewBoolVar(f"z_{key[0]}_{key[1]}")
            terms.append(min(g.size[j], d) * z[key])
        md.Add(sum(terms) >= d)
        rows += 1
    by_op = {}
    for (j, _gap), var in z.items():
        by_op.setdefault(g.producer[j], []).append(var)
    for vs in by_op.values():
        md.Add(sum(vs) <= 1)  # cap 1: one recomputation, one gap
    md.Minimize(sum(int(g.cost[p]) * var for p, vs in by_op.items() for var in vs))
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = a.time_limit
    s.parameters.num_workers = a.workers
    st = s.Solve(md)
    base = g.total_cost()
    print(f"{a.graph} r={a.ratio} B={B}: {'per-operator' if a.per_operator else 'per-gap'} covering program, "
          f"{rows} rows, {len(z)} variables: {s.StatusName(st)}, extra >= {s.BestObjectiveBound():g} "
          f"(compute >= {base + s.BestObjectiveBound():g}), {time.perf_counter() - t:.1f} s")


def joint(a) -> None:
    """Several moments at once (solvers/remat/joint_moments.py; docs/remat.md, "Several moments
    at once"): the given-order lower bound alone, with each program size it solved."""
    from memsched.solvers.remat.joint_moments import joint_moment_bound

    if a.moments < 0:
        print("probe: --moments must be >= 0 (0: every tight moment)", file=sys.stderr)
        sys.exit(2)
    g, B = _load(a.graph, a.ratio)
    if a.highs:
        return _joint_highs(g, B, a)
    t = time.perf_counter()
    out = joint_moment_bound(g, B, [1] * g.n_ops, time_limit=a.time_limit, workers=a.workers, couple=not a.no_couple)
    base = g.total_cost()
    verdict = "infeasible: " + out.reason if out.infeasible else f"extra >= {out.extra:g} (compute >= {base + out.extra:g})"
    print(f"{a.graph} r={a.ratio} B={B}: {verdict}, {time.perf_counter() - t:.1f} s")
    for extra, what, s in out.checks:
        print(f"  {what}: extra >= {extra:g} at {s:.1f} s")


def _joint_highs(g, B: int, a) -> None:
    """The joint program of the ``--moments`` tightest moments (0: all) solved by HiGHS as a MIP
    (docs/remat-low-budgets.md, section 17): the CP-SAT model's rows copied one by one."""
    import highspy
    import numpy as np

    from memsched.solvers.remat.joint_moments import build_joint_program
    from memsched.solvers.remat.lagrange_bound import _given_tight

    t = time.perf_counter()
    tight = _given_tight(g, B)
    moments = tight[:a.moments] if a.moments else tight
    md, _obj, scale, bad = build_joint_program(g, B, [1] * g.n_ops, moments, couple=not a.no_couple)
    if bad is not None:
        print(f"{a.graph} r={a.ratio} B={B}: infeasible at the first computation of {g.ops[bad].name!r}")
        return
    p = md.Proto()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", float(a.time_limit))
    inf = highspy.kHighsInf
    n = len(p.variables)
    for v in p.variables:  # Booleans or 0/1-bounded integers
        dom = list(v.domain)
        h.addVar(dom[0], dom[-1])
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * n))

    def row(lo, terms):  # sum of coef * x >= lo, terms as (positive ref, coef)
        acc: dict[int, float] = {}
        for var, co in terms:
            acc[var] = acc.get(var, 0.0) + co
        h.addRow(lo, inf, len(acc), np.array(list(acc), dtype=np.int32), np.array(list(acc.values())))

    for c in p.constraints:
        if c.has_bool_and():  # enforcement e => each literal l: l - e >= 0 (positive refs only here)
            (e,) = list(c.enforcement_literal)
            for lit in c.bool_and.literals:
                assert lit >= 0 and e >= 0, "negated literal: not handled"
                row(0.0, [(lit, 1.0), (e, -1.0)])
        elif c.has_linear() and not list(c.enforcement_literal):
            assert min(c.linear.vars) >= 0, "negated reference: not handled"
            dom = list(c.linear.domain)
            acc = {}
            for var, co in zip(c.linear.vars, c.linear.coeffs):
                acc[var] = acc.get(var, 0) + co
            lo = dom[0] if dom[0] > -2**62 else -inf
            hi = dom[-1] if dom[-1] < 2**62 else inf
            h.addRow(lo, hi, len(acc), np.array(list(acc), dtype=np.int32), np.array([float(x) for x in acc.values()]))
        else:
            raise ValueError("a constraint the copy does not handle")
    cost = np.zeros(n)
    for var, co in zip(p.objective.vars, p.objective.coeffs):
        assert var >= 0, "negated reference: not handled"
        cost[var] += co
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    h.changeObjectiveOffset(p.objective.offset)
    h.changeObjectiveSense(highspy.ObjSense.kMinimize)  # not the default of a model built row by row
    h.run()
    info = h.getInfo()
    status = h.modelStatusToString(h.getModelStatus())
    if status == "Infeasible":
        print(f"{a.graph} r={a.ratio} B={B}: the program of {len(moments)} moments has no solution "
              f"(refutes B for the given-order class), {time.perf_counter() - t:.1f} s")
        return
    bound = max(0.0, info.mip_dual_bound) / scale
    base = g.total_cost()
    print(f"{a.graph} r={a.ratio} B={B}: HiGHS, {len(moments)} of {len(tight)} moments, {n} variables: {status}; "
          f"extra >= {bound:g} (compute >= {base + bound:g}), best solution {info.objective_function_value / scale:g}, "
          f"{time.perf_counter() - t:.1f} s")


def _ancestors(g, v: int) -> frozenset:
    """Operator v and its ancestors."""
    mask = g.reach_masks()[0][v] | (1 << v)
    return frozenset(u for u in range(g.n_ops) if mask >> u & 1)


def subgraphs(a) -> None:
    """The restriction lemma (formulations/subgraph.py; docs/remat-low-budgets.md, sections 12,
    13 and 16): every schedule of the graph within B and the caps, with the computations and
    frees outside a set of operators deleted, is one of the restricted graph, so a restriction
    with no schedule within B refutes B, and its proven extra compute bounds the graph's."""
    from memsched.formulations import Schedule, evaluate
    from memsched.formulations.subgraph import operator_subgraph
    from memsched.solvers.remat.cp import INTERRUPTED
    from memsched.solvers.remat.dispatch import solve_remat

    for name, v in (("--time-limit", a.time_limit), ("--solve-s", a.solve_s), ("ratio", a.ratio)):
        if not (v > 0 and v != float("inf")):
            print(f"probe: {name} must be a positive number, got {v}", file=sys.stderr)
            sys.exit(2)
    g, B = _load(a.graph, a.ratio)
    if a.free_relax is not None and (a.from_position is not None or a.with_producers_of):
        print("probe: --free-relax takes anc(V); it does not combine with --from-position", file=sys.stderr)
        sys.exit(2)
    if a.free_relax is not None:
        from memsched.formulations.remat_free_relax import build_free_relaxation
        from memsched.solvers.engines.cpsat import solve_cpsat

        if not 0 <= a.free_relax < g.n_ops:
            print(f"probe: --free-relax needs an operator index in 0..{g.n_ops - 1}", file=sys.stderr)
            sys.exit(2)
        sub = operator_subgraph(g, _ancestors(g, a.free_relax))
        t = time.perf_counter()
        rx = build_free_relaxation(sub, B, [1] * sub.n_ops, max_downsets=100_000)
        rx.model.ClearObjective()
        print(f"{a.graph} r={a.ratio} B={B}: anc({a.free_relax}), {sub.n_ops} operators: built in "
              f"{time.perf_counter() - t:.1f} s, {rx.stats}, peak RSS {_rss_mb()} MB", flush=True)
        run = solve_cpsat(rx.model, time_limit=a.solve_s, workers=1, seed=0, name="probe-subgraph-free",
                          params={"cp_model_presolve": False})
        print(f"  free-order relaxation: {run.status} after {time.perf_counter() - t:.1f} s, peak RSS {_rss_mb()} MB")
        return
    if a.with_producers_of and a.from_position is None:
        print("probe: --with-producers-of needs --from-position", file=sys.stderr)
        sys.exit(2)
    cands = []
    if a.from_position is not None:  # one set: the given positions from K on (section 16)
        if not 0 <= a.from_position < g.n_ops or not all(0 <= v < g.n_ops for v in a.with_producers_of or ()):
            print(f"probe: --from-position and --with-producers-of take indices in 0..{g.n_ops - 1}", file=sys.stderr)
            sys.exit(2)
        pos = {v: i for i, v in enumerate(g.given_order())}
        keep = {v for v in range(g.n_ops) if pos[v] >= a.from_position}
        for v in a.with_producers_of or ():
            keep |= {v} | {g.producer[j] for j in g.op_in[v] if g.producer[j] >= 0}
        sub = operator_subgraph(g, keep)
        what = f"positions >= {a.from_position}" + (f" with the producers of {a.with_producers_of}" if a.with_producers_of else "")
        cands.append((len(keep), what, evaluate(sub, Schedule.from_order(sub, sub.given_order())).peak, sub))
    else:  # every distinct anc(v) whose plain given-order peak exceeds B (sections 12-13)
        seen = set()
        for v in range(g.n_ops):
            keep = _ancestors(g, v)
            if keep in seen or len(keep) == g.n_ops:
                continue
            seen.add(keep)
            sub = operator_subgraph(g, keep)
            plain = evaluate(sub, Schedule.from_order(sub, sub.given_order())).peak
            if plain > B:  # otherwise the given order alone fits: nothing to learn
                cands.append((len(keep), v, plain, sub))
    cands.sort(key=lambda c: c[:2])
    print(f"{a.graph} r={a.ratio} B={B} baseline {g.total_cost():g}: "
          + (f"{len(cands)} subgraphs anc(v) with a plain peak over B" if a.from_position is None else "one restriction"),
          flush=True)
    best, stopped = 0.0, ""
    try:
        for n, v, plain, sub in cands:
            t = time.perf_counter()
            res = solve_remat(sub, B, method="cp", cap=1, time_limit=a.time_limit, workers=a.workers, order=a.order)
            if INTERRUPTED.is_set():  # Ctrl-C inside the driver: it stopped and returned what it had
                raise KeyboardInterrupt
            extra = None if res.lower_bound is None else res.lower_bound - sub.total_cost()
            best = max(best, extra or 0.0)
            label = v if isinstance(v, str) else f"anc({v})"
            print(f"  {label}: {n} operators, plain peak {plain}: {res.status}, compute {res.compute}, "
                  f"extra >= {extra} ({time.perf_counter() - t:.1f} s)", flush=True)
            if res.status == "infeasible":  # the restriction lemma: no schedule of the whole graph either
                print(f"  {label} has no schedule within B: this refutes B = {B} for the whole graph "
                      f"({a.order} order, cap 1); {res.message}", flush=True)
    except KeyboardInterrupt:
        stopped = " (interrupted: the subgraphs solved so far)"
    print(f"  largest extra proven on a subgraph{stopped}: {best:g} (whole graph: compute >= {g.total_cost() + best:g})")
    if stopped:
        sys.exit(130)


class _Profile:
    """The memory of a compute sequence as the evaluator counts it (solvers/remat/local_search.py,
    ``schedule_from_sequence``: each computation reads the latest earlier copy of each input, every
    copy is freed right after its last reader, a required output's final copy and pinned inputs
    are kept): ``memory(seq)`` gives the memory during each computation, or None when some
    computation finds an input never made or breaks the caps or the given order. Fast enough
    for millions of moves on the random_layered graphs; the final schedule is judged again by
    the evaluator."""

    def __init__(self, g, cap: int, given: bool):
        self.given = given
        self.n_t = g.n_tensors
        self.ins = [list(x) for x in g.op_in]
        self.outs = [list(x) for x in g.op_out]
        self.size = list(g.size)
        self.ws = list(g.workspace)
        self.most = 1 + cap
        self.pos = {v: i for i, v in enumerate(g.given_order())}
        self.inputs = list(g.input_idx)
        self.kept = set(g.pinned_idx) | set(g.output_idx)
        self.required = set(g.output_idx)
        self.initial = sum(self.size[j] for j in self.inputs)

    def memory(self, seq):
        L, size, n_t = len(seq), self.size, self.n_t
        latest = [-1] * n_t  # position of the latest copy (-2: the graph input itself)
        for j in self.inputs:
            latest[j] = -2
        last = {}  # (tensor, copy position) -> last reader position
        count = [0] * len(self.ins)
        nxt = 0
        for t, v in enumerate(seq):
            for j in self.ins[v]:
                q = latest[j]
                if q == -1:
                    return None
                last[(j, q)] = t
            count[v] += 1
            if count[v] > self.most:
                return None
            if self.given and count[v] == 1:
                if self.pos[v] != nxt:
                    return None
                nxt += 1
            for j in self.outs[v]:
                latest[j] = t
        if min(count) == 0:
            return None
        diff = [0] * (L + 1)
        for j in self.inputs:
            if j in self.kept:
                end = L - 1
            else:
                end = last.get((j, -2))
                if end is None:
                    continue
            diff[0] += size[j]
            diff[end + 1] -= size[j]
        for q, v in enumerate(seq):
            diff[q] += self.ws[v]
            diff[q + 1] -= self.ws[v]
            for j in self.outs[v]:
                end = L - 1 if (j in self.required and latest[j] == q) else max(q, last.get((j, q), q))
                diff[q] += size[j]
                diff[end + 1] -= size[j]
        mem, m = [], 0
        for t in range(L):
            m += diff[t]
            mem.append(m)
        return mem


def anneal(a) -> None:
    """Simulated annealing over compute sequences: the least peak within the caps, or (``--objective
    compute``) the least compute within B and the caps."""
    import math
    import random

    from memsched.formulations import evaluate
    from memsched.formulations.errors import MemschedError
    from memsched.formulations.schedule import COMPUTE
    from memsched.instances.formats import load_schedule
    from memsched.solvers.remat.local_search import schedule_from_sequence

    for name, v in (("--time-limit", a.time_limit), ("ratio", a.ratio), ("--t0", a.t0), ("--t1", a.t1),
                    ("--penalty", a.penalty)):
        if not (v > 0 and v != float("inf")):
            print(f"probe: {name} must be a positive number, got {v}", file=sys.stderr)
            sys.exit(2)
    if a.steps < 1 or a.cycle < 1 or a.cap < 0:
        print("probe: --steps and --cycle must be at least 1, --cap at least 0", file=sys.stderr)
        sys.exit(2)
    g, B = _load(a.graph, a.ratio)
    prof = _Profile(g, a.cap, a.order == "given")
    if a.start:
        try:
            s0 = load_schedule(g, a.start)
        except MemschedError as e:
            print(f"probe: --start: {e}", file=sys.stderr)
            sys.exit(2)
        seq = [x for k, x in s0.events if k == COMPUTE]
    else:
        seq = list(g.given_order())
    mem = prof.memory(seq)
    if mem is None:
        print(f"probe: the start breaks the cap ({a.cap}) or the {a.order} order", file=sys.stderr)
        sys.exit(2)
    readers = [set(s) for s in g.op_succ()]  # operators reading an output of each operator

    cost = list(g.cost)
    by_compute = a.objective == "compute"

    def score(mem, seq):
        """(score, peak, key): the search lowers the score; ``key`` orders the sequences kept
        (least peak, or least compute among those within B)."""
        peak = max(prof.initial, max(mem))
        over = sum(m - B for m in mem if m > B) + a.weight * max(0, peak - B)
        if not by_compute:
            return over, peak, (peak, over)
        c = sum(cost[v] for v in seq)
        return c + a.penalty * over, peak, ((0, c) if peak <= B else (1, over))

    rng = random.Random(a.seed)
    f, peak, key = score(mem, seq)
    best_key, best_seq = key, list(seq)
    print(f"{a.graph} r={a.ratio} B={B} cap {a.cap}, {a.order} order: start peak {peak} ({len(seq)} computations); "
          f"{a.steps} steps, cycles of {a.cycle}, seed {a.seed}", flush=True)
    t0 = time.perf_counter()
    stopped = ""
    try:
        for k in range(a.steps):
            if k % a.cycle == 0 and k:  # a new cycle starts from the best sequence, hot again
                seq = list(best_seq)
                mem = prof.memory(seq)
                f, peak, key = score(mem, seq)
            if k % 4096 == 0 and time.perf_counter() - t0 > a.time_limit:
                stopped = f" (time limit at step {k})"
                break
            T = a.t0 * (a.t1 / a.t0) ** ((k % a.cycle) / a.cycle)
            L = len(seq)
            r = rng.random()
            new = None
            if r < 0.45:  # move one computation a few places
                i = rng.randrange(L)
                b = min(L - 1, max(0, i + rng.randint(-a.window, a.window)))
                if i != b:
                    new = seq[:]
                    new.insert(b, new.pop(i))
            elif r < 0.55:  # move a block of computations
                i, n = rng.randrange(L), rng.randint(2, 6)
                rest = seq[:i] + seq[i + n:]
                b = min(len(rest), max(0, i + rng.randint(-a.window, a.window)))
                new = rest[:b] + seq[i:i + n] + rest[b:]
            elif r < 0.8:  # recompute an input's producer just before a computation (often the peak's)
                t = rng.randrange(L) if rng.random() < 0.5 else max(range(L), key=mem.__getitem__)
                ins = [g.producer[j] for j in g.op_in[seq[t]] if g.producer[j] >= 0]
                b = t - rng.randint(0, 3)
                if ins and b >= 0:
                    new = seq[:]
                    new.insert(b, rng.choice(ins))
            else:  # drop a computation of an operator that runs more than once, or move it before a reader
                i = rng.randrange(L)
                v = seq[i]
                if seq.count(v) > 1:
                    new = seq[:]
                    new.pop(i)
                    if r >= 0.9:
                        at = [t for t, w in enumerate(new) if w in readers[v]]
                        b = rng.choice(at) - rng.randint(0, 3) if at else -1
                        new = new[:b] + [v] + new[b:] if b >= 0 else None
            if new is None:
                continue
            m2 = prof.memory(new)
            if m2 is None:
                continue
            f2, p2, k2 = score(m2, new)
            if f2 <= f or rng.random() < math.exp((f - f2) / T):
                seq, mem, f, peak, key = new, m2, f2, p2, k2
                if key < best_key:
                    if by_compute and key[0] == 0:
                        print(f"  {time.perf_counter() - t0:.1f} s, step {k}: compute {key[1]:g} within B", flush=True)
                    elif not by_compute and key[0] < best_key[0]:
                        print(f"  {time.perf_counter() - t0:.1f} s, step {k}: peak {peak}", flush=True)
                    best_key, best_seq = key, list(seq)
    except KeyboardInterrupt:
        stopped = " (interrupted)"
    sched = schedule_from_sequence(g, best_seq)
    ev = evaluate(g, sched)  # the judge: a disagreement with the profile is a bug
    best_peak = max(prof.initial, max(prof.memory(best_seq)))
    if by_compute and best_key[0] == 0 and ev.compute != best_key[1]:
        print(f"probe: BUG: the evaluator gives compute {ev.compute} for a sequence costed at {best_key[1]}", file=sys.stderr)
        sys.exit(1)
    if ev.peak != best_peak or max(ev.compute_counts) > 1 + a.cap:
        print(f"probe: BUG: the evaluator gives peak {ev.peak} for a sequence profiled at {best_peak}", file=sys.stderr)
        sys.exit(1)
    firsts = list(dict.fromkeys(best_seq))
    in_class = "" if a.order == "given" or firsts == g.given_order() else ", first computations not in the given order"
    what = "least compute within B" if by_compute and ev.peak <= B else "least peak"
    print(f"  {what}{stopped}: peak {ev.peak} ({'within' if ev.peak <= B else 'over'} B = {B}), compute {ev.compute:g}, "
          f"{ev.recomputations} recomputations, at most {max(ev.compute_counts)} computations of an operator{in_class} "
          f"({time.perf_counter() - t0:.1f} s)")
    if a.out:
        Path(a.out).write_text(json.dumps({"graph": GRAPHS[a.graph], "budget": B, "cap": a.cap, "order": a.order,
                                           "peak": ev.peak, "seed": a.seed, "events": sched.to_names(g)}) + "\n")
        print(f"  written to {a.out} (`memsched eval` / `memsched run` read it)")
    if stopped == " (interrupted)":
        sys.exit(130)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    for name in ("windows", "realize", "free-size", "cuts", "gap-cover", "joint", "subgraphs", "anneal"):
        p = sub.add_parser(name)
        p.add_argument("graph", choices=sorted(GRAPHS))
        p.add_argument("ratio", type=float)
        if name != "anneal":  # the annealing runs in this process alone, without CP-SAT
            p.add_argument("--workers", type=int, default=2)
        if name == "windows":
            p.add_argument("windows", nargs="+", metavar="A-B")
            p.add_argument("--time-limit", type=float, default=20.0)
            p.add_argument("--expanded", action="store_true", help="the expanded form (default: compact)")
            p.add_argument("--no-presolve", action="store_true", help="CP-SAT without its presolve")
        if name == "realize":
            p.add_argument("--time-limit", type=float, default=300.0)
            p.add_argument("--max-perm", type=int, default=7)
        if name == "cuts":
            p.add_argument("--time-limit", type=float, default=1200.0)
            p.add_argument("--below", type=float, default=None, help="the compute of a schedule of the class within B (a proven bound above it is "
                           "raised as a disagreement)")
            p.add_argument("--feasibility", action="store_true",
                           help="no objective: stop at the first schedule within B (or a refutation)")
            p.add_argument("--compact", action="store_true", help="the relaxation's compact form")
            p.add_argument("--order-from", default=None, metavar="SCHEDULE_JSON",
                           help="use the order of first computations of this stored schedule as the given order "
                                "(its class lies in the free-order class)")
            p.add_argument("--window", type=int, default=None, metavar="A",
                           help="only the stages A..n: 'infeasible' refutes the class, nothing else is claimed")
            p.add_argument("--max-nodes", type=int, default=200_000, help="states per stage search")
        if name == "free-size":
            p.add_argument("--max-downsets", type=int, default=100_000)
            p.add_argument("--solve-s", type=float, default=0.0)
            p.add_argument("--no-presolve", action="store_true")
        if name == "gap-cover":
            p.add_argument("--time-limit", type=float, default=60.0)
            p.add_argument("--per-operator", action="store_true", help="one variable per operator (the plain program)")
        if name == "subgraphs":
            p.add_argument("--time-limit", type=float, default=20.0, help="CP driver seconds per subgraph")
            p.add_argument("--order", choices=("free", "given"), default="free")
            p.add_argument("--free-relax", type=int, default=None, metavar="V",
                           help="only the free-order relaxation of anc(V), as a feasibility test")
            p.add_argument("--solve-s", type=float, default=600.0, help="CP-SAT seconds for --free-relax")
            p.add_argument("--from-position", type=int, default=None, metavar="K",
                           help="instead of the sets anc(v): the one set of the operators at given positions >= K, "
                                "the tensors made before them free and weightless (docs/remat-low-budgets.md, section 16)")
            p.add_argument("--with-producers-of", type=int, nargs="+", default=None, metavar="V",
                           help="with --from-position: keep V and the producers of V's inputs too")
        if name == "anneal":
            p.add_argument("--order", choices=("free", "given"), default="free")
            p.add_argument("--cap", type=int, default=1, help="extra computations per operator")
            p.add_argument("--start", default=None, metavar="SCHEDULE_JSON", help="a stored schedule (default: the given order)")
            p.add_argument("--steps", type=int, default=4_000_000)
            p.add_argument("--cycle", type=int, default=1_000_000, help="steps per cooling cycle; each starts from the best")
            p.add_argument("--t0", type=float, default=300.0, help="temperature at a cycle's start (bytes)")
            p.add_argument("--t1", type=float, default=3.0, help="temperature at a cycle's end")
            p.add_argument("--weight", type=float, default=5.0, help="weight of the peak's excess over B beside the excess area")
            p.add_argument("--objective", choices=("peak", "compute"), default="peak",
                           help="peak: the least peak; compute: the least compute within B (the score adds --penalty "
                                "times the excess; temperatures are then in compute units)")
            p.add_argument("--penalty", type=float, default=1.0, help="with --objective compute: weight of the excess")
            p.add_argument("--window", type=int, default=12, help="how far one move shifts a computation")
            p.add_argument("--seed", type=int, default=1)
            p.add_argument("--time-limit", type=float, default=600.0)
            p.add_argument("--out", default=None, metavar="FILE", help="write the least-peak schedule here")
        if name == "joint":
            p.add_argument("--time-limit", type=float, default=30.0)
            p.add_argument("--no-couple", action="store_true", help="without the cap-1 rows")
            p.add_argument("--highs", action="store_true",
                           help="solve the program with HiGHS (one thread) instead of the CP-SAT growth")
            p.add_argument("--moments", type=int, default=0, help="with --highs: the tightest N moments (0: all)")
    a = ap.parse_args(argv)
    {"windows": windows, "realize": realize, "free-size": free_size, "cuts": cuts, "gap-cover": gap_cover, "joint": joint,
     "subgraphs": subgraphs, "anneal": anneal}[a.what](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
