"""Coop-style address-aware eviction (heuristic ``coop``, solvers/dtr/allocator.py)."""
from __future__ import annotations

import random

import pytest

import memsched.cli.main
from memsched.formulations import MemschedError
from memsched.instances.dtr_random import random_trace
from memsched.instances.dtr_trace import parse_trace_lines
from memsched.solvers.dtr.allocator import Arena, cheapest_window, replay_alloc
from memsched.solvers.dtr.replay import replay
from dtr_lines import J, call1 as call, const, release


# ------------------------------------------------------------------ the window search
def _brute(blocks, size):
    """Every start address of the tiling: least cost, ties lowest address."""
    cap = blocks[-1][0] + blocks[-1][1] if blocks else 0
    best = None
    for a in range(0, cap - size + 1):
        over = [b for b in blocks if b[0] < a + size and b[0] + b[1] > a]
        if any(b[2] is None for b in over):
            continue
        c = sum(b[2] for b in over)
        if best is None or c < best[0]:
            best = (c, a)
    return best


def test_cheapest_window_equals_brute_force():
    rng = random.Random(7)
    for _ in range(400):
        blocks, a = [], 0
        for _ in range(rng.randint(1, 9)):
            n = rng.randint(1, 8)
            kind = rng.random()
            cost = 0 if kind < 0.3 else (None if kind < 0.5 else rng.randint(1, 9))
            blocks.append((a, n, cost))
            a += n
        size = rng.randint(1, a + 2)
        got = cheapest_window(blocks, size)
        want = _brute(blocks, size)
        if want is None:
            assert got is None
        else:
            c, i, j = got
            assert (c, blocks[i][0]) == want
            # the window [start, start + size) is covered by blocks i .. j-1 and no fewer
            assert blocks[j - 1][0] + blocks[j - 1][1] >= blocks[i][0] + size > blocks[j - 1][0]


# ------------------------------------------------------------------ a crafted trace
# budget 100 B; w (10 B constant) at [0,10); a, x, c, y (20 B each, costs 1, 5, 1, 1000)
# fill [10,90); e = k(w) needs 40 B: 90 + 40 > 100. Staleness at e (clock 1008): a 1006,
# x 1001, c 1000, y 0 (cost inf). h_DTR evicts a then c (the least e*/(size x staleness);
# 50 + 40 <= 100) but they are not adjacent: the free blocks are 20, 20 and 10 B, so it
# evicts x for want of a block (3 evictions). coop clears the cheapest 40-byte window:
# [10,50) (a, x: 1/1006 + 5/1001) beats [30,70) (x, c: 5/1001 + 1/1000); [50,90) holds y
# (inf): 2 evictions. Then e is released and g(a, x, c, y) recomputes what was evicted.
COOP = ([J(INSTRUCTION="ANNOTATE", ANNOTATION="START")] + const("w", 10)
        + call("fa", ["w"], "a", 1, 20) + call("fx", ["w"], "x", 5, 20) + call("fc", ["w"], "c", 1, 20)
        + call("fy", ["w"], "y", 1000, 20) + call("k", ["w"], "e", 1, 40) + release("e")
        + call("g", ["a", "x", "c", "y"], "z", 1, 10))


def _evicted(r):
    tr = r.runtime.trace
    return [(tr.tensor_names[e[1]], e[2]) for e in r.runtime.events if e[0] == "evict"]


@pytest.mark.parametrize("alloc", ["best-fit", "first-fit"])
def test_coop_clears_one_window_where_dtr_scatters(alloc):
    tr = parse_trace_lines(COOP, "coop.log")
    d = replay_alloc(tr, budget=100, allocator=alloc, heuristic="dtr", record=True)
    c = replay_alloc(tr, budget=100, allocator=alloc, heuristic="coop", record=True)
    assert d.outcome == c.outcome == "ok"
    assert _evicted(d) == [("a", "pressure"), ("c", "pressure"), ("x", "fragmentation"), ("e", "eager")]
    assert _evicted(c) == [("a", "pressure"), ("x", "pressure"), ("e", "eager")]
    assert (d.runtime.frag_evictions, c.runtime.windows) == (1, 1)
    assert (d.remat_compute, c.remat_compute) == (1 + 5 + 1, 1 + 5)
    assert d.peak <= 100 and c.peak <= 100
    # under byte counting dtr makes the same two pressure evictions and none for a block
    b = replay(tr, budget=100, record=True)
    assert [(tr.tensor_names[e[1]], e[2]) for e in b.runtime.events if e[0] == "evict"] == \
           [("a", "pressure"), ("c", "pressure"), ("e", "eager")]


