"""Address-aware allocators under DTR (solvers/dtr/allocator.py)."""
from __future__ import annotations

import random

import pytest

import memsched.cli.main
from memsched.formulations import MemschedError
from memsched.instances.dtr_random import random_trace, random_trace_lines
from memsched.solvers.dtr.allocator import (MIB, AllocRuntime, Arena, CachingAllocator, explain_fragmentation,
                                            replay_alloc, round_size)
from memsched.solvers.dtr.replay import replay, trace_baseline
from memsched.solvers.dtr.sweep import sweep


# ------------------------------------------------------------------ arena
def test_arena_first_fit_best_fit_and_coalescing():
    for pol in ("first-fit", "best-fit"):
        a = Arena(100, pol)
        x, y, z, w = a.alloc(30), a.alloc(10), a.alloc(20), a.alloc(5)
        assert (x, y, z, w) == (0, 30, 40, 60)
        a.free(x)  # free: [0,30) and [65,100)
        a.free(z)  # free: [0,30), [40,60), [65,100)
        got = a.alloc(18)
        assert got == (0 if pol == "first-fit" else 40)  # best fit: the 20-byte block
        assert a.alloc(36) is None and a.largest_free() in (35, 30)
    a = Arena(100, "best-fit")
    bs = [a.alloc(25) for _ in range(4)]
    for b in (bs[1], bs[3], bs[2], bs[0]):  # frees in an order that needs both merges
        a.free(b)
    assert a.layout() == [(0, 100, "free")]


@pytest.mark.parametrize("pol", ["first-fit", "best-fit"])
def test_arena_matches_a_byte_map(pol):
    """Random allocations and frees against a byte-by-byte occupancy map."""
    rng = random.Random(3)
    for _ in range(30):
        cap = rng.randint(1, 200)
        a = Arena(cap, pol)
        occ = [False] * cap
        live = {}
        for _ in range(60):
            if live and rng.random() < 0.45:
                addr = rng.choice(sorted(live))
                a.free(addr)
                for i in range(addr, addr + live.pop(addr)):
                    occ[i] = False
            else:
                size = rng.randint(1, 40)
                runs, i = [], 0  # maximal free runs of the map
                while i < cap:
                    if not occ[i]:
                        j = i
                        while j < cap and not occ[j]:
                            j += 1
                        runs.append((i, j - i))
                        i = j
                    else:
                        i += 1
                fits = [r for r in runs if r[1] >= size]
                want = None if not fits else (fits[0][0] if pol == "first-fit"
                                              else min(fits, key=lambda r: (r[1], r[0]))[0])
                got = a.alloc(size)
                assert got == want
                if got is not None:
                    live[got] = size
                    for i in range(got, got + size):
                        assert not occ[i]
                        occ[i] = True
            # the free list is exactly the maximal free runs (coalesced)
            assert [(x, s) for x, s, st in a.layout() if st == "free"] == \
                   [r for r in _runs(occ)]


def _runs(occ):
    out, i = [], 0
    while i < len(occ):
        if not occ[i]:
            j = i
            while j < len(occ) and not occ[j]:
                j += 1
            out.append((i, j - i))
            i = j
        else:
            i += 1
    return out


# ------------------------------------------------------------------ caching allocator rules
def test_caching_allocator_rules():
    assert (round_size(1), round_size(512), round_size(513)) == (512, 512, 1024)
    c = CachingAllocator(64 * MIB)
    b1 = c.alloc(100)  # small pool: a 2 MiB segment, split (remainder >= 512)
    assert c.reserved == 2 * MIB and c.segments[b1[0]]["used"] == {0: 512}
    b2 = c.alloc(3 * MIB)  # large pool: 20 MiB segment, remainder 17 MiB > 1 MiB: split
    assert c.reserved == 22 * MIB and c.segments[b2[0]]["used"] == {0: 3 * MIB}
    b3 = c.alloc(int(16.5 * MIB))  # fits the 17 MiB remainder; remainder 0.5 MiB <= 1 MiB: not split
    assert b3[0] == b2[0] and c.segments[b2[0]]["used"][3 * MIB] == 17 * MIB
    b4 = c.alloc(12 * MIB)  # >= 10 MiB: its own segment rounded to 2 MiB
    assert c.segments[b4[0]]["size"] == 12 * MIB and c.reserved == 34 * MIB
    c.free(b3)
    c.free(b2)  # coalesced back into one free 20 MiB block, still cached
    assert c.segments[b2[0]]["free"] == {0: 20 * MIB} and c.reserved == 34 * MIB
    # a 40 MiB request does not fit the reserve (34 + 40 > 64): the free cached segment is
    # released first, then it fits (14 + 40 <= 64)
    b5 = c.alloc(40 * MIB)
    assert b5 is not None and b2[0] not in c.segments and c.reserved == 54 * MIB
    assert c.alloc(11 * MIB) is None  # 54 + 12 > 64 and nothing cached is free
    c.free(b1)
    assert c.free_total() == 64 * MIB - 52 * MIB


