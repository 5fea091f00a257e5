"""memsched's DTR runtime against the committed simrd oracle (tests/data/simrd_oracle).

The oracle holds what UNMODIFIED simrd (uwsampl/dtr-prototype, RuntimeV2EagerOptimized)
returned, run by benchmarks/make_simrd_oracle.py (the regenerating command is in each
file's header line and in the README beside it):

* small.jsonl.gz: a few hundred random traces of ``memsched.instances.dtr_random``
  (seed + parameters; the text's sha256 is checked so a changed generator is noticed), every
  heuristic both implement, ratios 0.4..1.0, overhead limits 2 and inf: outcome, clock,
  peak, evictions and the eviction sequence (storage root ids, eager evictions included).
* shared*.jsonl.gz: the four DTR traces of ../shared/data (skipped when absent), a small
  ratio grid, every heuristic, both limits: outcome, clock, peak, evictions.

Rows where simrd itself stopped on its region assertion (``assert``; only with aliasing
that closes storage cycles) compare the decisions up to the crash: memsched's eviction
sequence starts with simrd's, and the clock at simrd's last eviction is simrd's clock.

Default run: every 10th small trace, random-14 and ResNet-32 at ratio 0.4, limit 2 (a few CPU seconds); ``-m slow``: every row.
benchmarks/bench_dtr_oracle.py runs every row and writes section 61-dtr-oracle.
"""
from __future__ import annotations

import collections
import gzip
import json
import math
from functools import lru_cache
from pathlib import Path

import pytest

from memsched.instances.dtr_random import random_trace_lines, trace_sha256
from memsched.instances.dtr_trace import parse_trace, parse_trace_lines
from memsched.solvers.dtr.runtime import HEURISTICS, Runtime, baseline

ORACLE = Path(__file__).resolve().parent / "data" / "simrd_oracle"
SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dtr-traces"
FAST_EVERY = 10  # default run: small traces whose seed is a multiple of this,
FAST_EXTRA = (14,)  # and these (random-14 caught the eq-class node bug fixed 2026-12-01)
FAST_SHARED = ("resnet32",)


@lru_cache(maxsize=None)
def load(name: str):
    """(header, records) of an oracle file."""
    with gzip.open(ORACLE / name, "rt") as f:
        lines = f.read().splitlines()
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:]]


def small_trace(rec):
    """The random trace of an oracle record, regenerated from its seed and parameters."""
    lines = random_trace_lines(rec["seed"], **rec["params"])
    if trace_sha256(lines) != rec["sha256"]:
        raise AssertionError(f"{rec['trace']}: the generator no longer produces the trace simrd ran "
                             "(regenerate the oracle: see tests/data/simrd_oracle/README.md)")
    return parse_trace_lines(lines, rec["trace"] + ".log")


def run_memsched(tr, base, h, limit, ratio):
    """(budget, outcome, clock, peak, evictions, eviction sequence, clocks at the evictions)."""
    lim = math.inf if limit == "inf" else float(limit)
    rt = Runtime(tr, int(base["baseline_memory"] * ratio), h, remat_limit=base["baseline_compute"] * (lim - 1),
                 record=True, seed=0)
    try:
        out = rt.run()
    except AssertionError:  # simrd's region precondition, checked by memsched too
        out = "assert"
    ev = [e for e in rt.events if e[0] == "evict"]
    return rt.budget, out, rt.clock, rt.peak, rt.evictions, [e[1] for e in ev], [e[4] for e in ev]


def compare_record(rec, tr, evseq: bool, keep=None):
    """Replay every row of ``rec`` (those where ``keep(h, limit, ratio)`` holds) with memsched;
    returns (rows, mismatch descriptions)."""
    bad = []
    base = baseline(tr)
    for k, v in rec["baseline"].items():
        if base[k] != v:
            bad.append(f"{rec['trace']}: baseline {k} simrd {v} memsched {base[k]}")
    n = 0
    for h, by_limit in rec["runs"].items():
        for limit, rows in by_limit.items():
            for row in rows:
                if keep is not None and not keep(h, limit, row[0]):
                    continue
                n += 1
                ratio, budget, out, clock, peak, evictions = row[:6]
                got = run_memsched(tr, base, h, limit, ratio)
                where = f"{rec['trace']} {h} limit={limit} ratio={ratio}"
                if out == "assert":
                    seq = row[6]
                    mseq, mclk = got[5], got[6]
                    if got[0] != budget or mseq[:len(seq)] != seq or (seq and mclk[len(seq) - 1] != clock):
                        bad.append(f"{where}: simrd stopped on its assertion after evictions {seq} at clock "
                                   f"{clock}; memsched evicted {mseq[:len(seq) + 3]}...")
                    continue
                want = (budget, out, clock, peak, evictions)
                if got[:5] != want:
                    bad.append(f"{where}: simrd (budget, outcome, clock, peak, evictions) = {want}, "
                               f"memsched {got[:5]}")
                elif evseq and got[5] != row[6]:
                    bad.append(f"{where}: eviction sequence simrd {row[6]} memsched {got[5]}")
    return n, bad


