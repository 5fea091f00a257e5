"""The precedence graph of learned precedences (solvers/ordering/guided.py, docs/bounds.md
4b) against a brute force over all topological orders of tiny graphs."""
from __future__ import annotations

import random

from memsched.formulations import Schedule, evaluate
from memsched.solvers.ordering import bounds as B
from memsched.solvers.ordering.guided import learned_covering_pairs, precedence_graph
from referee_strategies import random_tiny_graph
from test_bounds_properties import all_orders, simulate


def test_precedence_graph_keeps_every_order_within_theta_and_nothing_else():
    """On 2,000 seeded tiny graphs with every graph feature, theta drawn between the trap
    bound and the given order's peak: when the learned precedences do not refute theta,
    (1) every order of peak <= theta is an order of the precedence graph, (2) every order of
    the precedence graph is an order of the graph, with the same peak there (evaluator on
    both graphs), hence (3) optimum(graph) >= min(optimum(precedence graph), theta + 1), the
    bound the guided search claims. It learns something on some graphs and removes orders
    above theta on some. Red when a learned pair was added the wrong way round, and when
    the zero-byte tensors of a pair were given one byte."""
    learned_on = pruned_on = 0
    for seed in range(2000):
        g, _B = random_tiny_graph(seed, max_ops=7)
        if g.n_ops == 0:
            continue
        rng = random.Random(seed)
        lo, hi = B.trap_bound(g), simulate(g, g.given_order())[0]
        theta = rng.randint(lo, max(lo, hi))
        res, before = B.learn_precedences(g, theta, time_budget=30.0)
        assert res is not None
        if res is True:
            continue
        pg = precedence_graph(g, before)
        assert [o.name for o in pg.ops] == [o.name for o in g.ops]
        orders_g = {tuple(o): simulate(g, o)[0] for o in all_orders(g)}
        orders_pg = {tuple(o): simulate(pg, o)[0] for o in all_orders(pg)}
        for o, pk in orders_g.items():
            if pk <= theta:
                assert o in orders_pg, (seed, theta, o)
        for o, pk in orders_pg.items():
            assert o in orders_g and orders_g[o] == pk, (seed, o)
        o = next(iter(orders_pg))
        assert evaluate(pg, Schedule.from_order(pg, list(o))).peak == evaluate(g, Schedule.from_order(g, list(o))).peak
        assert min(orders_g.values()) >= min(min(orders_pg.values()), theta + 1)
        learned_on += bool(learned_covering_pairs(g, before))
        pruned_on += len(orders_pg) < len(orders_g)
    assert learned_on > 100 and pruned_on > 100, (learned_on, pruned_on)


