"""Peak-cutting local search over compute sequences (warm start for the remat CP).

A *compute sequence* lists operator indices, repeats being recomputations.
It defines a schedule: each computation reads the latest earlier copy of
every input, and every copy is freed right after its last reader (a required
output's last copy is kept). Inserting a recomputation of p just before a
later reader of p's output therefore shortens the old copy's lifetime and
extends the lifetimes of p's inputs up to the new computation.

The search repeatedly looks at the peak computation, and for every tensor
resident there but not read by it, tries "recompute its producer right before
its next reader" (within the caps); it takes the move that lowers
(peak, number of peak events, compute) most, until the peak fits the budget
or no move helps. O(moves x candidates x sequence length).
"""
from __future__ import annotations

import time

import numpy as np

from memsched.formulations import Graph, Schedule
from memsched.formulations.schedule import COMPUTE, FREE

__all__ = ["schedule_from_sequence", "cut_peak", "drop_recomputations", "drop_dead_computations"]


def schedule_from_sequence(g: Graph, seq: list[int]) -> Schedule:
    """The schedule of a compute sequence (see module docstring)."""
    n_t = g.n_tensors
    latest = [-1] * n_t  # index in seq of the latest copy of each tensor (-2 = graph input)
    for j in g.input_idx:
        latest[j] = -2
    last_read: dict[tuple[int, int], int] = {}
    copies: list[list[tuple[int, int]]] = [[] for _ in range(len(seq))]
    for q, v in enumerate(seq):
        for j in g.op_in[v]:
            last_read[(j, latest[j])] = q
        for j in g.op_out[v]:
            latest[j] = q
            copies[q].append(j)
    free_after: list[list[int]] = [[] for _ in range(len(seq))]
    head: list[int] = []
    keep = g.pinned_idx
    final = set((j, latest[j]) for j in g.output_idx)
    for j in g.input_idx:
        if j in keep or (j, -2) in final:
            continue
        q = last_read.get((j, -2))
        if q is None:
            head.append(j)
        else:
            free_after[q].append(j)
    for q, js in enumerate(copies):
        for j in js:
            if (j, q) in final:
                continue
            free_after[max(q, last_read.get((j, q), q))].append(j)
    events = [(FREE, j) for j in head]
    for q, v in enumerate(seq):
        events.append((COMPUTE, v))
        for j in sorted(free_after[q]):
            events.append((FREE, j))
    return Schedule(tuple(events))


def _candidates(g, seq, q, caps, counts):
    """(producer, insert position) pairs: recompute the producer of a tensor that is
    resident during seq[q] without being read there, right before its next reader."""
    latest = [-1] * g.n_tensors
    for j in g.input_idx:
        latest[j] = -2
    for p in range(q):
        for j in g.op_out[seq[p]]:
            latest[j] = p
    reads_now = set(g.op_in[seq[q]])
    out = []
    for j in range(g.n_tensors):
        if latest[j] < 0 or j in reads_now or g.size[j] == 0:
            continue
        nxt = None
        for r in range(q + 1, len(seq)):
            if j in g.op_in[seq[r]]:
                nxt = r
                break
            if j in g.op_out[seq[r]]:
                break
        if nxt is None:
            continue
        p = g.producer[j]
        if caps is not None and caps[p] is not None and counts[p] >= 1 + caps[p]:
            continue
        out.append((g.size[j], p, nxt))
    out.sort(reverse=True)
    return [(p, nxt) for _, p, nxt in out]


def _insertions(g, seq, q, p, nxt, caps, counts):
    """Recompute p alone, or together with the producers of those inputs of p whose
    current copies would otherwise have to live across position q."""
    yield [p]
    first = {}
    for k, v in enumerate(seq):
        first.setdefault(v, k)
    reads_now = set(g.op_in[seq[q]])
    extra = []
    for j in g.op_in[p]:
        u = g.producer[j]
        if u == -1 or j in reads_now:
            continue
        # latest copy of j before nxt; it must have been made before q to matter
        lat = max((k for k in range(nxt) if j in g.op_out[seq[k]]), default=-1)
        if lat < q and (caps is None or caps[u] is None or counts[u] < 1 + caps[u]):
            extra.append(u)
    if extra:
        extra = sorted(set(extra), key=lambda u: first[u])
        yield extra + [p]


