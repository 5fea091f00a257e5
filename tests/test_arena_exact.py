"""The arena planners against brute force on tiny random instances, and the checker itself.

Brute force: for every order of the buffers, place each at the lowest address that is free
of the already placed conflicting buffers; the least arena over all orders is the optimum
(dropping the buffers of an optimal placement in offset order never raises one, docs/arena.md).
"""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from memsched.formulations import MemschedError
from memsched.solvers.arena import Buffer, PlacementError, check_placement, solve_arena
from memsched.solvers.arena.bounds import lower_bound, max_live
from memsched.solvers.arena.greedy import best_greedy


def _lowest_fit(bufs, order):
    off = {}
    for i in order:
        b = bufs[i]
        busy = sorted((off[j], off[j] + bufs[j].size) for j in off
                      if bufs[j].lower < b.upper and b.lower < bufs[j].upper)
        x = 0
        for lo, hi in busy:
            if x + b.size <= lo:
                break
            x = max(x, hi)
        off[i] = x
    return max((off[i] + bufs[i].size for i in off), default=0)


def brute_force(bufs) -> int:
    return min(_lowest_fit(bufs, p) for p in itertools.permutations(range(len(bufs))))


@st.composite
def instances(draw, max_n=6):
    n = draw(st.integers(1, max_n))
    out = []
    for k in range(n):
        lo = draw(st.integers(0, 6))
        up = draw(st.integers(lo + 1, 8))
        out.append(Buffer(str(k), lo, up, draw(st.integers(1, 5))))
    return out


def _pairwise_ok(bufs, offs) -> bool:
    for i, j in itertools.combinations(range(len(bufs)), 2):
        a, b = bufs[i], bufs[j]
        if a.lower < b.upper and b.lower < a.upper and offs[i] < offs[j] + b.size and offs[j] < offs[i] + a.size:
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(instances())
def test_search_is_optimal_and_bounds_hold(bufs):
    opt = brute_force(bufs)
    r = solve_arena(bufs, method="search", time_limit=30)
    assert r.status == "optimal"
    assert r.arena_size == opt
    assert check_placement(bufs, r.offsets) == opt
    assert max_live(bufs) <= lower_bound(bufs) <= opt
    assert r.lower_bound == opt
    assert best_greedy(bufs)[2] >= opt


@settings(max_examples=200, deadline=None)
@given(instances())
def test_capacity_answers_match_brute_force(bufs):
    opt = brute_force(bufs)
    fit = solve_arena(bufs, capacity=opt, method="search", time_limit=30)
    assert fit.status in ("feasible", "optimal") and fit.arena_size <= opt
    check_placement(bufs, fit.offsets, opt)
    tight = solve_arena(bufs, capacity=opt - 1, method="search", time_limit=30)
    assert tight.status == "infeasible" and tight.offsets is None
    assert tight.lower_bound >= opt


@settings(max_examples=60, deadline=None)
@given(instances(max_n=5))
def test_cpsat_backstop_is_optimal(bufs):
    r = solve_arena(bufs, method="cpsat", time_limit=30)
    assert r.status == "optimal" and r.arena_size == brute_force(bufs)


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_checker_agrees_with_pairwise_test(bufs, data):
    offs = [data.draw(st.integers(0, 8)) for _ in bufs]
    if _pairwise_ok(bufs, offs):
        assert check_placement(bufs, offs) == max(o + b.size for o, b in zip(offs, bufs))
    else:
        with pytest.raises(PlacementError):
            check_placement(bufs, offs)


def test_checker_rejects_capacity_and_negative():
    bufs = [Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)]
    assert check_placement(bufs, [0, 4]) == 8
    with pytest.raises(PlacementError, match="capacity"):
        check_placement(bufs, [0, 4], capacity=7)
    with pytest.raises(PlacementError, match="'a'"):
        check_placement(bufs, [-1, 4])
    with pytest.raises(PlacementError, match="overlap"):
        check_placement(bufs, [0, 3])


def test_components_zero_sizes_and_errors():
    bufs = [Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4), Buffer("z", 0, 9, 0), Buffer("c", 5, 7, 6)]
    r = solve_arena(bufs)
    assert r.status == "optimal" and r.arena_size == 8 and r.extra["parts"] == 2
    assert r.offset_map()["z"] == 0
    with pytest.raises(MemschedError, match="method"):
        solve_arena(bufs, method="nope")
    with pytest.raises(MemschedError, match="twice"):
        solve_arena(bufs + [Buffer("a", 0, 1, 1)])
    with pytest.raises(MemschedError, match="lower"):
        solve_arena([Buffer("x", 3, 3, 1)])
    assert solve_arena([]).arena_size == 0