def _small_ids(fast: bool):
    if not (ORACLE / "small.jsonl.gz").is_file():
        return []
    return [r["trace"] for r in load("small.jsonl.gz")[1]
            if (r["seed"] % FAST_EVERY == 0 or r["seed"] in FAST_EXTRA) == fast]


def _check_small(name):
    rec = next(r for r in load("small.jsonl.gz")[1] if r["trace"] == name)
    n, bad = compare_record(rec, small_trace(rec), evseq=True)
    assert n > 0
    assert not bad, f"{len(bad)} of {n} rows differ from simrd:\n" + "\n".join(bad[:15])


@pytest.mark.parametrize("name", _small_ids(fast=True))
def test_small_traces_match_simrd(name):
    _check_small(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", _small_ids(fast=False))
def test_small_traces_match_simrd_all(name):
    _check_small(name)


def _shared_files():
    return sorted(p.name for p in ORACLE.glob("shared*.jsonl.gz"))


def _shared_ids(fast: bool):
    """Default run: ResNet-32's rows at ratio 0.4, limit 2 (every heuristic); slow: every row."""
    out = []
    for f in _shared_files():
        for r in load(f)[1]:
            stem = r["trace"].split("-")[0]
            if not r["runs"]:
                continue
            if fast and stem in FAST_SHARED:
                out.append(pytest.param(f, r["trace"], True, id=f"{f.split('.')[0]}:{stem}:subset"))
            elif not fast:
                out.append(pytest.param(f, r["trace"], False, id=f"{f.split('.')[0]}:{stem}", marks=pytest.mark.slow))
    return out


@pytest.mark.parametrize("file,name,subset", _shared_ids(True) + _shared_ids(False))
def test_shared_traces_match_simrd(file, name, subset, shared_data):
    rec = next(r for r in load(file)[1] if r["trace"] == name)
    path = shared_data / "dtr-traces" / name
    if not path.is_file():
        pytest.skip(f"{name} absent")
    import hashlib

    assert hashlib.sha256(path.read_bytes()).hexdigest() == rec["sha256"], f"{name} changed since simrd ran it"
    keep = (lambda h, limit, ratio: limit == "2.0" and ratio == 0.4) if subset else None
    n, bad = compare_record(rec, parse_trace(path), evseq=False, keep=keep)
    assert n > 0
    assert not bad, f"{len(bad)} of {n} rows differ from simrd:\n" + "\n".join(bad[:15])


def test_oracle_is_not_vacuous():
    """The small oracle covers every heuristic both implement, both limits, every outcome,
    many evictions, and heuristics that disagree: a runtime change that alters a decision
    has rows that see it."""
    hdr, recs = load("small.jsonl.gz")
    assert "make_simrd_oracle.py" in hdr["command"] and hdr["simrd_commit"]
    shared = {h for h, v in HEURISTICS.items() if v[0]}
    assert len(recs) >= 200 and len(shared) == 23
    outcomes = collections.Counter()
    evicting = differ = 0
    for r in recs:
        assert set(r["runs"]) == shared
        for h in shared:
            assert set(r["runs"][h]) == {"2.0", "inf"}
        for lim in ("2.0", "inf"):
            for i in range(len(r["runs"]["dtr"][lim])):
                seqs = {json.dumps(r["runs"][h][lim][i][6]) for h in shared if r["runs"][h][lim][i][2] != "assert"}
                differ += len(seqs) > 1
        for by_limit in r["runs"].values():
            for rows in by_limit.values():
                for row in rows:
                    outcomes[row[2]] += 1
                    evicting += row[5] >= 3
    total = sum(outcomes.values())
    assert {"ok", "oom", "remat_exceeded"} <= set(outcomes)
    assert outcomes["ok"] > total / 3 and outcomes["remat_exceeded"] > 1000 and outcomes["assert"] < total / 10
    assert evicting > total * 0.8
    # at most (trace, limit, ratio) cells the heuristics do not all choose the same evictions
    assert differ > len(recs) * 2 * 8 * 0.7
