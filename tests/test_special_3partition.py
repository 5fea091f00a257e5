"""The 3-PARTITION gadget: its YES/NO answer equals an independent brute-force
3-partition check, YES instances carry a witness the evaluator accepts at the
known optimum within the caps, the graph is two-terminal series-parallel
(treewidth <= 2), and the given-order MILP referee recovers the known optimum
(or infeasibility) on small instances."""
from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from memsched.formulations import Schedule, evaluate
from memsched.instances.gadgets import GadgetError, random_three_partition, three_partition_gadget, three_partition_solve
from memsched.solvers.special.series_parallel import decompose_graph


def brute_3partition(nums) -> bool:
    """Is there a partition into triples of equal sum? (plain enumeration)"""
    n = len(nums)
    if n % 3:
        return False
    q = n // 3
    if sum(nums) % q:
        return False
    T = sum(nums) // q

    def rec(left: tuple) -> bool:
        if not left:
            return True
        first, rest = left[0], left[1:]
        for i, j in itertools.combinations(range(len(rest)), 2):
            if nums[first] + nums[rest[i]] + nums[rest[j]] == T:
                if rec(tuple(x for k, x in enumerate(rest) if k not in (i, j))):
                    return True
        return False

    return rec(tuple(range(n)))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(0, 10 ** 6))
def test_answer_matches_brute_force_on_random_instances(q, seed):
    nums = random_three_partition(3 * q, seed)
    g, ans = three_partition_gadget(nums, cap=1)
    assert (ans["answer"] == "YES") == brute_3partition(nums)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=3, max_size=9).filter(lambda l: len(l) % 3 == 0 and sum(l) % (len(l) // 3) == 0))
def test_solver_matches_brute_force_on_arbitrary_numbers(nums):
    T = sum(nums) // (len(nums) // 3)
    groups = three_partition_solve(nums)
    if all(T / 4 < a < T / 2 for a in nums):  # 3-partition proper: groups are triples
        assert (groups is not None) == brute_3partition(nums)
    if groups is not None:
        assert sorted(i for gr in groups for i in gr) == list(range(len(nums)))
        assert all(sum(nums[i] for i in gr) == T for gr in groups)


@pytest.mark.parametrize("cap", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_witness_is_valid_at_the_known_optimum(cap, seed):
    nums = random_three_partition(6 + 3 * (seed % 2), seed)
    g, ans = three_partition_gadget(nums, cap=cap)
    if ans["answer"] == "NO":
        assert ans["optimum"] is None and "witness" not in ans
        return
    ev = evaluate(g, Schedule.from_names(g, ans["witness"]))
    assert ev.peak <= ans["budget"]
    assert ev.compute == ans["optimum"] == ans["baseline_compute"] + len(nums) * cap
    assert max(ev.compute_counts) <= 1 + cap  # the caps hold


@pytest.mark.parametrize("cap", [1, 2])
def test_gadget_is_series_parallel_treewidth_two(cap):
    g, _ = three_partition_gadget(random_three_partition(9, 3), cap=cap)
    decompose_graph(g)  # raises if not two-terminal series-parallel
    und = nx.Graph(g.op_digraph())
    tw, _ = nx.algorithms.approximation.treewidth_min_degree(und)
    assert tw <= 2


def test_peak_form_records_the_allowance():
    g, ans = three_partition_gadget([10, 10, 10], cap=2, objective="peak")
    assert ans["optimum"] == ans["budget"] and ans["extra_compute"] == 3 * 2
    assert ans["eps"] * ans["baseline_compute"] == ans["extra_compute"]


def test_bad_numbers_are_clear_errors():
    with pytest.raises(GadgetError, match="multiple of 3"):
        three_partition_gadget([1, 2, 3, 4])
    with pytest.raises(GadgetError, match="#1 must be positive"):
        three_partition_gadget([3, -1, 4])
    with pytest.raises(GadgetError, match="cap must be an integer >= 1"):
        three_partition_gadget([1, 1, 1], cap=0)


# ------------------------------------------------------------ referees
# The MILP is imported directly: a referee that cannot be imported (highspy or pyomo
# missing) fails these tests, it never skips them.
from memsched.solvers.remat.dispatch import solve_remat  # noqa: E402


@pytest.mark.parametrize("nums,cap", [([10, 10, 10], 1), ([10, 10, 10], 2), ([20, 19, 33, 22, 32, 18], 1),
                                      ([24, 25, 27, 21, 24, 23], 1)])
def test_milp_recovers_the_known_optimum(nums, cap):
    g, ans = three_partition_gadget(nums, cap=cap)
    assert ans["answer"] == "YES"
    res = solve_remat(g, ans["budget"], method="milp", cap=cap, order="given", time_limit=60)
    # the gadget's answer is about Checkmate's stage class, the MILP's class (class_status)
    assert res.scope == "given-order-stages"
    assert res.class_status == "optimal" and res.compute == pytest.approx(ans["optimum"])


# NO instances: six numbers strictly between T/4 and T/2 (3-PARTITION proper) with no two
# triples of sum T = 26 and T = 20.
NO_INSTANCES = [[8, 8, 8, 8, 9, 11], [6, 6, 6, 6, 7, 9]]


@pytest.mark.parametrize("nums", NO_INSTANCES)
def test_no_instances_are_no(nums):
    T = sum(nums) // (len(nums) // 3)
    assert all(T / 4 < a < T / 2 for a in nums)
    assert not brute_3partition(nums) and three_partition_solve(nums) is None
    for cap in (1, 2, 3):
        g, ans = three_partition_gadget(nums, cap=cap)
        assert ans["answer"] == "NO" and ans["optimum"] is None and "witness" not in ans


@pytest.mark.parametrize("nums", NO_INSTANCES)
def test_milp_proves_no_instances_infeasible_in_its_class(nums):
    """At cap 1 HiGHS proves that no schedule of the stage class fits the budget (the
    gadget's NO answer). That is a class claim: asked in the given order (a larger class)
    the answer is not "infeasible" unless proved for that class too, and asked in free
    order the instance is easy (every item chain computed late) and must not be called
    infeasible: cp finds the no-recompute optimum there."""
    g, ans = three_partition_gadget(nums, cap=1)
    B = ans["budget"]
    res = solve_remat(g, B, method="milp", cap=1, order="given", time_limit=120)
    assert res.class_status == "infeasible" and res.schedule is None, (res.status, res.class_status, res.message)
    assert res.status in ("infeasible", "unknown")
    if nums == NO_INSTANCES[0]:  # the free-order side, on the fast instance only
        free = solve_remat(g, B, method="cp", cap=1, order="free", time_limit=60, workers=1)
        assert free.status == "optimal" and free.compute == ans["baseline_compute"]
        mi = solve_remat(g, B, method="milp", cap=1, order="free", time_limit=120)
        assert mi.class_status == "infeasible" and mi.status not in ("infeasible", "optimal")