def cut_peak(g: Graph, order: list[int], budget: int, caps=None, time_limit: float = 10.0,
             max_moves: int = 10_000, best_effort: bool = False, keep_first: bool = False) -> Schedule | None:
    """A schedule with peak <= budget obtained from ``order`` by inserting
    recomputations, or None. Respects the caps (None = unbounded).

    ``keep_first``: the first computations keep their order in ``order`` (the given-order
    class when ``order`` is the given order): a delay move never carries an operator's
    first computation past another operator's first computation. Insertions only add
    repeats, so they keep it anyway."""
    from memsched.formulations import evaluate
    from memsched.formulations.evaluator import ScheduleError

    t0 = time.perf_counter()
    seq = list(order)
    counts = [0] * g.n_ops
    for v in seq:
        counts[v] += 1

    def score(sq):
        s = schedule_from_sequence(g, sq)
        try:
            ev = evaluate(g, s)
        except ScheduleError:
            return None, None
        tl = ev.timeline
        comp_mem = [tl[k] for k, (kind, _) in enumerate(s.events) if kind == COMPUTE]
        npk = sum(1 for m in comp_mem if m == ev.peak)
        return (ev.peak, npk, ev.compute), (s, ev, comp_mem)

    cur, info = score(seq)
    if cur is None:
        return None
    moves = 0
    while cur[0] > budget and moves < max_moves and time.perf_counter() - t0 < time_limit:
        s, ev, comp_mem = info
        if keep_first:  # firsts[k] = how many first computations seq[:k] holds
            firsts, seen = [0], set()
            for v in seq:
                firsts.append(firsts[-1] + (v not in seen))
                seen.add(v)
        # positions (in seq) of the peak computations
        peaks = [q for q, m in enumerate(comp_mem) if m == cur[0]]
        best = None
        tried = set()
        for q in peaks[:4]:
            for p, nxt in _candidates(g, seq, q, caps, counts):
                if (p, nxt) in tried:
                    continue
                tried.add((p, nxt))
                for ins in _insertions(g, seq, q, p, nxt, caps, counts):
                    trial = seq[:nxt] + ins + seq[nxt:]
                    sc, inf = score(trial)
                    if sc is not None and sc < cur and (best is None or sc < best[0]):
                        best = (sc, inf, trial, ins)
            # delay moves: a computation whose outputs nobody reads before their next reader
            # after q moves to just before that reader (no extra compute)
            for k in range(q):
                v = seq[k]
                outs = g.op_out[v]
                nxt = None
                ok = True
                for r in range(k + 1, len(seq)):
                    if any(j in g.op_in[seq[r]] for j in outs):
                        if r <= q:
                            ok = False
                        nxt = r
                        break
                    if seq[r] == v:
                        break
                if not ok or nxt is None or ("d", k, nxt) in tried:
                    continue
                if keep_first and firsts[k + 1] > firsts[k] and firsts[nxt] > firsts[k + 1]:
                    continue  # would carry a first computation (at k) past another one
                tried.add(("d", k, nxt))
                trial = seq[:k] + seq[k + 1:nxt] + [v] + seq[nxt:]
                sc, inf = score(trial)
                if sc is not None and sc < cur and (best is None or sc < best[0]):
                    best = (sc, inf, trial, [])
            if best is not None:
                break
        if best is None:
            break
        cur, info, seq, ins = best
        for p in ins:
            counts[p] += 1
        moves += 1
    if cur[0] <= budget or best_effort:
        return info[0]
    return None


