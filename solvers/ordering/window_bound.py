"""The induced-subproblem (window) lower bound on the optimal peak of an operator order.

For a set S of operators, :func:`window_graph` builds an ordering instance G_S on S
(plus zero-cost *virtual* operators) such that every order of G maps to an order of
G_S in which every moment's memory is at most the memory of some moment of G's order
(docs/bounds.md, section 9). Hence ``opt(G_S) <= opt(G)``, and any proven lower bound
of G_S (the exact machinery run on it: bounds, DP decisions, CP-SAT's objective bound)
is a lower bound of G. A window of 60-150 operators around the incumbent's peak couples
many moments at once, which the single-moment trap values and the pair bound do not.

* operators of S keep their outputs and workspace; u precedes v in G_S whenever u
  reaches v in G (through operators outside S too: zero-size precedence tensors);
* a non-kept tensor produced in S stays live until its last consumer in S and the last
  S-ancestor of each consumer outside S that may run after its producer (a virtual
  consumer, or an extra input of the one operator that runs last among them);
* a tensor produced outside S by p (or an unpinned graph input) is live from the first
  S-descendant of p (the start) to the last S-operator that is an ancestor of one of
  its consumers or a consumer (a required output: to the end); it is produced by a
  virtual producer before its first reader, or by that reader when it is unique;
  tensors with no such S-operator are dropped; pinned inputs stay pinned.

:func:`window_bound` picks windows around the incumbent's peak -- bands of whole depth
layers (the default) or consecutive operators of the order -- and solves each G_S with :func:`memsched.solvers.ordering.exact.solve_exact` within
a time share; the best proven bound is returned with the window that gave it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph, Operator, Tensor

from . import bounds as B

__all__ = ["WindowGraph", "window_graph", "restrict_order", "window_value", "op_depth", "band_windows",
           "position_windows", "window_bound"]


@dataclass
class WindowGraph:
    """G_S and how its operators relate to G: sub operator ``i < len(ops)`` is G's
    operator ``ops[i]``; the others are virtual (``vprod``: producers, listed with the
    G tensor they produce; ``vcons``: consumers, with the G tensor they end)."""

    graph: Graph
    ops: list[int]
    vprod: list[int] = field(default_factory=list)
    vcons: list[int] = field(default_factory=list)

    @property
    def n_virtual(self) -> int:
        return len(self.vprod) + len(self.vcons)


def _bits(m: int):
    while m:
        b = m & -m
        yield b.bit_length() - 1
        m ^= b


def window_graph(g: Graph, S, order=None, *, virtual: bool = True) -> WindowGraph:
    """The induced subproblem G_S of the operator set ``S`` (docs/bounds.md 9).

    ``order`` (an order of G, optional) only sets G_S's given order: the restriction
    of it (:func:`restrict_order`). O(|S| (n + T) / 64 + T |S|) with bitmasks."""
    r = B.reachability(g)
    if r is None:
        raise ValueError("window_graph needs ancestor bitmasks (graphs up to REACH_MASK_MAX_OPS operators)")
    anc, desc = r.anc, r.desc
    S = sorted(set(S))
    smask = 0
    for u in S:
        smask |= 1 << u
    if order is not None:
        pos = {v: k for k, v in enumerate(order)}
        S.sort(key=pos.__getitem__)
    else:
        pos = {v: k for k, v in enumerate(g.given_order())}
        S.sort(key=pos.__getitem__)
    kept = g.kept_idx()
    always = g.always_resident_idx()

    def maximal(m: int) -> list[int]:
        return [u for u in _bits(m) if not desc[u] & m]

    def minimal(m: int) -> list[int]:
        return [u for u in _bits(m) if not anc[u] & m]

    # G_S under construction: per real operator its inputs / outputs (names)
    ins: dict[int, list[str]] = {u: [] for u in S}
    outs: dict[int, list[str]] = {u: [] for u in S}
    tensors: list[Tensor] = []
    pinned: list[str] = []
    required: list[str] = []
    virt: list[Operator] = []
    vprod: list[int] = []
    vcons: list[int] = []
    prec_readers: dict[int, list[str]] = {}  # u -> virtual / real operators that must follow u (by name)

    def tname(j: int) -> str:
        return f"t{j}"

    def read(u: int, name: str) -> None:
        if name not in ins[u]:
            ins[u].append(name)

    for j in range(g.n_tensors):
        p = g.producer[j]
        cons = g.consumers[j]
        size = g.size[j]
        nm = tname(j)
        cin = [c for c in cons if (smask >> c) & 1]
        if p != -1 and (smask >> p) & 1:
            tensors.append(Tensor(nm, size))
            outs[p].append(nm)
            for c in cin:
                read(c, nm)
            if j in kept:
                required.append(nm)
                continue
            a = 0
            for c in cons:
                if not (smask >> c) & 1:
                    a |= anc[c]
            a &= smask & ~anc[p] & ~(1 << p)
            if not a:
                continue
            cmask = 0
            for c in cin:
                cmask |= 1 << c
            top = maximal(a | cmask)
            if len(top) == 1 and (anc[top[0]] >> p) & 1:
                read(top[0], nm)  # the one operator that runs last among them reads it
                continue
            if not virtual:  # shorter: live until one of them (a descendant of p) only
                late = [u for u in top if (anc[u] >> p) & 1]
                if late:
                    read(max(late, key=lambda u: (anc[u] & a).bit_count()), nm)
                continue
            vn = f"vc{j}"
            vins = [nm]
            for u in maximal(a):
                prec_readers.setdefault(u, []).append(vn)
                vins.append(f"e{u}")
            virt.append(Operator(vn, tuple(vins), (f"z{vn}",), 0.0, 0))
            tensors.append(Tensor(f"z{vn}", 0))
            vcons.append(j)
            continue
        if p == -1:
            if j in always:
                tensors.append(Tensor(nm, size))
                pinned.append(nm)
                for c in cin:
                    read(c, nm)
                continue
            d = 0
            for c in cons:
                d |= anc[c] | (1 << c)
            d &= smask
            if not d:
                continue  # freed before any operator of S can run: dropped
            tensors.append(Tensor(nm, size))
            for u in set(maximal(d)) | set(cin):
                read(u, nm)
            if j in kept:
                required.append(nm)
            continue
        # produced outside S
        d = desc[p] & smask
        if j not in kept:
            live = 0
            for c in cons:
                live |= anc[c] | (1 << c)
            d &= live
        if not d:
            continue  # not surely resident at any moment of S: dropped (a relaxation)
        tensors.append(Tensor(nm, size))
        lows = minimal(d)
        if len(lows) > 1 and not virtual:  # shorter: live from one first reader m on only
            m = max(lows, key=lambda u: (desc[u] & d).bit_count())
            d &= desc[m] | (1 << m)
            lows = [m]
        readers = {u for u in cin if (d >> u) & 1} | (set() if j in kept else set(maximal(d)))
        if len(lows) == 1:
            m = lows[0]
            outs[m].append(nm)  # the first reader produces it: resident there in G already
            readers.discard(m)
        else:
            vn = f"vp{j}"
            virt.append(Operator(vn, (), (nm,), 0.0, 0))
            vprod.append(j)
            readers |= set(lows)
        for u in readers:
            read(u, nm)
        if j in kept:
            required.append(nm)

    # precedences: u before v in G_S whenever u reaches v in G (covering pairs only)
    data_pred: dict[int, set[int]] = {u: set() for u in S}
    prod_of = {}
    for u in S:
        for t in outs[u]:
            prod_of[t] = u
    for v in S:
        for t in ins[v]:
            if t in prod_of:
                data_pred[v].add(prod_of[t])
    for v in S:
        for u in maximal(anc[v] & smask):
            if u not in data_pred[v]:
                prec_readers.setdefault(u, []).append(f"o{v}")
                read(v, f"e{u}")
    for u in prec_readers:
        outs[u].append(f"e{u}")
        tensors.append(Tensor(f"e{u}", 0))
    real = [Operator(f"o{u}", tuple(ins[u]), tuple(outs[u]), g.cost[u], g.workspace[u]) for u in S]
    wg = WindowGraph(None, S, vprod, vcons)  # type: ignore[arg-type]
    sub = Graph(real + virt, tensors, pinned=frozenset(pinned), outputs=tuple(required),
                name=f"{g.name}[window {len(S)} ops]")
    wg.graph = sub
    if order is not None:
        o = restrict_order(g, wg, order)
        wg.graph = Graph(sub.ops, sub.tensors, pinned=sub.pinned, outputs=sub.outputs,
                         order=tuple(sub.ops[i].name for i in o), name=sub.name)
    return wg


def restrict_order(g: Graph, wg: WindowGraph, order) -> list[int]:
    """The order of G_S that the proof of docs/bounds.md 9 maps ``order`` (of G) to: the
    operators of S in ``order``'s sequence, each virtual producer right before its first
    reader, each virtual consumer right after the last of its predecessors."""
    sub = wg.graph
    n_real = len(wg.ops)
    rank = {u: k for k, u in enumerate(u for u in order if u in set(wg.ops))}
    key = [None] * sub.n_ops
    for i, u in enumerate(wg.ops):
        key[i] = (rank[u], 1)
    succ, pred = sub.op_succ(), sub.op_pred()
    for i in range(n_real, sub.n_ops):
        if not pred[i]:  # virtual producer: right before its first reader
            key[i] = (min(rank[wg.ops[s]] for s in succ[i]), 0) if succ[i] else (len(rank), 0)
        else:  # virtual consumer: right after the last of its (real) predecessors
            key[i] = (max(rank[wg.ops[p]] for p in pred[i]), 2)
    return sorted(range(sub.n_ops), key=lambda i: (key[i], i))


def window_value(g: Graph, S, order, *, time_limit: float, floor: int = 0, workers: int = 1, seed: int = 0,
                 info: dict | None = None) -> int:
    """A proven lower bound of opt(G_S) <= opt(G), by the exact solver on G_S within
    ``time_limit`` seconds (its ``lower_bound``; certification of G_S is not needed).
    ``floor``: a bound already known for G. When the restriction of ``order`` to G_S (a valid
    order of G_S, docs/bounds.md 9) already peaks at or below it, opt(G_S) <= floor and the
    window cannot raise the bound: G_S is not solved and 0 is returned (``info["skipped"]``)."""
    from memsched.formulations import order_peak

    from .exact import solve_exact

    wg = window_graph(g, S, order)
    if floor > 0:
        pk = order_peak(wg.graph, restrict_order(g, wg, order))
        if pk <= floor:
            if info is not None:
                info.update({"ops": len(wg.ops), "virtual": wg.n_virtual, "lower_bound": 0, "upper_bound": pk,
                             "wall_s": 0.0, "skipped": f"the restricted order peaks at {pk} <= the bound {floor}"})
            return 0
    res = solve_exact(wg.graph, time_limit=time_limit, workers=workers, seed=seed, window_share=0.0)
    lb = int(res.lower_bound) if res.lower_bound is not None else 0
    if info is not None:
        info.update({"ops": len(wg.ops), "virtual": wg.n_virtual, "lower_bound": lb,
                     "upper_bound": res.value, "wall_s": round(res.wall_s, 3)})
    return lb


def op_depth(g: Graph) -> list[int]:
    """Longest-path depth of every operator from the sources (the layer of a layered
    graph), O(n + E)."""
    pred = g.op_pred()
    depth = [0] * g.n_ops
    for v in g.topological_order():
        for p in pred[v]:
            if depth[p] + 1 > depth[v]:
                depth[v] = depth[p] + 1
    return depth


def band_windows(g: Graph, order, sizes=(120, 200, 280)) -> list[list[int]]:
    """Windows of whole depth layers around the operator at the peak of ``order``: for
    each size, the narrowest band of depths ``[d - h, d + h]`` (d the peak operator's
    depth) with at least that many operators; distinct bands only, never all operators."""
    mem = B.order_step_memory(g, order)
    v = max(range(len(order)), key=lambda i: mem[order[i]])
    depth = op_depth(g)
    d = depth[order[v]]
    top = max(depth) if depth else 0
    out: list[list[int]] = []
    for size in sizes:
        for h in range(0, top + 1):
            S = [u for u in order if abs(depth[u] - d) <= h]
            if len(S) >= size or len(S) == len(order):
                break
        if len(S) < len(order) and (not out or len(S) > len(out[-1])):
            out.append(S)
    return out


def position_windows(g: Graph, order, sizes=(60, 90, 120)) -> list[list[int]]:
    """Windows of consecutive operators of ``order`` centred on its peak step."""
    mem = B.order_step_memory(g, order)
    k = max(range(len(order)), key=lambda i: mem[order[i]])
    out = []
    n = len(order)
    for w in sizes:
        w = min(w, n)
        lo = max(0, min(k - w // 2, n - w))
        out.append(list(order[lo:lo + w]))
    return out


def window_bound(g: Graph, order, base: int, *, time_budget: float, sizes=(120, 200, 280), kind: str = "band",
                 workers: int = 1, seed: int = 0, info: dict | None = None, say=None) -> int:
    """max(base, window values) over the windows of :func:`band_windows` (``kind="band"``:
    whole depth layers around the incumbent's peak operator) or :func:`position_windows`
    (``"position"``: consecutive operators of ``order``) of the given ``sizes``, each solved
    within an equal share of what is left of ``time_budget``. Any prefix of the work is a
    valid bound (each window value is)."""
    best = base
    t0 = time.perf_counter()
    rows = []
    wins = band_windows(g, order, sizes) if kind == "band" else position_windows(g, order, sizes)
    for i, S in enumerate(wins):
        left = time_budget - (time.perf_counter() - t0)
        if left <= 0.5:
            break
        share = left / (len(wins) - i)
        row: dict = {}
        v = window_value(g, S, order, time_limit=share, floor=best, workers=workers, seed=seed + i, info=row)
        rows.append(row)
        if say is not None:
            say(f"window of {len(S)} operators (+{row['virtual']} virtual): "
                + (f"skipped ({row['skipped']})" if "skipped" in row else f"bound {v} B in {row['wall_s']:.1f}s"))
        best = max(best, v)
    if info is not None:
        info["windows"] = rows
    return best