def test_fragmentation_prone_instance_is_solved_exactly():
    # a and c share time with b only at their ends; greedy orders can fragment here, the search
    # reaches the brute-force optimum (which here equals max live: docs/arena.md, "Max live")
    bufs = [Buffer("a", 0, 2, 2), Buffer("b", 1, 3, 2), Buffer("c", 2, 4, 2), Buffer("d", 0, 1, 1),
            Buffer("e", 3, 4, 1), Buffer("f", 1, 2, 1), Buffer("g", 2, 3, 1)]
    opt = brute_force(bufs)
    r = solve_arena(bufs, method="search")
    assert r.arena_size == opt and r.status == "optimal"
    assert r.lower_bound == opt >= r.max_live


from memsched.solvers.arena import exact  # noqa: E402
from memsched.solvers.arena.exact import PREORDERS, search_fits, search_minimize  # noqa: E402

ENGINES = ["numpy"] + (["numba"] if exact.ENGINE == "numba" else [])


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    """Run a test under each search engine (the compiled kernel when numba is present)."""
    monkeypatch.setattr(exact, "ENGINE", request.param)
    return request.param


@st.composite
def tight_instances(draw):
    """Short, overlapping lifetimes and mixed sizes: greedy often misses, the search must work."""
    n = draw(st.integers(3, 7))
    out = []
    for k in range(n):
        lo = draw(st.integers(0, 4))
        out.append(Buffer(str(k), lo, lo + draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 3, 5]))))
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tight_instances(), st.sampled_from(PREORDERS))
def test_search_alone_decides_exactly(engine, bufs, preorder):
    opt = brute_force(bufs)
    offs = search_fits(bufs, opt, preorder=preorder)
    assert offs is not None
    assert check_placement(bufs, offs, opt) <= opt
    assert search_fits(bufs, opt - 1, preorder=preorder) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tight_instances())
def test_branch_and_bound_alone_minimizes(engine, bufs):
    offs, top = search_minimize(bufs)
    assert top == brute_force(bufs) == check_placement(bufs, offs)


@st.composite
def chain_instances(draw):
    """Longer horizons with short lifetimes: the search splits into independent groups often."""
    n = draw(st.integers(10, 22))
    out = []
    for k in range(n):
        lo = draw(st.integers(0, 14))
        out.append(Buffer(str(k), lo, lo + draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 3, 4, 6]))))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chain_instances(), st.sampled_from(PREORDERS))
def test_decomposing_search_agrees_with_branch_and_bound(engine, bufs, preorder):
    """The fit search splits into groups; the branch and bound never does: they must agree."""
    _, opt = search_minimize(bufs, preorder="WAT")
    offs = search_fits(bufs, opt, preorder=preorder)
    assert offs is not None and check_placement(bufs, offs, opt) <= opt
    assert search_fits(bufs, opt - 1, preorder=preorder) is None


def _kernel_run_restores(bufs, cap, preorder):
    """Run the compiled fit search on ``bufs`` (one component) at ``cap``; check that every split
    frame and group preorder was unwound (and, when exhausted, every placement); return the result."""
    from memsched.solvers.arena.kernel import BUDGET, EXHAUSTED, FOUND, KernelState

    part = exact._Part(bufs)
    k = KernelState(part, cap, part.rank(preorder), False, preorder)
    before = {a: getattr(k, a).copy() for a in ("rank", "grp", "minoff", "unpl", "low", "tot", "cross", "off")}
    while (r := k.run(50)) == BUDGET:
        pass
    kept = ("rank", "grp") if r == FOUND else tuple(before)
    for a in kept:
        assert (getattr(k, a) == before[a]).all(), a
    assert k.st[13] == 0 and k.st[15] == 0  # no open frame, empty rank log
    if r == FOUND:
        assert check_placement(bufs, [int(o) for o in k.off], cap) <= cap
    else:
        assert r == EXHAUSTED
    return r


# found by random search: under WAT, at capacities 28..30 (optimum 28), a group fails after a split
GROUP_FAILS = [(9, 15, 4), (9, 11, 5), (10, 11, 5), (12, 18, 3), (13, 14, 1), (14, 16, 6), (14, 18, 7),
               (14, 17, 7), (15, 16, 1), (15, 20, 4), (17, 23, 5), (19, 24, 4)]


@pytest.mark.skipif(exact.ENGINE != "numba", reason="the compiled kernel needs numba")
def test_kernel_undo_after_a_failed_group():
    bufs = [Buffer(str(k), lo, up, s) for k, (lo, up, s) in enumerate(GROUP_FAILS)]
    assert search_minimize(bufs)[1] == 28
    assert _kernel_run_restores(bufs, 27, "WAT") == 0
    for cap in (28, 29, 30):
        assert _kernel_run_restores(bufs, cap, "WAT") == 1


@pytest.mark.skipif(exact.ENGINE != "numba", reason="the compiled kernel needs numba")
@settings(max_examples=100, deadline=None)
@given(chain_instances(), st.sampled_from(PREORDERS))
def test_kernel_undo_restores_state(bufs, preorder):
    """Exhausted (one byte below the optimum) or successful (at it and above), the search leaves no
    frame or group preorder behind."""
    from memsched.solvers.arena.buffers import components

    live = [b for b in bufs if b.size > 0]
    for comp in components(live):
        g = [live[i] for i in comp]
        _, opt = search_minimize(g)
        for cap in (opt - 1, opt, opt + 2):
            _kernel_run_restores(g, cap, preorder)


