"""The DTR eviction heuristics: one table, each heuristic's cost written once.

Every heuristic of the DTR paper (Kirisame et al., ICLR 2021, section 4 and appendix;
simrd's ``heuristics.py``) and its 16 ablations scores an evictable storage ``s`` as

    cost(s) = numerator(s) / denominator(s)      (INF when the denominator is <= 0)

or, without a denominator, ``numerator(s)``; the runtime evicts the storage of least
cost (ties: the last one scanned in pool order, a cost of exactly 0 ends the scan, as in
simrd). :data:`HEURISTICS` gives, per name, the simrd class, the state the runtime must
maintain for it (``regions``: e*(s) regions; ``eq``: equivalence classes), the numerator
and the denominator as Python expressions over the runtime's per-storage lists, and the
choice policy (``least``; ``random``: a seeded uniform draw; ``lookahead``: see
:mod:`.lookahead`; ``window``: a contiguous address window, :mod:`.allocator`).

:func:`bind` compiles the two expressions into three functions over a runtime's state:
``numerator(s)``, ``cost(s, clock)`` and ``choose(pool, clock)`` (the least-cost scan).
The expression is inlined in the scan loop instead of called per storage, so a new
heuristic is one row of the table and costs no call per pool entry. The runtime's
``_choose`` (eviction), ``cost_of`` (explanations) and the lookahead policies (h_DTR for
candidates beyond the horizon, e*(s) for the others) all use these functions.

Names over which the expressions are written (bound by :func:`bind`):

* ``size[s]``, ``last[s]``, ``comp[s]``: bytes, last access time and compute of the
  storage; ``clock``: the runtime's clock now;
* ``rg_c[s]``, ``rr_c[s]``: compute of the evicted storages in s's forward / backward
  region (regions heuristics only);
* ``adj_p``, ``adj_c``, ``ev``: storage adjacency and the evicted set; ``ecn``,
  ``par``, ``val``, ``find``: the equivalence classes' union-find (eq heuristics only).

A numerator is an expression, or a block of statements that sets ``e``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from memsched.formulations.errors import MemschedError

__all__ = ["HEURISTICS", "Heuristic", "heuristic_names", "canonical_heuristic", "spec", "bind"]

INF = math.inf

# numerators
E_STAR = "comp[s] + (rg_c[s] + rr_c[s])"  # e*(s): s and its evicted regions (simrd's DTR)
# the e* ablations sum left to right: the same value for integer costs (every trace), and
# kept for float costs (graph replays) so that no decision differs from earlier releases
E_STAR_AB = "comp[s] + rg_c[s] + rr_c[s]"
E_BACK = "comp[s] + rr_c[s]"  # MSPS: s and its backward region
# h_DTR-EqClass: s and the classes of its evicted neighbours (a statement block that sets
# e, inlined in the scan: a root, or a child of one, is its class without find(), which
# would not change the tree there)
E_EQ = """e = comp[s]
ap, ac = adj_p[s], adj_c[s]
if not (ap.isdisjoint(ev) and ac.isdisjoint(ev)):
    roots = set()
    add = roots.add
    for n in (ap | ac) & ev:
        if n != s:
            q = ecn[n]
            p = par[q]
            add(q if p == -1 else p if par[p] == -1 else find(q))
    for r in roots:
        e = e + val[r]"""
# the same with each storage's evicted neighbours kept as a set by the runtime (``en[s]``,
# EqClassMixin, integer costs only: the classes are then summed in another order, exact for
# integers); it saves the set algebra per pool entry, the bulk of the scan
E_EQ_EN = """e = comp[s]
nb = en[s]
if len(nb) == 1:
    for n in nb:
        q = ecn[n]
        p = par[q]
        e = e + val[q if p == -1 else p if par[p] == -1 else find(q)]