def test_guided_search_claims_at_most_theta_plus_one_from_the_precedence_graph():
    """``exact._stage_guided`` on 1,500 seeded graphs of 8-24 operators (random tiny graphs
    with every feature, small random layered graphs), optimum by the exact down-set DP, theta
    = optimum - 1 or halfway between the trap bound and the optimum, incumbent a random
    topological order: below the optimum the learned precedences may exclude every optimal
    order (the precedence graph's optimum is then above the graph's; it happens on some of
    these graphs), so only ``min(L, theta + 1)`` is a bound. The segment's bound never
    exceeds the optimum and its incumbent is an order of the graph with its evaluated peak.
    Red when the precedence graph's bound was taken without the cap theta + 1."""
    import time

    from memsched.formulations import order_peak
    from memsched.instances.generators import random_layered
    from memsched.solvers.ordering import exact as E
    from memsched.solvers.ordering.downset_dp import downset_dp
    from strategies import random_topological_order
    from test_exact_order_properties import is_topo

    tried = above = 0
    for seed in range(1500):
        rng = random.Random(seed)
        g = random_layered(rng.randint(10, 24), seed) if seed % 2 else random_tiny_graph(seed, max_ops=12, min_ops=8)[0]
        r = downset_dp(g)
        assert r.exact
        opt, lo = r.value, B.trap_bound(g)
        if lo >= opt:
            continue
        for theta in (opt - 1, (lo + opt) // 2):
            res, before = B.learn_precedences(g, theta, time_budget=30.0)
            if res is not False:
                continue
            s = E._Segment(g, random_topological_order(g, rng), lo, time.perf_counter() + 30, 1000,
                           {"shave": {"guided": []}}, lambda m: None, 0)
            E._stage_guided(s, theta, before, end=time.perf_counter() + 10, workers=1, seed=0)
            assert s.lb <= opt, (seed, theta, s.lb, opt)
            assert is_topo(g, s.so) and s.cur == order_peak(g, s.so) >= opt, seed
            tried += 1
            above += downset_dp(precedence_graph(g, before)).value > opt
    assert tried > 50 and above > 5, (tried, above)


def test_interrupt_inside_the_guided_search_keeps_the_segment_order_and_bound(monkeypatch):
    """Ctrl-C while the driver runs on a precedence graph: the inner run returns (status
    timeout), the stage keeps what it has (an order of the segment with its evaluated peak,
    a bound at most the optimum) and passes the interrupt on, so that ``_solve_segment``
    returns the segment's best order with the interrupted flag. Red when the interrupt was
    swallowed by the stage (the driver would then go on after Ctrl-C)."""
    import time

    import pytest

    from memsched.formulations import order_peak
    from memsched.solvers.ordering import exact as E
    from test_bounds_properties import brute
    from test_exact_order_properties import is_topo

    orig = E._bounds_and_heuristics
    hit = []

    def boom(run, pair_budget):
        if any(t.name.startswith("__learned_") for t in run.g.tensors):
            hit.append(run.g.name)
            raise KeyboardInterrupt
        return orig(run, pair_budget)

    monkeypatch.setattr(E, "_bounds_and_heuristics", boom)
    for seed in range(400):
        g, _B = random_tiny_graph(seed, max_ops=7)
        if g.n_ops == 0:
            continue
        opt = brute(g)[0]
        s = E._Segment(g, list(g.given_order()), B.trap_bound(g), time.perf_counter() + 30, 1000, {},
                       lambda m: None, 0)
        before = len(hit)
        try:
            E._stage_shave(s, share=1.0)
        except KeyboardInterrupt:
            assert len(hit) == before + 1, seed
            assert is_topo(g, s.so) and s.cur == order_peak(g, s.so) and s.lb <= opt, seed
            return
        assert len(hit) == before, seed  # no interrupt raised: the inner run never started
    pytest.fail("no seed reached the guided search")


def test_a_relation_learned_at_a_higher_theta_starts_the_fixpoint_at_a_lower_one():
    """``learn_precedences(g, theta, initial=R)`` with R learned at theta' >= theta on 2,000
    seeded graphs (tiny graphs with every feature, and small random layered graphs), against
    all topological orders: (1) a refutation means every order peaks above theta; (2)
    otherwise every order of peak <= theta obeys the relation returned (each learned v
    after u holds), and that relation contains R (the start is kept). R is the relation
    learned at theta', or the exact one (every precedence all orders of peak <= theta' obey,
    by enumeration; usually more than the fixpoint learns). Where the cold fixpoint refutes
    theta, so does the warm one from the learned R (it refutes on dozens of these graphs).
    Red when the initial relation was read the wrong way round (as successors), and when it
    was ignored."""
    from memsched.instances.generators import random_layered

    both = 0
    for seed in range(2000):
        rng = random.Random(seed)
        g = random_layered(rng.randint(5, 8), seed) if seed % 3 == 0 else random_tiny_graph(seed, max_ops=7)[0]
        if g.n_ops == 0:
            continue
        orders = [(tuple(o), simulate(g, o)[0]) for o in all_orders(g)]
        opt = min(pk for _o, pk in orders)
        lo, hi = B.trap_bound(g), max(pk for _o, pk in orders)
        theta0 = rng.randint(lo, max(lo, hi))
        res0, rel0 = B.learn_precedences(g, theta0, time_budget=30.0)
        if res0 is not False:
            continue
        theta = rng.randint(min(lo, theta0), theta0)
        cold, _ = B.learn_precedences(g, theta, time_budget=30.0)
        within = [o for o, pk in orders if pk <= theta0]
        exact = [sum(1 << u for u in range(g.n_ops) if all(o.index(u) < o.index(v) for o in within))
                 for v in range(g.n_ops)]
        for start in (rel0, exact):
            res, rel = B.learn_precedences(g, theta, time_budget=30.0, initial=start)
            assert res is not None and cold is not None
            if res is True:
                assert opt > theta, (seed, theta0, theta, opt)
                both += cold is True and start is rel0
                continue
            assert cold is not True or start is not rel0, (seed, theta)
            assert all(rel[v] & start[v] == start[v] for v in range(g.n_ops)), seed
            for o, pk in orders:
                if pk <= theta:
                    at = {v: i for i, v in enumerate(o)}
                    for v in range(g.n_ops):
                        m = rel[v]
                        while m:
                            u = (m & -m).bit_length() - 1
                            assert at[u] < at[v], (seed, theta, o, u, v)
                            m &= m - 1
    assert both > 20, both