def drop_dead_computations(g: Graph, seq: list[int]) -> list[int]:
    """``seq`` without the computations nothing needs: walking backward, a computation stays
    when a later kept computation reads one of its outputs as the latest copy, when it makes
    the final copy of a required output, or when it is the last remaining computation of its
    operator (every operator runs at least once). Every reader keeps reading the same copy, and
    in :func:`schedule_from_sequence` each kept copy lives from its computation to its last
    kept reader, no longer than before, so the schedule's memory at every kept computation is
    at most the original's: the peak never rises, and the compute falls by the dropped
    computations. One pass is complete (a kept computation's inputs are marked before the
    earlier ones are looked at). O(sequence length x degree)."""
    want: set[int] = set(g.output_idx)  # tensors a kept computation (or the end) needs from an earlier one
    ran: set[int] = set()
    keep = [False] * len(seq)
    for q in range(len(seq) - 1, -1, -1):
        v = seq[q]
        outs = g.op_out[v]
        if v not in ran or any(j in want for j in outs):
            keep[q] = True
            ran.add(v)
            want.difference_update(outs)
            want.update(g.op_in[v])
    return [v for v, k in zip(seq, keep) if k]


def drop_recomputations(g: Graph, seq: list[int], budget: int, deadline: float | None = None,
                        passes: int | None = None) -> list[int]:
    """``seq`` without the recomputations it can do without: each repeat occurrence of an
    operator (dearest first, later first among equals) is removed when the schedule of the
    remaining sequence still fits ``budget`` (its later readers then read the previous copy,
    resident longer instead). First occurrences stay, so every sequence tried is valid.
    A removal can make room for one refused earlier in the pass (the removed copy held
    memory where the refused one would have added some), so passes repeat until one removes
    nothing (``passes``: at most that many). Each pass keeps a memory profile and checks only the
    stretch a removal changes (``_drop_pass``; the same answer as evaluating every trial,
    ``_drop_pass_by_evaluation``); stops at ``deadline`` (a ``time.perf_counter()`` value) with
    what it has."""
    done = 0
    while passes is None or done < passes:
        out = _drop_pass(g, seq, budget, deadline)
        done += 1
        if len(out) == len(seq) or (deadline is not None and time.perf_counter() > deadline):
            return out
        seq = out
    return seq


