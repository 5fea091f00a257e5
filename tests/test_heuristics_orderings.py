"""Heuristic orderings: valid topological orders, the efficient implementations agree with
naive re-implementations of their keys, Liu's algorithm is optimal on trees, and
solve_order's statuses and errors."""
import pytest
from hypothesis import given, settings, strategies as st

from memsched.formulations import MemschedError, Schedule, evaluate
from memsched.instances.generators import chain, random_dag, random_layered, random_multi_output, tree
from memsched.solvers.ordering.liu import NotATreeError, liu_is_exact, liu_order, liu_peak_claim
from memsched.cli.order import format_result
from memsched.solvers.ordering.dispatch import solve_order
from memsched.solvers.ordering.heuristics import HEURISTICS, applicable, best_with_peaks, is_topological
from referee import all_topological_orders, least_peak
from strategies import random_graphs, random_trees


def peak_of(g, order):
    return evaluate(g, Schedule.from_order(g, order)).peak


def brute_optimum(g):
    """Minimum peak over all topological orders (explicit enumeration)."""
    return min(peak_of(g, o) for o in all_topological_orders(g))


# ------------------------------------------------------------ naive references
def naive_memory_state(g):
    """Name-free helpers shared by the naive schedulers: bytes freed if v ran now."""
    keep = set(g.pinned_idx) | set(g.output_idx)
    pending = {j: len(g.consumers[j]) for j in range(g.n_tensors)}

    def freed_now(v):
        f = sum(g.size[j] for j in g.op_in[v] if j not in keep and pending[j] == 1)
        return f + sum(g.size[j] for j in g.op_out[v] if j not in keep and pending[j] == 0)

    def run(v):
        for j in g.op_in[v]:
            pending[j] -= 1

    return freed_now, run, keep, pending


def naive_lpmf(g):
    """Inductor's key scanned over all ready nodes each step (O(n^2))."""
    pos = {v: k for k, v in enumerate(g.given_order())}
    freed_now, run, keep, pending = naive_memory_state(g)
    live = sum(g.size[j] for j in g.input_idx if j in keep or pending[j] > 0)
    peak = max(g.resident_at_start(), sum(g.size[j] for j in g.output_idx))
    done, order = set(), []
    while len(order) < g.n_ops:
        ready = [v for v in range(g.n_ops) if v not in done and all(p in done for p in g.op_pred()[v])]

        def key(v):
            out = sum(g.size[j] for j in g.op_out[v])
            return (max(live + out + g.workspace[v], peak), out - freed_now(v), pos[v])

        v = min(ready, key=key)
        out = sum(g.size[j] for j in g.op_out[v])
        peak = max(peak, live + out + g.workspace[v])
        live += out - freed_now(v)
        run(v)
        done.add(v)
        order.append(v)
    return order


def naive_greedy(g):
    pos = {v: k for k, v in enumerate(g.given_order())}
    freed_now, run, _, _ = naive_memory_state(g)
    done, order = set(), []
    while len(order) < g.n_ops:
        ready = [v for v in range(g.n_ops) if v not in done and all(p in done for p in g.op_pred()[v])]

        def key(v):
            out = sum(g.size[j] for j in g.op_out[v])
            return (out - freed_now(v), out + g.workspace[v], pos[v])

        v = min(ready, key=key)
        run(v)
        done.add(v)
        order.append(v)
    return order


def naive_bfs(g):
    pos = {v: k for k, v in enumerate(g.given_order())}
    at = {}
    order = []
    while len(order) < g.n_ops:
        ready = [v for v in range(g.n_ops) if v not in at and all(p in at for p in g.op_pred()[v])]
        v = min(ready, key=lambda v: (sorted(at[p] for p in g.op_pred()[v]), pos[v]))
        at[v] = len(order)
        order.append(v)
    return order


def naive_dfs(g):
    pos = {v: k for k, v in enumerate(g.given_order())}
    touch = {v: sum(g.size[j] for j in g.op_out[v]) + g.workspace[v]
             + sum(g.size[j] for j in g.op_in[v] if j not in g.pinned_idx) for v in range(g.n_ops)}
    key = lambda v: (touch[v], pos[v])
    seen, order = set(), []

    def visit(v):
        if v in seen:
            return
        seen.add(v)
        for p in sorted(g.op_pred()[v], key=key):
            visit(p)
        order.append(v)

    for v in sorted(range(g.n_ops), key=key):
        visit(v)
    return order


NAIVE = {"lpmf": naive_lpmf, "greedy": naive_greedy, "bfs": naive_bfs, "dfs": naive_dfs}