def test_coop_needs_an_arena():
    tr = parse_trace_lines(COOP, "coop.log")
    for alloc in ("bytes", "caching"):
        with pytest.raises(MemschedError, match="first-fit or best-fit"):
            replay_alloc(tr, budget=100, allocator=alloc, heuristic="coop")
    with pytest.raises(MemschedError, match="first-fit or best-fit"):
        replay(tr, budget=100, heuristic="coop")


def test_coop_cli(tmp_path, capsys):
    log = tmp_path / "coop.log"
    log.write_text("\n".join(COOP) + "\n")
    assert memsched.cli.main.main(["dtr", "replay", str(log), "--budget-bytes", "100", "--allocator", "best-fit",
                                   "--heuristic", "coop"]) == 0
    assert "ok" in capsys.readouterr().out
    assert memsched.cli.main.main(["dtr", "replay", str(log), "--budget-bytes", "100", "--heuristic", "coop"]) == 2
    err = capsys.readouterr().err
    assert "coop" in err and "Traceback" not in err
    assert memsched.cli.main.main(["dtr", "sweep", str(log), "--heuristic", "coop", "--allocator", "caching",
                                   "--step", "0.5", "-q"]) == 2
    assert "first-fit or best-fit" in capsys.readouterr().err


# ------------------------------------------------------------------ random traces
def _check_blocks(rt):
    mat = {s for s in range(rt.trace.n_tensors) if rt.st_mat[s] and rt.st_size[s] > 0 and rt.t_storage[s] == s}
    assert set(rt.st_block) == mat
    assert sum(rt.alloc.used.values()) == rt.memory


@pytest.mark.parametrize("alloc", ["first-fit", "best-fit"])
def test_coop_random_traces_windows_are_contiguous_and_blocks_track_residency(alloc):
    """Every window coop clears is contiguous: the storages evicted for one placement lie
    side by side with only free bytes between them, and the output then fits there."""
    seen = 0
    for seed in range(12):
        tr = random_trace(seed, n_calls=30)
        for ratio in (0.4, 0.5, 0.6, 0.8, 1.0):
            r = replay_alloc(tr, ratio, allocator=alloc, heuristic="coop")
            rt = r.runtime
            assert r.peak <= r.budget
            if r.outcome == "ok":
                _check_blocks(rt)
            seen += rt.windows
            again = replay_alloc(tr, ratio, allocator=alloc, heuristic="coop")
            assert (again.outcome, again.clock, again.evictions) == (r.outcome, r.clock, r.evictions)
            if r.outcome == "fragmentation":
                f = r.failure
                # no window: the free and evictable bytes would hold the outputs, no block does
                assert f["free_total"] + f["evictable_bytes"] + f["placed_bytes"] >= sum(f["request_sizes"])
                assert f["requested"] > f["largest_free"]
                assert sum(e[1] for e in f["layout"] if e[2] == "free") == f["free_total"]
    assert seen > 0


def test_coop_window_eviction_frees_one_block(monkeypatch):
    """Instrument the arena: right after each window is cleared, the request fits in a
    free block that covers the window's address range."""
    from memsched.solvers.dtr import allocator as A

    checks = []
    real = A.cheapest_window

    def spy(blocks, size):
        w = real(blocks, size)
        if w is not None:
            checks.append((blocks[w[1]][0], size))
        return w

    monkeypatch.setattr(A, "cheapest_window", spy)
    real_alloc = Arena.alloc

    def alloc(self, size):
        if checks and checks[-1][1] == size:
            start, n = checks.pop()
            hit = [(a, s) for a, s in self.free_size.items() if a <= start and a + s >= start + n]
            assert hit, (start, n, sorted(self.free_size.items()))
        return real_alloc(self, size)

    monkeypatch.setattr(Arena, "alloc", alloc)
    n = 0
    for seed in range(8):
        tr = random_trace(seed, n_calls=30)
        for ratio in (0.5, 0.7):
            r = replay_alloc(tr, ratio, allocator="best-fit", heuristic="coop")
            n += r.runtime.windows
    assert n > 0