@st.composite
def scaled_instances(draw):
    """Sizes sharing a common factor (the gcd rounding of the bounds must stay below the optimum)."""
    k = draw(st.sampled_from([2, 3, 64]))
    return [Buffer(b.id, b.lower, b.upper, b.size * k) for b in draw(instances(max_n=5))]


@settings(max_examples=150, deadline=None)
@given(scaled_instances())
def test_granularity_rounding_keeps_bounds_below_optimum(bufs):
    import math

    opt = brute_force(bufs)
    g = math.gcd(*[b.size for b in bufs])
    assert opt % g == 0  # docs/arena.md, "Granularity"
    r = solve_arena(bufs, method="search", time_limit=30)
    assert r.status == "optimal" and r.arena_size == opt == r.lower_bound
    tight = solve_arena(bufs, capacity=opt - 1, method="search", time_limit=30)
    assert tight.status == "infeasible" and opt <= tight.lower_bound <= opt + g - 1


def test_incumbent_is_kept_and_checked():
    bufs = [Buffer("a", 0, 2, 2), Buffer("b", 1, 3, 2), Buffer("c", 2, 4, 2), Buffer("d", 0, 1, 1),
            Buffer("e", 3, 4, 1), Buffer("f", 1, 2, 1), Buffer("g", 2, 3, 1)]
    opt = brute_force(bufs)
    best = solve_arena(bufs, method="search")
    r = solve_arena(bufs, method="greedy", incumbent=best.offsets)
    assert r.arena_size == opt and check_placement(bufs, r.offsets) == opt
    with pytest.raises(PlacementError, match="overlap"):
        solve_arena(bufs, incumbent=[0] * len(bufs))


@settings(max_examples=40, deadline=None)
@given(instances())
def test_unanswered_probes_make_no_claim(bufs):
    """With every fit search and branch and bound cut short (as on a hard instance), and the
    greedy plan replaced by the trivial stack (far above the optimum), the minimization keeps the
    stack and claims no bound above the optimum."""
    from unittest import mock

    def stack(part_bufs, stop_at=None):
        off, top = [], 0
        for b in part_bufs:
            off.append(top)
            top += b.size
        return "stack", off, top

    def no_answer(*a, **k):
        return "unknown", None, None

    class Cut:
        def __init__(self, *a, **k):
            self.nodes, self.best, self.best_height, self.cap = 0, None, None, 0

        def run(self):
            raise exact._Timeout

    opt = brute_force(bufs)
    with mock.patch.object(exact, "_fit", no_answer), mock.patch.object(exact, "_make_search", Cut), \
            mock.patch.object(exact, "best_greedy", stack):
        r = solve_arena(bufs, method="search", time_limit=0.3)
    assert r.lower_bound <= opt <= r.arena_size
    assert (r.status == "optimal") == (r.arena_size == r.lower_bound)


@settings(max_examples=150, deadline=None)
@given(instances(), st.data())
def test_capacity_with_minimize_matches_brute_force(bufs, data):
    """``capacity=C, minimize=True``: the least arena when it fits C (optimal), else infeasible."""
    opt = brute_force(bufs)
    c = data.draw(st.integers(max(max_live(bufs) - 1, 0), sum(b.size for b in bufs)))
    r = solve_arena(bufs, capacity=c, minimize=True, method="search", time_limit=30)
    if c >= opt:
        assert r.status == "optimal" and r.arena_size == opt == r.lower_bound
        assert check_placement(bufs, r.offsets, c) == opt
    else:
        assert r.status == "infeasible" and r.offsets is None and c < r.lower_bound <= opt



def _greedy_above_max_live():
    """12 seeded buffers whose best greedy placement (34) is above max live (33)."""
    import random

    rng = random.Random(10)
    bufs = []
    for i in range(12):
        lo = rng.randint(0, 10)
        bufs.append(Buffer(f"b{i}", lo, lo + rng.randint(1, 6), rng.randint(1, 9)))
    return bufs


@pytest.mark.parametrize("where", ["_fit", "_cpsat"])
def test_ctrl_c_returns_the_best_placement_so_far(monkeypatch, where):
    """Ctrl-C inside the search or CP-SAT: the best placement so far (checked), the bound
    proven so far, status interrupted (it was an exit with no placement before)."""
    bufs = _greedy_above_max_live()

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(exact, where, stop)
    try:
        res = solve_arena(bufs, method="cpsat" if where == "_cpsat" else "search", time_limit=10)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped solve_arena: no placement returned")
    assert res.status == "interrupted" and res.extra["interrupted"]
    assert check_placement(res.buffers, res.offsets) == res.arena_size == 34
    assert res.lower_bound == max_live(bufs) == 33
