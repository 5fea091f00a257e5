"""Explaining a feasibility hole: why budget A fails while a smaller budget B succeeds.

:func:`explain` replays both budgets with event recording and reports

* the first divergence: the first eviction decision that differs between the two runs
  (schedule position, operator being computed, storage evicted in each run with its
  bytes, compute, reason and cascade depth);
* the failing allocation: operator, bytes requested, bytes short, memory in use;
* the recomputation cascade at the failure: the chain of tensors being materialized
  (outermost first), and for each rematerialized tensor when and why its storage was
  evicted;
* the shortfall at the first divergence: for each run's divergent eviction made under
  pressure, the bytes it lacked for the operator being placed (memory before the
  eviction + the operator's bytes - its budget), and the room the other budget had;
* a systematic single-pin search: every storage the failing run evicted between the first
  divergence and the failure (distinct, in order; at most ``max_pins``) is pinned alone
  and the failing budget replayed; the rescues (outcome ok) are reported, the smallest
  (fewest bytes pinned) first;
* an intervention: replay the failing budget again with the tensors whose eviction
  started the cascade pinned (never evictable once computed) and report the outcome;
  if that does not help, pin every tensor of the cascade.
"""
from __future__ import annotations

import bisect
import time

from memsched.formulations import MemschedError

from .replay import load_trace, replay

__all__ = ["explain", "explain_alloc", "format_alloc_explanation", "least_resident_window"]


def _evictions(rt):
    return [e for e in rt.events if e[0] == "evict"]


def _storage_desc(rt, s):
    tr = rt.trace
    t = rt.st_tensors[s][0] if rt.st_tensors[s] else s
    return {"storage": s, "tensor": tr.tensor_names[t], "op": tr.ops[tr.tensor_op[t]].name,
            "bytes": rt.st_size[s], "compute": rt.st_comp[s]}


def _shortfall(rt, k: int):
    """For the ``k``-th eviction of ``rt`` made under pressure: (operator placed, its bytes,
    memory before the eviction, bytes short = memory + need - budget); None for an eager
    eviction. The operator is the first one computed after the eviction (the runtime
    evicts right before computing the operator that needs the room)."""
    idx = [i for i, e in enumerate(rt.events) if e[0] == "evict"][k]
    e = rt.events[idx]
    if e[2] not in ("pressure", "fragmentation"):
        return None
    op = next((x[1] for x in rt.events[idx + 1:] if x[0] == "compute"), None)
    if op is None:
        op = (rt.failure or {}).get("op")
    if op is None:
        return None
    need = rt.o_total[op]
    before = e[5] + rt.st_size[e[1]]
    return {"op": rt.trace.ops[op].name, "need_bytes": need, "memory_before": before,
            "short_bytes": before + need - rt.budget, "budget": rt.budget}


def search_pins(trace, budget: float, heuristic: str, overhead_limit: float, candidates, *,
                max_pins: int = 100, time_limit: float | None = 120.0) -> dict:
    """Replay ratio ``budget`` with each tensor of ``candidates`` pinned alone (the first
    ``max_pins``, until ``time_limit`` seconds); returns the tries (in candidate order) and
    the rescues (outcome ok), smallest pinned bytes first.

    Prefix sharing: a run with tensor t pinned makes the unpinned run's decisions until t is
    first computed (``pin_extra`` is read only there), so one unpinned run is advanced
    through the schedule, and each pinned run is a fork of it (:meth:`Runtime.fork`) taken
    just before the command that computes t, run on with t pinned. The candidates are
    therefore tried in the order of their first computation (under ``time_limit`` the tried
    ones are the earliest computed); each try equals an independent
    ``replay(..., pin=[t])`` (tests/test_dtr_prefix.py).

    Complexity: one unpinned replay plus, per candidate, a fork and the rest of the replay
    from the candidate's computation on.
    """
    from .replay import budget_for, trace_baseline
    from .runtime import COMPUTE, Runtime, canonical_heuristic

    tr = load_trace(trace)
    t0 = time.perf_counter()
    h = canonical_heuristic(heuristic)
    base = Runtime(tr, budget_for(tr, budget), h, remat_limit=trace_baseline(tr)["baseline_compute"] *
                   (overhead_limit - 1))
    first = {}  # operator -> position of its COMPUTE command
    for k, (kind, x) in enumerate(tr.schedule):
        if kind == COMPUTE:
            first.setdefault(x, k)
    chosen = list(enumerate(candidates))[:max_pins]
    stopped = f"max_pins={max_pins}" if len(candidates) > max_pins else None
    chosen.sort(key=lambda c: (first[tr.tensor_op[c[1][0]]], c[0]))
    tries: dict = {}
    pos, base_out = 0, None
    for i, (t, nbytes) in chosen:
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            stopped = f"time_limit={time_limit}s"
            break
        p = first[tr.tensor_op[t]]
        if base_out is None and p > pos:
            base_out = base.resume(pos, stop=p)
            pos = p
        if base_out is not None:  # the unpinned run ended before t was computed: same run
            rt, out = base, base_out
        else:
            rt = base.fork()
            rt.pin_extra = frozenset((t,))
            out = rt.resume(pos)
        tries[i] = {"tensor": tr.tensor_names[t], "tensor_id": t, "bytes": nbytes, "outcome": out,
                    "clock": rt.clock, "evictions": rt.evictions}
    tries = [tries[i] for i in sorted(tries)]
    rescues = sorted((d for d in tries if d["outcome"] == "ok"), key=lambda d: (d["bytes"], d["tensor_id"]))
    return {"candidates": len(candidates), "tried": len(tries), "stopped": stopped, "tries": tries,
            "rescues": rescues, "smallest": rescues[0] if rescues else None,
            "wall_s": round(time.perf_counter() - t0, 3)}