elif nb:
    roots = set()
    add = roots.add
    for n in nb:
        q = ecn[n]
        p = par[q]
        add(q if p == -1 else p if par[p] == -1 else find(q))
    for r in roots:
        e = e + val[r]"""
LOCAL = "comp[s]"
ONE = "1"
LAST = "last[s]"  # LRU: least recent access first
# denominators
SIZE_STALE = "size[s] * (clock - last[s])"
SIZE = "size[s]"
STALE = "clock - last[s]"


class Heuristic(NamedTuple):
    simrd: str | None  # simrd's class name (None: memsched only)
    features: str  # state to maintain: 'regions', 'eq' or ''
    numerator: str
    denominator: str | None
    policy: str = "least"  # least | random | lookahead


_H = Heuristic
HEURISTICS: dict[str, Heuristic] = {
    "dtr": _H("DTR", "regions", E_STAR, SIZE_STALE),
    "dtr-eqclass": _H("DTREqClass", "eq", E_EQ, SIZE_STALE),
    "dtr-local": _H("DTRLocal", "", LOCAL, SIZE_STALE),
    "lru": _H("LRU", "", LAST, None),
    "size": _H("LargestStorage", "", ONE, SIZE),
    "msps": _H("MSPS", "regions", E_BACK, SIZE),
    "random": _H("RandomStorage", "", "0.0", None, "random"),
    # ablations: {e*, eq, local, nocost} x {size} x {staleness}
    "ab-e-size-stale": _H("AbESizeStale", "regions", E_STAR, SIZE_STALE),
    "ab-e-size": _H("AbESize", "regions", E_STAR_AB, SIZE),
    "ab-e-stale": _H("AbEStale", "regions", E_STAR_AB, STALE),
    "ab-e": _H("AbE", "regions", E_STAR_AB, None),
    "ab-eq-size-stale": _H("AbEqSizeStale", "eq", E_EQ, SIZE_STALE),
    "ab-eq-size": _H("AbEqSize", "eq", E_EQ, SIZE),
    "ab-eq-stale": _H("AbEqStale", "eq", E_EQ, STALE),
    "ab-eq": _H("AbEq", "eq", E_EQ, None),
    "ab-local-size-stale": _H("AbLocalSizeStale", "", LOCAL, SIZE_STALE),
    "ab-local-size": _H("AbLocalSize", "", LOCAL, SIZE),
    "ab-local-stale": _H("AbLocalStale", "", LOCAL, STALE),
    "ab-local": _H("AbLocal", "", LOCAL, None),
    "ab-size-stale": _H("AbSizeStale", "", ONE, SIZE_STALE),
    "ab-size": _H("AbSize", "", ONE, SIZE),
    "ab-stale": _H("AbStale", "", ONE, STALE),
    "ab-random": _H("AbRandom", "", "0.0", None, "random"),
    # lookahead (not in simrd; see .lookahead): belady = H=inf with Belady's rule,
    # lookahead-K = a horizon of K operators; their cost (explanations) is h_DTR
    "belady": _H(None, "regions", E_STAR, SIZE_STALE, "lookahead"),
    "lookahead-inf": _H(None, "regions", E_STAR, SIZE_STALE, "lookahead"),
    # address-aware (not in simrd; see .allocator): Coop's sliding window. Under a
    # first-fit / best-fit arena it evicts the contiguous window of least summed cost
    # e*(s) / staleness (h_DTR times the storage's bytes: the price of the whole storage);
    # it has no byte-counting form (the plain runtime rejects it)
    "coop": _H(None, "regions", E_STAR, STALE, "window"),
}
del _H
_BY_CLASS = {v.simrd: k for k, v in HEURISTICS.items() if v.simrd}


def heuristic_names() -> list[str]:
    """Every heuristic name accepted (``lookahead-K`` stands for any integer K)."""
    return list(HEURISTICS) + ["lookahead-K"]


def canonical_heuristic(name: str) -> str:
    """Normalize a heuristic name: a memsched name, a simrd class name, or
    ``lookahead-K`` (``lookahead-0`` is ``dtr``).

    Raises
    ------
    MemschedError
        For an unknown name (the message lists the valid ones).
    """
    if name in HEURISTICS:
        return name
    if name in _BY_CLASS:
        return _BY_CLASS[name]
    low = name.lower()
    if low in HEURISTICS:
        return low
    if low.startswith("lookahead-"):
        k = low.split("-", 1)[1]
        if k in ("inf", "infinity"):
            return "lookahead-inf"
        if k.isdigit():
            return "dtr" if int(k) == 0 else f"lookahead-{int(k)}"
    raise MemschedError(f"unknown DTR heuristic {name!r}; choose from {', '.join(heuristic_names())}")


def spec(name: str) -> Heuristic:
    """The table row of a canonical name (``lookahead-K`` shares ``lookahead-inf``'s)."""
    return HEURISTICS.get(name) or HEURISTICS["lookahead-inf"]


_TEMPLATE = """
def factory(rt):
    size, last, comp = rt.st_size, rt.st_last, rt.st_comp
    rg_c, rr_c = getattr(rt, "rg_c", None), getattr(rt, "rr_c", None)
    adj_p, adj_c, ev = getattr(rt, "adj_p", None), getattr(rt, "adj_c", None), getattr(rt, "evicted", None)
    ecn, par, val = getattr(rt, "st_ecn", None), getattr(rt, "uf_parent", None), getattr(rt, "uf_val", None)
    find = getattr(rt, "_find", None)
    en = getattr(rt, "st_en", None)

    def numerator(s):
{num_lines}
        return e

    def cost(s, clock):
{cost_lines}
        return c

    def choose(pool, clock, size=size, last=last, comp=comp, rg_c=rg_c, rr_c=rr_c, adj_p=adj_p,
               adj_c=adj_c, ev=ev, ecn=ecn, par=par, val=val, find=find, en=en, INF=INF):
        # the state as default arguments: fast locals in the scan loop
        best, bs = INF, None
        for s in pool:
{scan_lines}
            if c <= best:
                best, bs = c, s
            if c == 0:
                break
        return bs

    return numerator, cost, choose
"""

_FACTORIES: dict = {}


def _numerator_lines(num: str, indent: str) -> str:
    """Statements that set ``e`` to the numerator (an expression, or a block setting e)."""
    block = num if "\n" in num else f"e = {num}"
    return "\n".join(indent + ln for ln in block.split("\n"))


def _cost_lines(num: str, den: str | None, indent: str) -> str:
    """Statements that set ``c`` to the cost of ``s``."""
    out = _numerator_lines(num, indent)
    if den is None:
        return f"{out}\n{indent}c = e"
    return f"{out}\n{indent}d = {den}\n{indent}c = e / d if d > 0 else INF"


def _factory(num: str, den: str | None):
    """The compiled factory of one (numerator, denominator) pair (cached per pair)."""
    f = _FACTORIES.get((num, den))
    if f is None:
        src = _TEMPLATE.format(num_lines=_numerator_lines(num, " " * 8),
                               cost_lines=_cost_lines(num, den, " " * 8),
                               scan_lines=_cost_lines(num, den, " " * 12))
        ns = {"INF": INF}
        exec(compile(src, f"<dtr heuristic cost: {num.splitlines()[0]} ... / {den}>", "exec"), ns)
        f = _FACTORIES[(num, den)] = ns["factory"]
    return f


def bind(rt, name: str):
    """``(numerator, cost, choose)`` of heuristic ``name`` over runtime ``rt``'s state.

    Parameters
    ----------
    rt : Runtime
        Its per-storage lists are bound (they are mutated in place, never replaced;
        a runtime that replaces them, e.g. a fork, binds again).
    name : str
        A canonical heuristic name.

    Returns
    -------
    numerator(s), cost(s, clock), choose(pool, clock)
        ``choose`` returns the last storage of least cost in ``pool``'s order (a cost of
        0 stops the scan), ``None`` for an empty pool. Policies ``random`` and
        ``lookahead`` are chosen by the runtime, not by ``choose``.

    Complexity
    ----------
    ``choose``: one evaluation of the expression per pool entry (O(1) per entry, except
    h_DTR-EqClass: O(evicted neighbours) for a storage with evicted neighbours).
    """
    h = spec(name)
    num = h.numerator
    if num == E_EQ and getattr(rt, "st_en", None) is not None:
        num = E_EQ_EN  # the same value (integer costs), from the runtime's evicted-neighbour sets
    return _factory(num, h.denominator)(rt)
