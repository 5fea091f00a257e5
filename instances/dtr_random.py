"""Seeded random DTR logs (the DTR prototype's log format, docs/dtr.md section 1).

``random_trace_lines(seed, **params)`` returns the log lines of a small random training-like
trace: constants (weights), CALLs with one to three arguments (sometimes the same argument
twice) and one or two results, a result aliasing one of the arguments with probability
``alias_p``, MUTATEs of live tensors, COPY and COPY_FROM records, and RELEASEs. The same
seed and parameters always give the same lines (``random.Random(seed)`` only, no global
state), so a trace is named by ``(seed, params)``; :func:`trace_sha256` fingerprints the
text so that a stored reference result notices a changed generator.

``small_sizes`` draws sizes and costs from a few values, which makes heuristic ties
(equal cost, equal size, equal staleness) frequent: ties are where the order in which the
eviction pool is scanned decides.

These traces are the inputs of the committed simrd oracle (tests/data/simrd_oracle,
benchmarks/make_simrd_oracle.py).
"""
from __future__ import annotations

import hashlib
import json
import random

from .dtr_trace import DTRTrace, parse_trace_lines

__all__ = ["DEFAULTS", "random_trace_lines", "random_trace", "trace_sha256"]

DEFAULTS = {
    "n_calls": 16,      # CALL/MUTATE records
    "n_const": 2,       # at most this many constants (at least one)
    "alias_p": 0.25,    # an op is a view (one argument, its result on the argument's storage)
    "alias_any": False,  # instead: each result of any CALL aliases any of its arguments with
                         # probability alias_p (storage cycles; simrd's region assertion can trip)
    "multi_p": 0.35,    # a CALL has two results
    "mutate_p": 0.08,   # a MUTATE instead of a CALL
    "copy_p": 0.12,     # a COPY after an op
    "copy_from_p": 0.05,  # a COPY_FROM after an op
    "dup_arg_p": 0.08,  # a CALL reads one argument twice
    "release_p": 0.45,  # keep releasing live names while this coin says so
    "small_sizes": False,  # sizes and costs from a few values (many ties)
}


def _j(**kw) -> str:
    return json.dumps(kw)