def explain(trace, budget: float, vs: float, heuristic: str = "dtr", overhead_limit: float = 2.0,
            *, intervene: bool = True, max_pins: int = 100, pin_time_limit: float | None = 120.0) -> dict:
    """Explain why ratio ``budget`` fails while the smaller ratio ``vs`` succeeds."""
    tr = load_trace(trace)
    fail = replay(tr, budget, heuristic=heuristic, overhead_limit=overhead_limit, record=True)
    good = replay(tr, vs, heuristic=heuristic, overhead_limit=overhead_limit, record=True)
    if fail.outcome == "ok":
        raise MemschedError(f"explain: ratio {budget} succeeds with {heuristic}; --budget must be a failing ratio")
    if good.outcome != "ok":
        raise MemschedError(f"explain: ratio {vs} fails ({good.outcome}) with {heuristic}; --vs must be a feasible ratio")
    rf, rg = fail.runtime, good.runtime
    ops = tr.ops
    out = {"trace": str(tr.path), "heuristic": fail.heuristic, "failing": fail.to_json(), "feasible": good.to_json(),
           "hole": vs < budget}
    # ------------------------------------------------------------- divergence
    ef, eg = _evictions(rf), _evictions(rg)
    div = None
    for k in range(min(len(ef), len(eg))):
        a, b = ef[k], eg[k]
        if (a[1], a[2], a[6]) != (b[1], b[2], b[6]):
            div = k
            break
    if div is None and len(ef) != len(eg):
        div = min(len(ef), len(eg))
    if div is not None:
        def side(ev):
            if ev is None:
                return None
            _, s, why, depth, clock, mem, pos = ev
            kind, x = tr.schedule[pos]
            d = _storage_desc(rf, s)
            d.update({"reason": why, "cascade_depth": depth, "clock": clock, "memory_after": mem,
                      "schedule_pos": pos, "while": ops[x].name if kind == 0 else f"pin/release of {tr.tensor_names[x]}"})
            return d
        fa, fb = side(ef[div] if div < len(ef) else None), side(eg[div] if div < len(eg) else None)
        first = None
        if fa and fb and fa["schedule_pos"] != fb["schedule_pos"]:
            first = "failing" if fa["schedule_pos"] < fb["schedule_pos"] else "feasible"
        sf = _shortfall(rf, div) if div < len(ef) else None
        sg = _shortfall(rg, div) if div < len(eg) else None
        for mine, other, rt_other in ((sf, sg, rg), (sg, sf, rf)):
            if mine is not None:
                # the same state, the other budget: room left (negative: also short)
                mine["other_budget_room"] = rt_other.budget - (mine["memory_before"] + mine["need_bytes"])
        out["first_divergence"] = {
            "eviction_index": div,
            "failing_run": fa,
            "feasible_run": fb,
            "failing_shortfall": sf,
            "feasible_shortfall": sg,
            "common_evictions_before": div,
            # when the two evictions happen at different points, the run that evicts earlier
            # is the one that decided differently (the other did not need to evict there)
            "earlier_run": first,
        }
    # ------------------------------------------------------------- failure
    f = fail.failure or {}
    if f:
        fo = {"kind": f["kind"], "op": ops[f["op"]].name, "clock": f.get("clock")}
        if f["kind"] == "oom":
            fo.update({"requested_bytes": f["requested"], "memory_in_use": f["memory"], "short_bytes": f["short"],
                       "budget": fail.budget, "cascade_depth": f["depth"]})
        else:
            fo.update({"remat_compute": f["remat_compute"], "remat_limit": f["remat_limit"]})
        pinned = sum(rf.st_size[s] for s in range(len(rf.st_pin)) if rf.st_pin[s] and rf.st_mat[s])
        locked = sum(rf.st_size[s] for s in range(len(rf.st_rint)) if rf.st_rint[s] > 0 and not rf.st_pin[s]
                     and rf.st_mat[s])
        fo["pinned_bytes"] = pinned
        fo["locked_bytes"] = locked
        out["failing_allocation"] = fo
    # ------------------------------------------------------------- cascade
    stack = rf.stack_at_failure or []
    last_evict = {}
    for e in ef:
        last_evict[e[1]] = e
    casc = []
    for t, remat in stack:
        s = rf.t_storage[t]
        d = {"tensor": tr.tensor_names[t], "op": ops[tr.tensor_op[t]].name, "rematerialization": remat,
             "bytes": rf.st_size[s]}
        ev = last_evict.get(s)
        if remat and ev is not None:
            kind, x = tr.schedule[ev[6]]
            d["evicted"] = {"reason": ev[2], "clock": ev[4],
                            "while": ops[x].name if kind == 0 else tr.tensor_names[x]}
        casc.append(d)
    out["cascade"] = casc
    out["cascade_recomputations"] = sum(1 for c in casc if c["rematerialization"])
    n_remat_events = sum(1 for e in rf.events if e[0] == "compute" and e[2])
    out["recomputations_total"] = n_remat_events

    def remat_by_op(rt):
        d = {}
        for e in rt.events:
            if e[0] == "compute" and e[2]:
                d[e[1]] = d.get(e[1], 0) + 1
        return d

    bf, bg = remat_by_op(rf), remat_by_op(rg)
    extra = sorted(((bf.get(o, 0) - bg.get(o, 0)) * ops[o].cost, o) for o in set(bf) | set(bg))
    extra = [x for x in reversed(extra) if x[0] > 0][:10]
    out["extra_recomputation"] = [{"op": ops[o].name, "tensor": tr.tensor_names[ops[o].results[0]],
                                   "recomputed_failing": bf.get(o, 0), "recomputed_feasible": bg.get(o, 0),
                                   "extra_compute": c} for c, o in extra]
    deepest = max((e for e in rf.events if e[0] == "compute"), key=lambda e: e[3], default=None)
    if deepest is not None:
        kind, x = tr.schedule[deepest[7]]
        out["deepest_cascade"] = {"depth": deepest[3], "clock": deepest[4],
                                  "while": ops[x].name if kind == 0 else f"pin of {tr.tensor_names[x]}"}
    # ------------------------------------------------------------- single-pin search
    if intervene and div is not None:
        seen, cands = set(), []
        for e in ef[div:]:
            s_ = e[1]
            if s_ not in seen and rf.st_tensors[s_]:
                seen.add(s_)
                cands.append((rf.st_tensors[s_][0], rf.st_size[s_]))
        out["pin_search"] = search_pins(tr, budget, heuristic, overhead_limit, cands, max_pins=max_pins,
                                        time_limit=pin_time_limit)
    # ------------------------------------------------------------- intervention
    if intervene:
        roots = [t for t, remat in stack if remat][:1]
        triggers = [t for t, remat in stack if remat]
        tries = []
        if div is not None and div < len(ef):
            tries.append(("storage evicted at the first divergence (failing run)", [rf.st_tensors[ef[div][1]][0]]))
        if roots:
            tries.append(("cascade root at the failure", roots))
        if len(triggers) > 1:
            tries.append(("whole cascade at the failure", triggers))
        top = [ops[o].results[0] for _, o in extra]
        for k in (1, 3, 10):
            if len(top) >= k and (k == 1 or len(top) > k // 3):
                tries.append((f"top {k} extra-recomputed tensors", top[:k]))
        res = []
        for label, ts in tries:
            r = replay(tr, budget, heuristic=heuristic, overhead_limit=overhead_limit, pin=ts)
            res.append({"pinned": [tr.tensor_names[t] for t in ts], "what": label, "outcome": r.outcome,
                        "clock": r.clock, "peak": r.peak, "evictions": r.evictions})
            if r.outcome == "ok":
                break
        out["intervention"] = res
    return out


def format_explanation(d: dict) -> str:
    L = [f"trace {d['trace']}  heuristic {d['heuristic']}",
         f"failing  ratio {d['failing']['ratio']} (budget {d['failing']['budget']}): {d['failing']['outcome']}, "
         f"clock {d['failing']['clock']}, evictions {d['failing']['evictions']}",
         f"feasible ratio {d['feasible']['ratio']} (budget {d['feasible']['budget']}): ok, "
         f"clock {d['feasible']['clock']}, evictions {d['feasible']['evictions']}"]
    dv = d.get("first_divergence")
    if dv:
        L.append(f"first divergence: eviction #{dv['eviction_index']} (after {dv['common_evictions_before']} identical evictions)")
        for k in ("failing_run", "feasible_run"):
            s = dv[k]
            if s is None:
                L.append(f"  {k}: no further eviction")
            else:
                L.append(f"  {k}: evicts {s['tensor']} ({s['bytes']} B, compute {s['compute']}) [{s['reason']}] "
                         f"while {s['while']} at clock {s['clock']}, cascade depth {s['cascade_depth']}")
        for k in ("failing_shortfall", "feasible_shortfall"):
            sh = dv.get(k)
            if sh:
                room = sh["other_budget_room"]
                L.append(f"  {k.split('_')[0]} run at budget {sh['budget']}: {sh['short_bytes']} B short placing "
                         f"{sh['op']} ({sh['need_bytes']} B, {sh['memory_before']} B in use); the other budget "
                         + (f"had {room} B to spare there" if room >= 0 else f"was {-room} B short too"))
        if dv.get("earlier_run"):
            L.append(f"  -> the {dv['earlier_run']} run evicts first; the other run has room there and evicts "
                     f"later (its next eviction is the one listed)")
    else:
        L.append("first divergence: none (identical eviction sequences)")
    fa = d.get("failing_allocation")
    if fa:
        if fa["kind"] == "oom":
            L.append(f"failing allocation: {fa['op']} requests {fa['requested_bytes']} B with {fa['memory_in_use']} B "
                     f"in use -> {fa['short_bytes']} B short (pinned {fa['pinned_bytes']} B, locked "
                     f"{fa['locked_bytes']} B), cascade depth {fa['cascade_depth']}")
        else:
            L.append(f"thrash: remat compute {fa['remat_compute']} > limit {fa['remat_limit']} while computing {fa['op']}")
    L.append(f"cascade at the failure ({len(d['cascade'])} frames, {d['cascade_recomputations']} rematerializations; "
             f"{d['recomputations_total']} recomputations in the whole run):")
    for k, c in enumerate(d["cascade"][:30]):
        ev = c.get("evicted")
        why = f"  <- evicted ({ev['reason']}) while {ev['while']} at clock {ev['clock']}" if ev else ""
        L.append(f"  {k:3d} {'remat' if c['rematerialization'] else 'model'} {c['tensor']} = {c['op']} "
                 f"({c['bytes']} B){why}")
    if len(d["cascade"]) > 30:
        L.append(f"  ... {len(d['cascade']) - 30} more")
    if d.get("extra_recomputation"):
        L.append("extra recomputation in the failing run (vs the feasible run), by compute:")
        for x in d["extra_recomputation"][:6]:
            L.append(f"  {x['op']} ({x['tensor']}): {x['recomputed_failing']} vs {x['recomputed_feasible']} "
                     f"recomputations, +{x['extra_compute']} ns")
    if d.get("deepest_cascade"):
        dc = d["deepest_cascade"]
        L.append(f"deepest cascade in the failing run: depth {dc['depth']} while {dc['while']} at clock {dc['clock']}")
    ps = d.get("pin_search")
    if ps:
        stop = f", stopped at {ps['stopped']}" if ps["stopped"] else ""
        L.append(f"single-pin search: {ps['tried']} of {ps['candidates']} storages evicted between the divergence "
                 f"and the failure pinned one at a time{stop}: {len(ps['rescues'])} rescue(s)")
        if ps["smallest"]:
            sm = ps["smallest"]
            L.append(f"  smallest rescue: pin {sm['tensor']} ({sm['bytes']} B) -> ok (clock {sm['clock']}, "
                     f"evictions {sm['evictions']})")
            more = [r["tensor"] for r in ps["rescues"][1:8]]
            if more:
                L.append(f"  other rescues: {', '.join(more)}{' ...' if len(ps['rescues']) > 8 else ''}")
    for it in d.get("intervention", []):
        L.append(f"intervention: pin {', '.join(it['pinned'][:8])}{' ...' if len(it['pinned']) > 8 else ''} "
                 f"({it['what']}) -> {it['outcome']} (clock {it['clock']}, evictions {it['evictions']})")
    return "\n".join(L)


# ------------------------------------------------------------------ address-aware failures
def _unevictable_reason(rt, s: int, failure: dict) -> str:
    """Why resident storage ``s`` could not be evicted at the failure: pinned (a constant,
    a PIN, or an intervention), or locked as an operand of an operator being computed (the
    failing one, or an outer frame of the recomputation cascade)."""
    tr = rt.trace
    if rt.st_pin[s]:
        return "pinned constant" if rt.st_const[s] else "pinned"
    ops = []
    for t, _remat in rt.stack_at_failure or []:
        o = tr.tensor_op[t]
        if any(rt.t_storage[a] == s for a in tr.ops[o].args) and o not in ops:
            ops.append(o)
    fop = failure.get("op")
    if fop is not None and fop not in ops and any(rt.t_storage[a] == s for a in tr.ops[fop].args):
        ops.append(fop)
    if not ops:
        return "locked" if rt.st_rint[s] > 0 else "evictable"
    names = [tr.ops[o].name + (" (the failing operator)" if o == fop else " (outer cascade frame)") for o in ops]
    return "operand of " + ", ".join(names)


def least_resident_window(blocks, size: int):
    """The window of ``size`` bytes of a tiling (``(address, length, used)`` in address
    order) that overlaps the fewest used bytes; ties: the fewest used blocks, then the
    lowest address. Returns ``(used bytes, used blocks, address)`` or None when the tiling
    is shorter than ``size``.

    The used bytes in ``[a, a + size)`` are piecewise linear in ``a`` with breakpoints where
    the window's start or end meets a block boundary, so a minimum is reached at a start
    ``a`` that is a block's start or a block's end minus ``size``; those are the candidates.
    """
    if not blocks:
        return None
    end = blocks[-1][0] + blocks[-1][1]
    starts = [b[0] for b in blocks]
    cands = sorted({b[0] for b in blocks} | {b[0] + b[1] - size for b in blocks})
    best = None
    for a in cands:
        if a < blocks[0][0] or a + size > end:
            continue
        k = bisect.bisect_right(starts, a) - 1
        used = nb = 0
        while k < len(blocks) and blocks[k][0] < a + size:
            b0, ln, u = blocks[k]
            if u:
                ov = min(a + size, b0 + ln) - max(a, b0)
                if ov > 0:
                    used += ov
                    nb += 1
            k += 1
        if best is None or (used, nb, a) < best:
            best = (used, nb, a)
    return best


def explain_alloc(trace, budget: float, allocator: str = "best-fit", heuristic: str = "dtr",
                  overhead_limit: float = 2.0, *, intervene: bool = True, max_pins: int = 20,
                  time_limit: float | None = None) -> dict:
    """Explain an address-aware failure at ratio ``budget`` under ``allocator``.

    Returns a dict with ``failing`` (the run), ``bytes_run`` (the byte-counting run at the
    same budget: with ``coop``, heuristic ``dtr``), ``frag_evictions`` (evictions made for
    want of a block although the bytes fitted) and, for outcome ``fragmentation``:

    * ``missing_block``: the request, the free total, the largest free block, the bytes in
      use and the budget;
    * ``window``: the ``request``-byte window of the arena (segment, under ``caching``)
      overlapping the fewest resident bytes (:func:`least_resident_window`): the free
      pieces in it would have formed the block but for the resident blocks in it, the
      ``fragmenters`` (storage, tensor, producing operator, bytes, address, and why it could
      not be evicted: pinned, or an operand of the failing operator or of an outer cascade
      frame);
    * ``interventions``: replays of the same budget with one change each: every
      fragmenter pinned alone (the first ``max_pins``), all of them pinned, all of them
      evicted first whenever the run evicts anything (``evict_first``), and the ``coop``
      heuristic (arenas; when not already used), each with its outcome; ``rescues`` lists
      those that complete. ``time_limit``: seconds for the interventions; past it no new
      replay starts, and ``interventions_skipped`` counts the ones not run.
    """
    from .allocator import ALLOCATORS, replay_alloc

    if allocator not in ALLOCATORS or allocator == "bytes":
        raise MemschedError(f"explain --allocator: expected first-fit, best-fit or caching, got {allocator!r}")
    tr = load_trace(trace)
    fail = replay_alloc(tr, budget, heuristic=heuristic, allocator=allocator, overhead_limit=overhead_limit,
                        record=True)
    if fail.outcome == "ok":
        raise MemschedError(f"explain: ratio {budget} succeeds with {heuristic} under --allocator {allocator}; "
                            f"--budget must be a failing ratio")
    rt = fail.runtime
    bh = "dtr" if fail.heuristic == "coop" else fail.heuristic
    by = replay(tr, budget, heuristic=bh, overhead_limit=overhead_limit)
    out = {"trace": str(tr.path), "heuristic": fail.heuristic, "allocator": allocator, "failing": fail.to_json(),
           "bytes_run": dict(by.to_json(), heuristic=bh), "frag_evictions": rt.frag_evictions}
    out["failing"].get("failure", {}).pop("layout", None)
    if rt.frag_log:
        # before its first eviction for want of a block, an address-aware run makes the
        # byte-counting run's decisions (tests/test_dtr_allocator.py): this is where the
        # two part (coop: its first window cleared while the bytes fitted)
        e = rt.frag_log[0]
        out["first_block_eviction"] = {
            "op": tr.ops[e["op"]].name, "requested": e["requested"], "free_total": e["free_total"],
            "largest_free": e["largest_free"], "clock": e["clock"], "eviction_index": e["eviction_index"],
            "evicted": [_storage_desc(rt, s) for s in e["evicted"]]}
    f = fail.failure or {}
    if f.get("kind") != "fragmentation":
        return out
    out["missing_block"] = {"op": tr.ops[f["op"]].name, "requested": f["requested"],
                            "request_sizes": f["request_sizes"], "free_total": f["free_total"],
                            "largest_free": f["largest_free"], "memory": f["memory"], "budget": f["budget"]}
    # the window of `requested` bytes overlapping the fewest resident bytes (then the fewest
    # resident blocks, then the lowest address), per arena / segment
    lay = f["layout"]
    groups: dict = {}
    for e in lay:
        key = None if len(e) == 4 else e[0]
        groups.setdefault(key, []).append(e)
    best = None
    for key, es in groups.items():
        blocks = [(e[-4], e[-3], e[-2] == "used") for e in es]
        w = least_resident_window(blocks, f["requested"])
        if w is not None and (best is None or w[:2] < best[0][:2]):
            best = (w, key, es)
    if best is not None:
        (resident, _nb, a), key, es = best
        n = f["requested"]
        frag, pieces = [], []
        for e in es:
            lo, hi = max(a, e[-4]), min(a + n, e[-4] + e[-3])
            if lo >= hi:
                continue
            if e[-2] == "free":
                pieces.append((e[-4], e[-3]))
                continue
            d = {"address": e[-4], "bytes": e[-3], "in_window": hi - lo, "segment": key}
            if e[-1] is not None:
                d.update(_storage_desc(rt, e[-1]))
                d["why_resident"] = _unevictable_reason(rt, e[-1], f)
            frag.append(d)
        out["window"] = {"segment": key, "address": a, "bytes": n, "free_pieces": pieces,
                         "resident_bytes": resident}
        out["fragmenters"] = frag
    if not intervene:
        return out
    tries = []
    ts = [d["storage"] for d in out.get("fragmenters", []) if "storage" in d and not rt.st_const[d["storage"]]]
    for t in ts[:max_pins]:
        tries.append((f"pin {tr.tensor_names[t]}", dict(pin=[t])))
    if len(ts) > 1:
        tries.append(("pin all fragmenters", dict(pin=ts)))
    if ts:
        tries.append(("evict the fragmenters first", dict(evict_first=ts)))
    if allocator in ("first-fit", "best-fit") and fail.heuristic != "coop":
        tries.append(("heuristic coop (contiguous windows)", dict(heuristic="coop")))
    res = []
    t0 = time.perf_counter()
    for i, (label, kw) in enumerate(tries):
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            out["interventions_skipped"] = len(tries) - i
            break
        h = kw.pop("heuristic", heuristic)
        r = replay_alloc(tr, budget, heuristic=h, allocator=allocator, overhead_limit=overhead_limit, **kw)
        res.append({"what": label, "heuristic": r.heuristic, "pinned": [tr.tensor_names[t] for t in kw.get("pin", [])],
                    "evict_first": [tr.tensor_names[t] for t in kw.get("evict_first", [])], "outcome": r.outcome,
                    "clock": r.clock, "evictions": r.evictions})
    out["interventions"] = res
    out["rescues"] = [r["what"] for r in res if r["outcome"] == "ok"]
    return out


def format_alloc_explanation(d: dict) -> str:
    fl, by = d["failing"], d["bytes_run"]
    L = [f"trace {d['trace']}  heuristic {d['heuristic']}  allocator {d['allocator']}",
         f"ratio {fl['ratio']} (budget {fl['budget']}): {fl['outcome']} under {d['allocator']}, clock {fl['clock']}, "
         f"evictions {fl['evictions']} ({d['frag_evictions']} made for want of a block while the bytes fitted)",
         f"byte counting at the same budget ({by['heuristic']}): {by['outcome']}, clock {by['clock']}, "
         f"evictions {by['evictions']}"]
    fb = d.get("first_block_eviction")
    if fb:
        ev = ", ".join(f"{x['tensor']} ({x['bytes']} B)" for x in fb["evicted"][:6])
        where = ("its first window cleared while the bytes fitted" if d["heuristic"] == "coop" else
                 "where the run leaves byte counting's decisions")
        L.append(f"first eviction for want of a block ({where}): eviction "
                 f"#{fb['eviction_index']} at clock {fb['clock']}, {fb['op']} requests {fb['requested']} B with "
                 f"{fb['free_total']} B free, the largest block {fb['largest_free']} B; evicts {ev}")
    mb = d.get("missing_block")
    if mb is None:
        L.append(f"not a fragmentation failure ({fl['outcome']}): the address-aware run ends like a byte-counting "
                 f"failure; explain the byte run's holes with dtr explain --vs")
        return "\n".join(L)
    L.append(f"missing block: {mb['op']} requests {mb['requested']} B (outputs {mb['request_sizes']}); "
             f"{mb['free_total']} B free, the largest free block {mb['largest_free']} B; "
             f"{mb['memory']} B in use of {mb['budget']} (bytes fit: {mb['memory'] + sum(mb['request_sizes'])} <= "
             f"{mb['budget']})")
    w = d.get("window")
    if w:
        where = f"segment {w['segment']} " if w["segment"] is not None else ""
        pieces = ", ".join(f"{s} B at {a}" for a, s in w["free_pieces"]) or "none"
        L.append(f"the block would have been {where}[{w['address']}, {w['address'] + w['bytes']}): free pieces "
                 f"{pieces}, split by {len(d['fragmenters'])} resident block(s) ({w['resident_bytes']} B):")
        for x in d["fragmenters"]:
            part = "" if x["in_window"] == x["bytes"] else f", {x['in_window']} B of it in the window"
            if "tensor" in x:
                L.append(f"  {x['address']} {x['bytes']} B{part} {x['tensor']} = {x['op']} (compute {x['compute']}): "
                         f"{x['why_resident']}")
            else:
                L.append(f"  {x['address']} {x['bytes']} B{part} (an output of the failing operator)")
    for it in d.get("interventions", []):
        L.append(f"intervention: {it['what']} -> {it['outcome']} (clock {it['clock']}, evictions {it['evictions']})")
    if d.get("interventions_skipped"):
        L.append(f"{d['interventions_skipped']} more intervention(s) not run: --pin-time-limit reached")
    if "interventions" in d:
        L.append(f"rescued by: {', '.join(d['rescues'])}" if d["rescues"] else "no intervention rescues this budget")
    return "\n".join(L)