def _drop_pass(g: Graph, seq: list[int], budget: int, deadline: float | None) -> list[int]:
    """One pass of :func:`drop_recomputations` with an incremental memory profile: the same
    removals, in the same order, as :func:`_drop_pass_by_evaluation` (which evaluates every trial
    sequence), in O(repeats x the stretch each removal touches) instead of O(repeats x sequence
    length). Removing the repeat at q of v (previous run q0) changes the memory only before q:
    each output of v is now held from its copy at q0's last reader to q (when the copy at q had
    a reader or was a required output's final copy), and each input copy whose last reader was q
    is freed at its previous reader instead. So the removal fits when the profile plus those
    changes stays within ``budget`` over that stretch. A sequence whose own schedule does not fit
    ``budget`` takes the evaluating pass (the local check assumes the rest fits)."""
    from memsched.formulations import evaluate

    if evaluate(g, schedule_from_sequence(g, seq)).peak > budget:
        return _drop_pass_by_evaluation(g, seq, budget, deadline)
    L = len(seq)
    NEG = -(1 << 60)
    n_t = g.n_tensors
    keep = g.pinned_idx
    # copies: key (j, c) with c a position or -2 (graph input)
    latest = [-1] * n_t
    readers: dict = {}
    for j in g.input_idx:
        latest[j] = -2
        readers[(j, -2)] = []
    copy_of = [None] * L  # per position: {input tensor: copy position}
    for q, v in enumerate(seq):
        d = {}
        for j in set(g.op_in[v]):
            c = latest[j]
            d[j] = c
            readers.setdefault((j, c), []).append(q)
        copy_of[q] = d
        for j in g.op_out[v]:
            latest[j] = q
            readers.setdefault((j, q), [])
    final = {(j, latest[j]) for j in g.output_idx}

    def forever(key) -> bool:  # alive to the end: a required output's final copy, a pinned input
        return key in final or (key[1] == -2 and key[0] in keep)

    def span(key):
        j, c = key
        r = readers[key]
        if forever(key):
            return (0 if c == -2 else c), L - 1
        if c == -2:
            return (0, max(r)) if r else None
        return c, (max(r) if r else c)

    mem = np.zeros(L, dtype=np.int64)
    for key in readers:
        sp = span(key)
        if sp is not None:
            mem[sp[0]:sp[1] + 1] += g.size[key[0]]
    for q, v in enumerate(seq):
        mem[q] += g.workspace[v]
    # previous alive occurrence of the same operator
    prev = [-1] * L
    nxt = [-1] * L
    last = {}
    for q, v in enumerate(seq):
        if v in last:
            prev[q] = last[v]
            nxt[last[v]] = q
        last[v] = q
    alive = [True] * L
    repeats = [q for q in range(L) if prev[q] != -1]
    for step, q in enumerate(sorted(repeats, key=lambda q: (-g.cost[seq[q]], -q))):
        if deadline is not None and not step & 63 and time.perf_counter() > deadline:
            break
        v = seq[q]
        q0 = prev[q]
        changes = []  # (lo, hi, delta) on positions lo..hi
        for j in g.op_out[v]:
            kq, k0 = (j, q), (j, q0)
            if readers[kq] or kq in final:
                e0 = span(k0)[1]
                if e0 + 1 <= q - 1:
                    changes.append((e0 + 1, q - 1, g.size[j]))
        for j, c in copy_of[q].items():
            key = (j, c)
            if forever(key):
                continue
            sp = span(key)
            if sp[1] != q:
                continue
            rest = [r for r in readers[key] if r != q]
            if rest:
                new_end = max(rest)
            elif c == -2:
                new_end = -1  # freed at the head
            else:
                new_end = c
            if new_end + 1 <= q - 1:
                changes.append((new_end + 1, q - 1, -g.size[j]))
        ok = True
        if changes:
            lo = min(a for a, _, _ in changes)
            delta = np.zeros(q - lo, dtype=np.int64)
            for a, b, dd in changes:
                delta[a - lo:b - lo + 1] += dd
            seg = mem[lo:q] + delta
            ok = int(seg.max()) <= budget if len(seg) else True
        if not ok:
            continue
        # apply
        if changes:
            mem[lo:q] += delta
        mem[q] = NEG
        alive[q] = False
        for j in g.op_out[v]:
            kq, k0 = (j, q), (j, q0)
            for r in readers[kq]:
                copy_of[r][j] = q0
            readers[k0].extend(readers[kq])
            if kq in final:
                final.discard(kq)
                final.add(k0)
            del readers[kq]
        for j, c in copy_of[q].items():
            readers[(j, c)].remove(q)
        # unlink q
        n2 = nxt[q]
        nxt[q0] = n2
        if n2 != -1:
            prev[n2] = q0
    return [v for v, a in zip(seq, alive) if a]


def _drop_pass_by_evaluation(g: Graph, seq: list[int], budget: int, deadline: float | None) -> list[int]:
    """One pass of :func:`drop_recomputations` that evaluates each trial sequence whole
    (O(repeats x sequence length)): the reference :func:`_drop_pass` matches."""
    from memsched.formulations import evaluate
    from memsched.formulations.evaluator import ScheduleError

    seen: set[int] = set()
    repeats = []
    for q, v in enumerate(seq):
        if v in seen:
            repeats.append(q)
        seen.add(v)
    alive = [True] * len(seq)
    for q in sorted(repeats, key=lambda q: (-g.cost[seq[q]], -q)):
        if deadline is not None and time.perf_counter() > deadline:
            break
        alive[q] = False
        trial = [v for v, a in zip(seq, alive) if a]
        try:
            fits = evaluate(g, schedule_from_sequence(g, trial)).peak <= budget
        except ScheduleError:
            fits = False
        if not fits:
            alive[q] = True
    return [v for v, a in zip(seq, alive) if a]
