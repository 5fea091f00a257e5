"""The width DP over the given order: equals a brute-force search restricted to
the same class (tests/test_special_brute.py, fixed_order=True) and the MILP
referee (Checkmate's stage class) on random instances of width <= 8."""
from __future__ import annotations

import random

import pytest

from memsched.formulations import Graph, MemschedError, Operator, Schedule, Tensor, evaluate
from memsched.instances.generators import chain
from memsched.solvers.special import width_dp
from test_special_brute import brute_min_peak, brute_remat, random_small_dag


def _cases(count: int, start: int = 0):
    out, seed = [], start
    while len(out) < count:
        g, caps = random_small_dag(seed)
        if width_dp.width(g, max(caps, 1)) <= 8:
            peak = evaluate(g, Schedule.from_order(g, g.given_order())).peak
            const = sum(g.size[j] for j in g.pinned_idx)
            lo = max([g.resident_at_start()] + [const + g.workspace[v] + sum(g.size[j] for j in g.op_in[v] + g.op_out[v]
                                                                               if j not in g.pinned_idx)
                                                for v in range(g.n_ops)])
            rng = random.Random(seed)
            # mostly below the no-recompute peak of the order: feasible answers must recompute
            if seed % 4:
                caps = max(caps, 1)
            B = peak - rng.randint(1, max(1, (peak - lo) // 3)) if lo < peak and seed % 4 else rng.randint(min(lo, peak), peak)
            out.append((g, caps, B, seed))
        seed += 1
    return out


CASES = _cases(90)


def test_width_dp_equals_fixed_order_brute_force():
    feasible = recomputed = 0
    for g, caps, B, seed in CASES:
        res = width_dp.solve(g, B, cap=caps)
        bf = brute_remat(g, B, caps, fixed_order=True)
        if bf is None:
            assert res.status == "infeasible", seed
            continue
        feasible += 1
        assert res.status == "optimal", (seed, res.message)
        assert res.compute == pytest.approx(bf), seed
        assert res.peak <= B
        assert all(c <= 1 + caps for c in res.evaluation.compute_counts)
        recomputed += res.compute > g.total_cost() + 1e-9
    assert feasible >= len(CASES) // 3 and recomputed >= 10


def test_width_dp_peak_objective_equals_brute_force():
    for g, caps, B, seed in CASES[:25]:
        allow = g.total_cost() + random.Random(seed).randint(0, 6)
        res = width_dp.solve(g, None, cap=caps, objective="peak", extra_compute=allow - g.total_cost())
        assert res.status == "optimal"
        assert res.peak == brute_min_peak(g, allow, caps, fixed_order=True), seed


def test_without_recompute_the_state_is_the_live_set():
    g = chain(6, size=10)
    # caps 0: across each step only the previous tensor is live
    assert width_dp.width(g, 0) == 1
    res = width_dp.solve(g, 20, cap=0)
    assert res.status == "optimal" and res.compute == 6.0
    assert width_dp.solve(g, 19, cap=0).status == "infeasible"


def test_long_chain_with_bounded_width_is_fast_and_exact():
    # a chain where only every other operator may be recomputed keeps the width small
    n = 60
    g = chain(n, size=10)
    res = width_dp.solve(g, 20, cap={f"v{i}": 0 for i in range(n)})
    assert res.status == "optimal" and res.compute == float(n)


def test_too_wide_is_a_clear_error():
    ops = [Operator(f"p{i}", ("x",), (f"t{i}",), 1.0) for i in range(12)]
    ops.append(Operator("sink", tuple(f"t{i}" for i in range(12)), ("out",), 1.0))
    g = Graph(ops, [Tensor("x", 1)] + [Tensor(f"t{i}", 1) for i in range(12)] + [Tensor("out", 1)],
              pinned={"x"}, outputs=("out",), name="fan")
    with pytest.raises(MemschedError, match=r"width-dp: graph 'fan' has width 1\d > 8"):
        width_dp.solve(g, 100, cap=1, max_width=8)


def _milp_or_skip():
    remat = pytest.importorskip("memsched.solvers.remat.dispatch")
    try:
        remat.solve_remat(chain(3), 200, method="milp", cap=1, time_limit=10)
    except (ImportError, NotImplementedError) as e:
        pytest.skip(f"milp referee unavailable: {e}")
    return remat


def test_width_dp_equals_milp_on_random_instances():
    remat = _milp_or_skip()
    for g, caps, B, seed in CASES[:60]:
        res = width_dp.solve(g, B, cap=caps)
        ref = remat.solve_remat(g, B, method="milp", cap=caps, time_limit=20)
        # both solve Checkmate's stage class: compare what each proved there
        assert res.scope == ref.scope == "given-order-stages"
        assert ref.class_status in ("optimal", "infeasible"), (seed, ref.class_status)
        assert res.status == ref.class_status, seed
        if ref.class_status == "optimal":
            assert res.compute == pytest.approx(ref.compute), seed
