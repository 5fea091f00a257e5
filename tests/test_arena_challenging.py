"""MiniMalloc's challenging instances (../shared/data/arena/minimalloc-challenging, read at test
time, never copied): placements within 1,048,576 bytes, verified by the independent checker.
K and H run by default (H: unsolved in 60 s before groups restarted the canonical order under
fresh preorders, now under a second); all eleven are in benchmarks/bench_arena.py (and here
with -m slow), each within the issue's 60 s."""
from __future__ import annotations

from pathlib import Path

import pytest

from memsched.instances.arena_csv import read_arena_csv
from memsched.solvers.arena import check_placement, solve_arena
from memsched.solvers.arena.bounds import max_live

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "arena" / "minimalloc-challenging"
CAP = 1048576
DEFAULT = ("K", "H")  # quick for the search on this machine (benchmarks/sections/70-arena.md)

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data absent: {DATA}")


def _case(name):
    marks = () if name in DEFAULT else (pytest.mark.slow,)
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_case(c) for c in "ABCDEFGHIJK"])
def test_challenging_instance_fits(name):
    bufs = read_arena_csv(DATA / f"{name}.{CAP}.csv")
    r = solve_arena(bufs, capacity=CAP, time_limit=60)
    assert r.status in ("optimal", "feasible"), r.status
    assert check_placement(bufs, r.offsets, CAP) == r.arena_size <= CAP
    assert max_live(bufs) <= r.lower_bound <= r.arena_size