def random_trace_lines(seed: int, **params) -> list[str]:
    """The lines of random trace ``seed`` under ``params`` (missing keys: :data:`DEFAULTS`)."""
    p = dict(DEFAULTS)
    unknown = set(params) - set(p)
    if unknown:
        raise TypeError(f"unknown random trace parameters: {sorted(unknown)}")
    p.update(params)
    rng = random.Random(seed)
    if p["small_sizes"]:
        size = lambda: rng.choice((8, 8, 16, 32))  # noqa: E731
        cost = lambda: rng.choice((1, 2, 2, 4))  # noqa: E731
    else:
        size = lambda: rng.randint(1, 64)  # noqa: E731
        cost = lambda: rng.randint(1, 40)  # noqa: E731
    lines = [_j(INSTRUCTION="ANNOTATE", ANNOTATION="START")]
    live: list[str] = []  # names that hold a reference, in creation order
    age: dict[str, int] = {}  # name -> creation index of its storage
    n_st = 0  # storages created so far
    tname: dict[str, str] = {}  # name -> name of the tensor it is bound to
    mutated: set[str] = set()  # tensor names already mutated (simrd names the result `<name>$`)
    consts: set[str] = set()
    k = 0
    for c in range(rng.randint(1, max(1, p["n_const"]))):
        nm = f"w{c}"
        lines += [_j(INSTRUCTION="CONSTANT", NAME=nm), _j(INSTRUCTION="MEMORY", NAME=nm, MEMORY=str(size()))]
        live.append(nm)
        age[nm] = n_st
        n_st += 1
        tname[nm] = nm
        consts.add(nm)
    backward_at = p["n_calls"] // 2
    for i in range(p["n_calls"]):
        if i == backward_at:
            lines.append(_j(INSTRUCTION="ANNOTATE", ANNOTATION="BACKWARD"))
        na = rng.randint(1, min(3, len(live)))
        args = rng.sample(live, na)
        can_mut, seen = [], set()
        for a in range(len(args)):  # one name per tensor, each tensor mutated once at most
            if tname[args[a]] not in mutated and tname[args[a]] not in seen:
                can_mut.append(a)
                seen.add(tname[args[a]])
        if rng.random() < p["mutate_p"] and can_mut:
            # mutate one or two of the arguments in place (a new tensor `<arg>$` each; a
            # tensor is mutated at most once, as simrd's names would collide)
            mut = sorted(rng.sample(can_mut, rng.randint(1, min(2, len(can_mut)))))
            lines.append(_j(INSTRUCTION="MUTATE", NAME=f"mut{i}", ARGS=args, MUTATE=mut, TIME=str(cost())))
            for m in mut:
                mutated.add(tname[args[m]])
                tname[args[m]] = tname[args[m]] + "$"
                age[args[m]] = n_st
                n_st += 1
        elif not p["alias_any"] and rng.random() < p["alias_p"]:
            # a view: one argument, one result on the argument's storage
            r = f"t{k}"
            k += 1
            lines += [_j(INSTRUCTION="CALL", NAME=f"view{i}", ARGS=args[:1], RESULT=[r], TIME=str(cost())),
                      _j(INSTRUCTION="MEMORY", NAME=r, MEMORY=str(size())),
                      _j(INSTRUCTION="ALIAS", NAME=r, ALIAS="0")]
            age[r] = age[args[0]]
            tname[r] = r
            live.append(r)
        else:
            if rng.random() < p["dup_arg_p"]:
                args.append(args[0])
            nres = 2 if rng.random() < p["multi_p"] else 1
            res = [f"t{k + j}" for j in range(nres)]
            k += nres
            lines.append(_j(INSTRUCTION="CALL", NAME=f"op{i}", ARGS=args, RESULT=res, TIME=str(cost())))
            for r in res:
                al = -1
                if p["alias_any"] and rng.random() < p["alias_p"]:
                    al = rng.randrange(len(args))
                tname[r] = r
                if al == -1:
                    age[r] = n_st
                    n_st += 1
                else:
                    age[r] = age[args[al]]
                lines += [_j(INSTRUCTION="MEMORY", NAME=r, MEMORY=str(size())),
                          _j(INSTRUCTION="ALIAS", NAME=r, ALIAS=str(al))]
            live += res
        if rng.random() < p["copy_p"]:
            dst = f"c{k}"
            k += 1
            src = rng.choice(live)
            lines.append(_j(INSTRUCTION="COPY", DST=dst, SRC=src))
            live.append(dst)
            age[dst] = age[src]
            tname[dst] = tname[src]
        if rng.random() < p["copy_from_p"] and len(live) > 2:
            dst, src = rng.sample([n for n in live if n not in consts], 2) if \
                sum(n not in consts for n in live) >= 2 else (None, None)
            if dst is not None:
                lines.append(_j(INSTRUCTION="COPY_FROM", DST=dst, SRC=src))
                age[dst] = age[src]
                tname[dst] = tname[src]
        while len(live) > 3 and rng.random() < p["release_p"]:
            nm = live.pop(rng.randrange(len(live)))
            if nm not in consts:
                lines.append(_j(INSTRUCTION="RELEASE", NAME=nm))
    for nm in list(live)[: rng.randint(0, len(live))]:
        if nm not in consts:
            lines.append(_j(INSTRUCTION="RELEASE", NAME=nm))
    return lines


def random_trace(seed: int, **params) -> DTRTrace:
    """:func:`random_trace_lines` parsed (name ``random-<seed>.log``)."""
    return parse_trace_lines(random_trace_lines(seed, **params), f"random-{seed}.log")


def trace_sha256(lines) -> str:
    """Fingerprint of a trace's text (lines joined with newlines, final newline)."""
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()
