"""Ruin and recreate (solvers/remat/sequence_lns.py) and the executor over compute sequences
with planned recomputations (solvers/remat/executor.py), judged by the evaluator on seeded
tiny graphs with every graph feature."""
from __future__ import annotations

import random
import time

import pytest

from memsched.formulations import evaluate
from memsched.solvers.remat.dtr_greedy import greedy_schedule
from memsched.solvers.remat.executor import ExecutionFailed, Executor
from memsched.solvers.remat.local_search import drop_recomputations, schedule_from_sequence
from memsched.solvers.remat.sequence_lns import ruin_and_recreate
from referee_strategies import random_tiny_graph


def _sequences(seeds: int, score: str = "chain"):
    """(seed, graph, budget, sequence) for the greedy's compute sequence and its dropped version,
    on the seeded tiny graphs where the eviction greedy fits the budget and recomputes."""
    for seed in range(seeds):
        g, B = random_tiny_graph(seed, max_ops=10)
        s = greedy_schedule(g, B, None, g.given_order(), score=score)
        if s is None or len(s.computes()) == g.n_ops:
            continue
        yield seed, g, B, list(s.computes())
        yield seed, g, B, drop_recomputations(g, s.computes(), B)


def _read_before_rerun(g, seq) -> bool:
    """Whether every recomputation in ``seq`` makes no kept tensor (pinned or required) and has
    a reader of one of its outputs before its operator's next computation."""
    keep = g.pinned_idx | g.output_idx
    for q, v in enumerate(seq):
        if v not in seq[:q]:
            continue
        if any(j in keep for j in g.op_out[v]):
            return False
        nxt = next((r for r in range(q + 1, len(seq)) if seq[r] == v), len(seq))
        if not any(j in g.op_in[seq[r]] for r in range(q + 1, nxt) for j in g.op_out[v]):
            return False
    return True


def test_a_planned_sequence_is_replayed_as_written():
    """Without a budget the executor runs a compute sequence with planned recomputations as
    written: where every recomputation is read before its operator runs again (and makes no
    kept tensor), the schedule computes exactly that sequence and peaks exactly where
    ``schedule_from_sequence`` does (each copy freed after its last reader before the next
    computation of its producer). Red when a copy was not freed before its producer's planned
    recomputation (the recomputation was then skipped)."""
    checked = 0
    for seed, g, _B, seq in _sequences(2000):
        if not _read_before_rerun(g, seq):
            continue
        s = Executor(g, seq).execute()
        assert list(s.computes()) == seq, seed
        assert evaluate(g, s).peak == evaluate(g, schedule_from_sequence(g, seq)).peak, seed
        checked += 1
    assert checked > 300


def test_a_ruined_sequence_recreated_under_the_budget_is_a_valid_schedule():
    """The executor with a budget on a sequence whose recomputations were partly removed either
    fails or returns a valid schedule (the evaluator judges it) that runs every operator and
    fits the budget."""
    rnd = random.Random(0)
    made = 0
    for seed, g, B, seq in _sequences(1500):
        seen, ruined = set(), []
        for v in seq:
            if v not in seen or rnd.random() < 0.5:
                ruined.append(v)
            seen.add(v)
        try:
            s = Executor(g, ruined, budget=B, evict=True, score=rnd.choice(("chain", "chain-stale"))).execute()
        except ExecutionFailed:
            continue
        ev = evaluate(g, s)  # raises on an invalid schedule
        assert ev.peak <= B and set(s.computes()) == set(range(g.n_ops)), seed
        made += 1
    assert made > 300


@pytest.mark.parametrize("cap", [None, 1])
def test_ruin_and_recreate_keeps_the_budget_and_never_costs_more(cap):
    """From the greedy's dropped sequence: the result is a valid schedule within the budget (and
    the caps), runs every operator and costs no more than the start; on some graphs less."""
    cheaper = checked = 0
    for seed, g, B, seq in _sequences(1200, score="dtr"):
        caps = None if cap is None else [cap] * g.n_ops
        start = evaluate(g, schedule_from_sequence(g, seq))
        if start.peak > B or (caps is not None and max(start.compute_counts) > 1 + cap):
            continue
        out, stats = ruin_and_recreate(g, B, seq, caps=caps, deadline=time.perf_counter() + 30, seed=seed,
                                       max_steps=8)
        ev = evaluate(g, schedule_from_sequence(g, out))
        assert ev.peak <= B and set(out) == set(range(g.n_ops)), seed
        if caps is not None:
            assert max(ev.compute_counts) <= 1 + cap, seed
        assert ev.compute <= start.compute + 1e-9 and stats["best"] == pytest.approx(ev.compute), seed
        cheaper += ev.compute < start.compute - 1e-9
        checked += 1
    assert checked > 200 and cheaper > 0, (checked, cheaper)


def test_a_start_over_the_budget_is_refused():
    g, B = random_tiny_graph(3, max_ops=10)
    with pytest.raises(ValueError):
        ruin_and_recreate(g, 0, g.given_order(), deadline=time.perf_counter() + 1)


def test_ruin_and_recreate_keeps_the_order_of_first_computations():
    """The given-order driver (solvers/remat/cp.py, ``_polish``) relies on this: the search's
    result computes every operator for the first time in the order its start did, so a schedule
    of the given-order class stays in the class. Red when the ruin swapped two independent first
    computations."""
    checked = 0
    for seed, g, B, seq in _sequences(1200, score="belady"):
        start = evaluate(g, schedule_from_sequence(g, seq))
        if start.peak > B:
            continue
        out, _stats = ruin_and_recreate(g, B, seq, deadline=time.perf_counter() + 30, seed=seed, max_steps=6)
        assert list(dict.fromkeys(out)) == list(dict.fromkeys(seq)) == g.given_order(), seed
        checked += 1
    assert checked > 200


def test_ctrl_c_returns_the_cheapest_sequence_so_far():
    """Ctrl-C during the search (here raised from the progress callback at the first
    improvement) ends it with the cheapest sequence so far, marked interrupted."""
    def stop(_text):
        raise KeyboardInterrupt

    for seed, g, B, seq in _sequences(400, score="dtr"):
        start = evaluate(g, schedule_from_sequence(g, seq))
        if start.peak > B:
            continue
        out, stats = ruin_and_recreate(g, B, seq, deadline=time.perf_counter() + 30, seed=seed, max_steps=8,
                                       progress=stop)
        if stats["improved"]:
            assert stats.get("interrupted") and stats["improved"] == 1, seed
            ev = evaluate(g, schedule_from_sequence(g, out))
            assert ev.peak <= B and ev.compute == pytest.approx(stats["best"]) and ev.compute < start.compute, seed
            return
    pytest.fail("no search improved its start")
