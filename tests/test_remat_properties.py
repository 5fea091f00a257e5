"""Property tests of the rematerialization models (CP-SAT, Checkmate's stage MILP).

Small random graphs (random DAGs, multi-output graphs, training chains), 1 CP-SAT
worker. Every value and claim is checked against the brute-force referee
(tests/referee.py): the CP model's optimum must equal the true optimum of the asked
problem (free or given order) and the MILP's class claims the optimum of the stage
class; a status alone is never the whole check."""

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from memsched.formulations import Schedule, evaluate
from memsched.instances.generators import random_dag, random_multi_output
from memsched.solvers.remat.dispatch import (check_caps, local_infeasibility, resolve_budget,
                                             solve_remat)

from referee import Truth, check_remat_claims, order_peak

SET = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def train_chain(k, seed, max_size=50):
    """A forward chain f0..f{k-1} and its backward pass b{k-1}..b0 (b_i reads f_i and
    b_{i+1}): the graph family where recomputation pays."""
    import random

    from memsched.formulations import Graph

    rng = random.Random(seed)
    nodes = [(f"f{i}", rng.randint(1, max_size), float(rng.randint(1, 5))) for i in range(k)]
    nodes += [(f"b{i}", rng.randint(1, max_size), float(rng.randint(1, 5))) for i in reversed(range(k))]
    edges = [(f"f{i}", f"f{i + 1}") for i in range(k - 1)] + [(f"f{k - 1}", f"b{k - 1}")]
    edges += [(f"b{i + 1}", f"b{i}") for i in range(k - 1)] + [(f"f{i}", f"b{i}") for i in range(k - 1)]
    return Graph.from_single_output(nodes, edges, name=f"train{k}_s{seed}", order=[nm for nm, _, _ in nodes])


