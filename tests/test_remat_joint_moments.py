"""Several moments at once (solvers/remat/joint_moments.py; docs/remat.md, "Several moments at
once") against the brute-force referee (tests/referee.py) on random tiny graphs with every
graph feature: for the given-order class with caps 0, 1, 2 and unbounded, the bound is never
above the class's least compute within B, "infeasible" only where the class has no schedule,
and the cap-1 rows raise it above the program without them on some instances."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from memsched.solvers.remat.joint_moments import joint_moment_bound

from referee import check_compute_bound, seeded_bound_sweep
from referee_strategies import random_tiny_graph, tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])
CAPS = (0, 1, 2, None)


def _bound(g, B, caps):
    return joint_moment_bound(g, B, caps, time_limit=30, moments=range(g.n_ops))


@settings(max_examples=150, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_the_bound_never_exceeds_the_class_optimum(inst):
    g, B = inst
    for cap in CAPS:
        check_compute_bound(g, B, cap, _bound, "given")


def test_seeded_instances_all_caps():
    """2,000 seeded instances, caps 0, 1, 2 and unbounded: never above the given-order class's
    optimum, infeasible only when it has no schedule; it proves extra compute on some instances
    and refutes some budgets."""
    tried, positive, infeasible = seeded_bound_sweep(_bound, CAPS, range(2000), order="given")
    assert tried >= 100, tried
    assert positive > 0, (positive, tried)
    assert infeasible > 0


def test_the_cap_one_rows_raise_the_bound():
    """With cap 1 the rows that tie a late rerun to the original copy (an operator that runs
    again after x2 ran only once before it) never lower the bound and raise it on some
    instances; with cap 2 they are not added (a second rerun may serve the reads between)."""
    raised = 0
    for seed in range(1500):
        g, B = random_tiny_graph(seed, max_ops=7)
        kw = dict(time_limit=30, moments=range(g.n_ops))
        with_rows = joint_moment_bound(g, B, [1] * g.n_ops, **kw)
        without = joint_moment_bound(g, B, [1] * g.n_ops, couple=False, **kw)
        if without.infeasible:
            assert with_rows.infeasible, seed
            continue
        assert with_rows.infeasible or with_rows.extra >= without.extra - 1e-9, (seed, with_rows.extra, without.extra)
        raised += with_rows.infeasible or with_rows.extra > without.extra + 1e-9
        cap2 = joint_moment_bound(g, B, [2] * g.n_ops, **kw)
        plain2 = joint_moment_bound(g, B, [2] * g.n_ops, couple=False, **kw)
        assert (cap2.extra, cap2.infeasible) == (plain2.extra, plain2.infeasible), seed
    assert raised > 0, raised


def test_a_resumed_call_stays_below_the_class_optimum(monkeypatch):
    """A call that resumes an earlier one (``start``, ``known``: the driver's phase after the
    first schedule, ``cp._joint_floor``) gives every program all the time left and grows from
    ``start``; its bound is the same kind of bound, never above the class optimum. Programs of
    1, 2, 4, ... moments (``FIRST_MOMENTS = 1``) so that the growth is exercised on tiny graphs."""
    from memsched.solvers.remat import joint_moments

    monkeypatch.setattr(joint_moments, "FIRST_MOMENTS", 1)

    def resumed(g, B, caps):
        return joint_moment_bound(g, B, caps, time_limit=30, moments=range(g.n_ops), start=2, known=0.0)

    tried, positive, infeasible = seeded_bound_sweep(resumed, (1, 2), range(600), order="given")
    assert tried >= 30 and positive > 0, (tried, positive)


def test_resume_names_the_program_cut_short():
    """``resume`` is the size of the program the time limit cut short (None when the growth
    ended by its own rules), so a later call can start there."""
    for seed in range(200):
        g, B = random_tiny_graph(seed, max_ops=7)
        done = joint_moment_bound(g, B, [1] * g.n_ops, time_limit=30, moments=range(g.n_ops))
        if done.infeasible or not done.checks:
            continue
        assert done.resume is None, (seed, done.checks)
        cut = joint_moment_bound(g, B, [1] * g.n_ops, time_limit=0.0, moments=range(g.n_ops))
        assert cut.resume == min(4, g.n_ops) and cut.extra == 0.0 and not cut.checks, (seed, cut)
        return
    raise AssertionError("no instance with a joint program")