# ------------------------------------------------------------------ runtime
def frag_trace():
    return random_trace(0, n_calls=30)


def test_fragmentation_fails_where_bytes_succeed_and_the_block_is_explained():
    tr = frag_trace()
    b = replay(tr, 0.58)
    a = replay_alloc(tr, 0.58, allocator="best-fit")
    assert b.outcome == "ok"
    assert a.outcome == "fragmentation"
    f = a.failure
    req = f["requested"]
    free = [e for e in f["layout"] if e[2] == "free"]
    used = [e for e in f["layout"] if e[2] == "used"]
    # the missing block: enough bytes free in total, no free block large enough
    assert f["free_total"] == sum(e[1] for e in free) >= req > f["largest_free"] == max(e[1] for e in free)
    assert f["memory"] + sum(f["request_sizes"]) <= f["budget"]
    # the layout tiles the arena, and every resident block is a material storage that
    # could not be evicted (locked operand or pinned)
    pos = 0
    for addr, size, _st, _own in f["layout"]:
        assert addr == pos
        pos += size
    assert pos == f["budget"]
    rt = a.runtime
    for _addr, size, _st, own in used:
        assert rt.st_mat[own] and rt.st_size[own] == size and (rt.st_pin[own] or rt.st_rint[own] > 0)
    text = explain_fragmentation(f, tr)
    assert f"no free block of {req} bytes" in text and f"largest {f['largest_free']} bytes" in text


def _check_blocks(rt):
    """The allocator's used blocks are exactly the material storages of nonzero size."""
    mat = {s for s in range(rt.trace.n_tensors) if rt.st_mat[s] and rt.st_size[s] > 0 and rt.t_storage[s] == s}
    assert set(rt.st_block) == mat
    if isinstance(rt.alloc, Arena):
        assert sum(rt.alloc.used.values()) == rt.memory == sum(rt.st_size[s] for s in mat)
    else:
        used = sum(s for seg in rt.alloc.segments.values() for s in seg["used"].values())
        assert used >= sum(round_size(rt.st_size[s]) for s in mat)


@pytest.mark.parametrize("alloc", ["first-fit", "best-fit", "caching"])
def test_address_aware_runs_are_consistent_and_equal_bytes_without_fragmentation(alloc):
    """Random traces and budgets: blocks track residency; a run that never evicted for
    want of a block is the byte-counting run (same decisions), and an address-aware run
    never succeeds with less than the bytes run's peak."""
    rng = random.Random(5)
    seen_frag = 0
    for seed in range(10):
        tr = random_trace(seed, n_calls=30)
        base = trace_baseline(tr)
        for _ in range(5):
            ratio = rng.choice([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0])
            for h in ("dtr", "lru", "dtr-eqclass"):
                a = replay_alloc(tr, ratio, heuristic=h, allocator=alloc)
                b = replay(tr, ratio, heuristic=h)
                rt = a.runtime
                if a.outcome == "ok":
                    _check_blocks(rt)
                if rt.frag_evictions == 0 and a.outcome != "fragmentation":
                    assert (a.outcome, a.clock, a.peak, a.evictions) == (b.outcome, b.clock, b.peak, b.evictions)
                else:
                    seen_frag += 1
                assert a.peak <= a.budget and base["baseline_memory"] > 0
    if alloc != "caching":  # byte-sized random tensors: the caching rules round every one to 512 B
        assert seen_frag > 0


def test_allocator_sweep_and_cli(tmp_path, capsys):
    tr = frag_trace()
    res = sweep(tr, "dtr", lo=0.5, hi=0.7, resolution=0.02, repeats=1, run_timeout=None, allocator="best-fit")
    # address-aware samples may be derived from a replay's budget interval (docs/dtr.md,
    # Allocators); every point, derived or replayed, equals an independent replay below
    assert res.params["allocator"] == "best-fit"
    assert any(p.outcome == "fragmentation" for p in res.points)
    for p in res.points:
        r = replay_alloc(tr, p.ratio, allocator="best-fit")
        assert (p.outcome, p.clock, p.evictions) == (r.outcome, r.clock, r.evictions)
    with pytest.raises(MemschedError):
        sweep(tr, "dtr", lo=0.5, hi=0.6, resolution=0.05, allocator="buddy")
    log = tmp_path / "t.log"
    log.write_text("\n".join(random_trace_lines(0, n_calls=30)) + "\n")
    assert memsched.cli.main.main(["dtr", "replay", str(log), "--ratio", "0.58", "--allocator", "best-fit"]) == 0
    out = capsys.readouterr().out
    assert "no free block of" in out and "fragmentation" in out
    assert memsched.cli.main.main(["dtr", "replay", str(log), "--ratio", "0.58", "--allocator", "buddy"]) == 2
    assert "--allocator" in capsys.readouterr().err


def test_alloc_runtime_rejects_graph_options():
    with pytest.raises(MemschedError):
        AllocRuntime(frag_trace(), 100, "dtr", workspace=[0] * len(frag_trace().ops))