# -------------------------------------------------------------------- tests
@settings(max_examples=600)
@given(random_graphs(max_ops=10))
def test_every_heuristic_returns_a_valid_topological_order(g):
    for name in applicable(g) + ["best"]:
        order = HEURISTICS[name](g)
        assert is_topological(g, order), name
        evaluate(g, Schedule.from_order(g, order))  # valid schedule


@settings(max_examples=500)
@given(random_graphs(max_ops=10))
def test_fast_heuristics_equal_their_naive_definitions(g):
    for name, ref in NAIVE.items():
        assert HEURISTICS[name](g) == ref(g), name


@settings(max_examples=150)
@given(st.integers(2, 60), st.integers(0, 10**6))
def test_fast_heuristics_equal_naive_on_generated_dags(n, seed):
    for g in (random_dag(n, seed, edge_prob=0.15), random_multi_output(n, seed)):
        for name, ref in NAIVE.items():
            assert HEURISTICS[name](g) == ref(g), name


@settings(max_examples=400)
@given(random_trees(max_ops=9))
def test_liu_equals_brute_force_optimum_on_trees(g):
    assert g.is_tree()
    order = liu_order(g)
    assert is_topological(g, order)
    p = peak_of(g, order)
    if liu_is_exact(g):
        assert p == least_peak(g)
        assert liu_peak_claim(g) == p
    else:
        assert p >= least_peak(g)


@settings(max_examples=60)
@given(random_trees(max_ops=7, pinned=False, multi_output=False, required=False, workspace=False,
                    free_inputs=False))
def test_liu_on_plain_trees_equals_permutation_enumeration(g):
    assert liu_is_exact(g)
    assert peak_of(g, liu_order(g)) == brute_optimum(g)


@settings(max_examples=300)
@given(random_graphs(max_ops=9))
def test_liu_rejects_non_trees_and_best_is_minimum(g):
    name, order, peaks = best_with_peaks(g)
    assert peak_of(g, order) == min(peaks.values()) == peaks[name]
    assert set(peaks) == set(applicable(g))
    if not g.is_tree():
        with pytest.raises(NotATreeError, match="in-tree"):
            liu_order(g)
        assert "liu" not in peaks


@settings(max_examples=100)
@given(random_graphs(max_ops=8), st.sampled_from(list(HEURISTICS)))
def test_heuristics_are_deterministic(g, name):
    if name == "liu" and not g.is_tree():
        return
    assert HEURISTICS[name](g) == HEURISTICS[name](g)


def test_liu_on_generated_trees_beats_or_ties_every_heuristic():
    for seed in range(30):
        g = tree(40, seed=seed)
        res = solve_order(g, "liu")
        assert res.status == "optimal" and res.lower_bound == res.peak
        for name in applicable(g):
            assert res.peak <= peak_of(g, HEURISTICS[name](g)), name


def test_liu_large_chain_and_forest_are_fast_enough_to_finish():
    g = chain(20000)
    assert liu_order(g) == list(range(20000))
    g = tree(20000, seed=3)
    assert is_topological(g, liu_order(g))


def test_solve_order_statuses_and_errors():
    g = random_layered(40, seed=2)
    for name in ("given", "dfs", "bfs", "lpmf", "greedy", "best"):
        res = solve_order(g, name)
        assert res.status == "feasible" and res.solver == name
        d = res.to_json(g)
        assert {"status", "peak", "compute", "method", "wall_s", "order"} <= d.keys()
        assert isinstance(d["peak"], int) and len(d["order"]) == g.n_ops
    res = solve_order(g, "best")
    assert res.peak == min(res.extra["candidates"].values())
    assert res.extra["chosen"] in res.extra["candidates"]
    assert "heuristic" in format_result(g, res)
    with pytest.raises(MemschedError, match="unknown ordering method 'zz'; valid: given, dfs, bfs, lpmf"):
        solve_order(g, "zz")
    with pytest.raises(MemschedError, match="in-tree"):
        solve_order(g, "liu")
    t = tree(12, seed=5)
    res = solve_order(t, "best")
    assert res.status == "optimal" and res.peak == solve_order(t, "liu").peak
    assert "optimal" in format_result(t, res)


def test_heuristics_improve_the_given_order_somewhere():
    """A sanity check that the heuristics are not all the given order in disguise."""
    g = random_layered(100, seed=0)
    peaks = {name: peak_of(g, HEURISTICS[name](g)) for name in applicable(g)}
    assert min(peaks.values()) < peaks["given"]