@st.composite
def small_graph(draw, max_n=6):
    n = draw(st.integers(3, max_n))
    seed = draw(st.integers(0, 10_000))
    kind = draw(st.integers(0, 2))
    if kind == 2:
        return train_chain(max(2, n // 2), seed)
    if kind == 1:
        return random_multi_output(n, seed, max_size=draw(st.sampled_from([9, 50])))
    return random_dag(n, seed, edge_prob=draw(st.sampled_from([0.2, 0.4, 0.6])), max_size=draw(st.sampled_from([9, 50])),
                      max_cost=draw(st.sampled_from([1, 5])))


def stage_representable(g, sched):
    """True if the schedule keeps the given order of first computations and, within
    each stage, runs operators in increasing given-order position (Checkmate's space)."""
    pos = {v: k for k, v in enumerate(g.given_order())}
    firsts, seen = [], set()
    stage = []
    for v in sched.computes():
        stage.append(pos[v])
        if v not in seen:
            seen.add(v)
            firsts.append(pos[v])
            if stage != sorted(set(stage)) or len(stage) != len(set(stage)):
                return False
            stage = []
    return firsts == sorted(firsts)


def budget_between(g, frac):
    """A budget between the local lower bound (largest single-operator need) and the
    given order's peak: the range where recomputation and ordering matter."""
    given_pk = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    lo = 0
    while local_infeasibility(g, lo) is not None:
        lo = lo * 2 + 1 if lo < given_pk else given_pk
        if lo >= given_pk:
            break
    # bisection for the least budget without a local reason
    a, b = 0, lo
    while a < b:
        mid = (a + b) // 2
        if local_infeasibility(g, mid) is None:
            b = mid
        else:
            a = mid + 1
    lo = a
    return lo + int(frac * max(0, given_pk - lo))


def _valid(g, res, B, cap):
    if res.schedule is None:
        return
    ev = evaluate(g, res.schedule)
    assert ev.peak <= B
    assert check_caps(g, res.schedule, None if cap is None else [cap] * g.n_ops) is None
    assert ev.compute == pytest.approx(res.compute)


def _judged(g, B, method, cap, order, truth, **kw):
    res = solve_remat(g, B, method=method, cap=cap, order=order, time_limit=30, **kw)
    _valid(g, res, B, cap)
    bad = check_remat_claims(g, B, cap, order, res, truth)
    assert not bad, (method, cap, order, B, bad)
    return res


def _exact(res, true):
    """The CP model proves every tiny instance: optimal at the true value, or infeasible."""
    if true is None:
        assert res.status == "infeasible" and res.schedule is None and res.message
    else:
        assert res.status == "optimal" and res.compute == pytest.approx(true)
        assert res.lower_bound == pytest.approx(true)


@settings(max_examples=40, **SET)
@given(small_graph(), st.sampled_from([0, 1, 1, 2]), st.floats(0.0, 1.0))
def test_cp_equals_brute_force_and_milp_claims_hold(g, cap, frac):
    """cp (free and given order) reaches the referee's optimum; milp's claims hold for the
    asked problem and, in its own stage class, equal the referee's stage optimum."""
    B = max(2, budget_between(g, frac))
    truth = Truth(g, B)
    for order in ("free", "given"):
        cp = _judged(g, B, "cp", cap, order, truth)
        _exact(cp, truth(order, cap).compute)
        mi = _judged(g, B, "milp", cap, order, truth)
        stage = truth("stage", cap).compute
        assert mi.scope == "given-order-stages"
        if stage is None:
            assert mi.class_status == "infeasible" and mi.schedule is None
        else:
            assert mi.class_status == "optimal" and mi.compute == pytest.approx(stage)
            assert cp.compute <= mi.compute + 1e-9


@settings(max_examples=30, **SET)
@given(small_graph(max_n=6))
def test_cap0_matches_brute_force_ordering(g):
    opt, _ = order_peak(g)
    base = g.total_cost()
    if opt >= 2:
        r = solve_remat(g, opt, method="cp", cap=0, time_limit=30)
        assert r.status == "optimal" and r.peak <= opt and r.compute == pytest.approx(base)
    if opt > 2:
        r = solve_remat(g, opt - 1, method="cp", cap=0, time_limit=30)
        assert r.status == "infeasible" and r.schedule is None and r.message
    given_pk = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    if given_pk >= 2:
        for order in ("free", "given"):  # the baseline bounds every schedule: certified
            m = solve_remat(g, given_pk, method="milp", cap=0, order=order, time_limit=30)
            assert m.status == "optimal" and m.compute == pytest.approx(base)
    if given_pk > 2:
        # cap 0 in the given order is the given order itself: one byte less fits nothing
        # of that class; in free order it fits exactly when the optimal order peak does
        truth = Truth(g, given_pk - 1)
        assert truth("given", 0).compute is None
        m = _judged(g, given_pk - 1, "milp", 0, "given", truth)
        assert m.class_status == "infeasible" and m.schedule is None
        m = _judged(g, given_pk - 1, "milp", 0, "free", truth)
        if opt <= given_pk - 1:
            assert m.status != "infeasible", "a free order fits: the stage MILP cannot prove otherwise"


@settings(max_examples=25, **SET)
@given(small_graph(max_n=6))
def test_peak_objective_without_extra_compute_is_the_ordering_problem(g):
    assume(all(c > 0 for c in g.cost))
    opt, _ = order_peak(g)
    r = solve_remat(g, None, method="cp", cap=1, objective="peak", eps=0.0, time_limit=30)
    assert r.status == "optimal" and r.peak == opt and r.lower_bound == opt
    given_pk = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    m = solve_remat(g, None, method="milp", cap=1, objective="peak", eps=0.0, time_limit=30)
    # the stage class without extra compute is the given order: its optimum is given_pk,
    # a claim about that class; for the free-order problem only the true optimum is optimal
    assert m.class_status == "optimal" and m.peak == given_pk
    assert m.status != "optimal" or m.peak == opt
    assert m.lower_bound is None or m.lower_bound <= opt


@settings(max_examples=20, **SET)
@given(small_graph(max_n=6))
def test_peak_objective_with_slack_never_above_budget_free_optimum(g):
    """min peak s.t. compute <= (1+eps) base, and min compute s.t. peak <= that peak, are consistent."""
    r = solve_remat(g, None, method="cp", cap=1, objective="peak", eps=0.5, time_limit=30)
    assert r.status == "optimal"
    assert r.compute <= 1.5 * g.total_cost() + 1e-9
    assume(r.peak >= 2)
    truth = Truth(g, r.peak)
    assert truth("free", 1).compute is not None and truth("free", 1).compute <= r.compute + 1e-9
    c = solve_remat(g, r.peak, method="cp", cap=1, objective="compute", time_limit=30)
    assert c.status == "optimal" and c.compute == pytest.approx(truth("free", 1).compute)
    # one byte less is infeasible within the same compute limit
    if r.peak > 2:
        below = Truth(g, r.peak - 1)("free", 1).compute
        assert below is None or below > 1.5 * g.total_cost() + 1e-9
        c2 = solve_remat(g, r.peak - 1, method="cp", cap=1, objective="compute", time_limit=30)
        assert c2.status == "infeasible" or c2.compute > 1.5 * g.total_cost() + 1e-9


@settings(max_examples=20, **SET)
@given(small_graph(max_n=5), st.floats(0.5, 1.0))
def test_infeasible_budget_is_a_result_with_a_reason(g, ratio):
    B = resolve_budget(g, ratio)
    assume(B >= 2)
    why = local_infeasibility(g, B)
    truth = Truth(g, B)
    r = _judged(g, B, "cp", 1, "free", truth)
    if why:
        assert r.status == "infeasible" and r.message == why
    _exact(r, truth("free", 1).compute)


@settings(max_examples=25, **SET)
@given(small_graph(max_n=6), st.sampled_from([1, 2]), st.floats(0.0, 1.0))
def test_fixed_order_phase_hints_the_free_model(g, cap, frac):
    """The CP driver first solves the model with the given order of first computations
    fixed (Moccasin's space, which contains Checkmate's stage space), then the free model
    hinted by its schedule: the final schedule is never worse than the fixed-order one,
    a proven fixed-order optimum is the referee's given-order optimum and never worse
    than the stage MILP's class optimum, and the time to the best schedule lies within
    the run."""
    B = max(2, budget_between(g, frac))
    truth = Truth(g, B)
    cp = _judged(g, B, "cp", cap, "free", truth)
    if cp.schedule is not None:
        assert cp.lower_bound is not None and cp.lower_bound <= cp.compute + 1e-9
    if "recompute_needed" in cp.params:  # the compute floor is claimed only if no plain order fits
        assert order_peak(g)[0] > B
        assert cp.lower_bound is None or cp.lower_bound > g.total_cost()
    if "fixed_order_compute" not in cp.params:
        return
    fixed = cp.params["fixed_order_compute"]
    assert cp.compute <= fixed + 1e-9
    assert cp.extra.get("time_to_best_s") is not None and cp.extra["time_to_best_s"] <= cp.wall_s + 1e-6
    if cp.params.get("fixed_order_status") == "optimal":
        assert fixed == pytest.approx(truth("given", cap).compute)
        mi = _judged(g, B, "milp", cap, "free", truth)
        if mi.class_status == "optimal":
            assert fixed <= mi.compute + 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fixed_order_phase_runs_when_recomputation_is_needed(seed):
    """On a training chain with a budget below every plain order's peak (so something must
    be recomputed) the result is the referee's optimum, with a bound above the baseline."""
    g = train_chain(5, seed)
    best, _ = order_peak(g)
    B = budget_between(g, 0.5)
    if B >= best:
        B = best - 1
    assert local_infeasibility(g, B) is None
    truth = Truth(g, B)
    cp = _judged(g, B, "cp", 1, "free", truth)
    _exact(cp, truth("free", 1).compute)
    if cp.status == "infeasible":
        return
    assert "recompute_needed" in cp.params and g.total_cost() < cp.lower_bound <= cp.compute + 1e-9
    assert cp.compute > g.total_cost()  # no plain order fits: something is recomputed
    # the fixed-order phase (when the driver runs it) never ends worse than its own answer
    if "fixed_order_compute" in cp.params:
        assert cp.compute <= cp.params["fixed_order_compute"] + 1e-9
