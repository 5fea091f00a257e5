"""Address-aware allocators under DTR (``--allocator``).

The default DTR runtime (:class:`Runtime`, ``--allocator bytes``) counts bytes: an
operator runs when ``memory + need <= budget``, exactly as simrd does. Real devices
allocate contiguous blocks: a free total large enough may still hold no block of the
size requested (fragmentation). :class:`AllocRuntime` replays a trace with an allocator
model over an arena of ``budget`` bytes:

* ``first-fit`` / ``best-fit``: one arena ``[0, budget)``; a request takes the lowest
  free block that fits (first-fit) or the smallest one (best-fit, ties: lowest address),
  is split, and freed blocks coalesce with free neighbours.
* ``caching``: PyTorch's CUDA caching allocator rules (c10/cuda/CUDACachingAllocator,
  modelled, not copied): request sizes rounded up to a multiple of 512 B (at least
  512 B); requests up to 1 MiB come from the small pool, in 2 MiB segments; larger ones
  from the large pool, in 20 MiB segments for requests under 10 MiB, else segments of the
  request rounded up to 2 MiB; a block is found best-fit within its pool and split only
  when the remainder is at least 512 B (small pool) or more than 1 MiB (large pool);
  freed blocks coalesce within their segment and stay cached; a new segment is reserved
  while the reserved total stays within the budget, else every fully free cached segment
  is released (as ``empty_cache`` on an allocation failure) and the search retried.

When the byte count fits but no block is found, the runtime evicts by its heuristic
(the same choice as under byte pressure) and retries; when nothing is left to evict the
run ends with outcome ``fragmentation`` and ``failure`` names the missing block: the
request, the free total, the largest free block and the layout of the arena.

Heuristic ``coop`` (Coop, Zhang et al., NeurIPS 2023: evict a contiguous window; the
idea, not their code) works on the arenas only. It skips the byte loop: when an output
finds no free block, the runtime takes the window ``[a, a + size)`` of the arena whose
blocks are all free or evictable and whose evictable storages have the least summed cost
(per storage e*(s) / (clock - last access), i.e. h_DTR times its bytes; free bytes cost
nothing), evicts every storage in it at once, and places the output there (the window is
then one free block). :func:`cheapest_window` finds it: a least window can be taken to
start at a block's start (moving its start left to the start of the block holding it
adds no block and may drop one at the right end), so it tries every block start. With no
such window the run fails: ``oom`` when the unevictable bytes plus the request exceed the
budget (no placement could fit it), else ``fragmentation``.
"""
from __future__ import annotations

import bisect

from memsched.formulations import MemschedError

from .runtime import OOMError, Runtime, ThrashError

__all__ = ["ALLOCATORS", "Arena", "CachingAllocator", "AllocRuntime", "FragmentationError", "make_allocator",
           "cheapest_window", "check_heuristic_allocator"]

ALLOCATORS = ("bytes", "first-fit", "best-fit", "caching")
ARENAS = ("first-fit", "best-fit")
WINDOW_HEURISTICS = ("coop",)

KIB, MIB = 1024, 1024 * 1024


class FragmentationError(Exception):
    pass


class Arena:
    """``[0, capacity)`` with first-fit or best-fit placement and coalescing. Free blocks
    are kept as a sorted list of addresses with their sizes.

    ``test(v)`` (optional) answers ``v > capacity``; :class:`AllocRuntime` passes one that
    records ``v`` as a tested value of the run's budget-equivalence interval. The capacity
    enters a placement only through the *top block* ``[top, capacity)`` (``top``: the end
    of the highest used block, 0 when none; the block is absent when ``top == capacity``):
    it fits a request iff ``top + size <= capacity``, and best-fit prefers it to the
    smallest lower fitting block of ``s`` bytes iff ``capacity - top < s``, i.e.
    ``top + s > capacity`` (ties go to the lower address). Every other block's address and
    size does not depend on the capacity (docs/dtr.md, Allocators)."""

    def __init__(self, capacity: int, policy: str = "best-fit", test=None):
        if policy not in ("first-fit", "best-fit"):
            raise MemschedError(f"arena policy must be first-fit or best-fit, got {policy!r}")
        self.capacity = capacity
        self.policy = policy
        self.free_addr: list[int] = [0] if capacity > 0 else []
        self.free_size: dict[int, int] = {0: capacity} if capacity > 0 else {}
        self.used: dict[int, int] = {}  # addr -> size
        self.test = test if test is not None else (lambda v: v > capacity)

    def top(self) -> int:
        """The end of the highest used block (0 when none): the top block is ``[top, capacity)``."""
        fa = self.free_addr
        if fa and fa[-1] + self.free_size[fa[-1]] == self.capacity:
            return fa[-1]
        return self.capacity

    def alloc(self, size: int):
        """The block's address, or None when no free block holds ``size`` (> 0) bytes."""
        fa, fs = self.free_addr, self.free_size
        top = self.top()
        n = len(fa) - (top < self.capacity)  # the free blocks below the top block
        best = None
        if self.policy == "first-fit":
            for k in range(n):
                if fs[fa[k]] >= size:
                    best = fa[k]
                    break
            if best is None and not self.test(top + size):  # the top block fits
                best = top
        else:
            bs = 0
            for k in range(n):
                a = fa[k]
                s = fs[a]
                if s >= size and (best is None or s < bs):
                    best, bs = a, s
            # the top block fits, and is smaller than the best lower block (ties: lower address)
            if not self.test(top + size) and (best is None or self.test(top + bs)):
                best = top
        if best is None:
            return None
        s = fs.pop(best)
        i = bisect.bisect_left(fa, best)
        del fa[i]
        if s > size:
            fa.insert(i, best + size)
            fs[best + size] = s - size
        self.used[best] = size
        return best

    def free(self, addr) -> None:
        size = self.used.pop(addr)
        i = bisect.bisect_left(self.free_addr, addr)
        # coalesce with the next free block, then with the previous one
        if i < len(self.free_addr) and self.free_addr[i] == addr + size:
            size += self.free_size.pop(self.free_addr[i])
            del self.free_addr[i]
        if i > 0 and self.free_addr[i - 1] + self.free_size[self.free_addr[i - 1]] == addr:
            p = self.free_addr[i - 1]
            self.free_size[p] += size
        else:
            self.free_addr.insert(i, addr)
            self.free_size[addr] = size

    def largest_free(self) -> int:
        return max(self.free_size.values(), default=0)

    def free_total(self) -> int:
        return sum(self.free_size.values())

    def layout(self) -> list[tuple[int, int, str]]:
        """(address, size, 'used' | 'free') in address order."""
        out = [(a, s, "used") for a, s in self.used.items()] + [(a, s, "free") for a, s in self.free_size.items()]
        return sorted(out)


def round_size(size: int) -> int:
    """PyTorch's request rounding: a multiple of 512 B, at least 512 B."""
    return max(512, -(-size // 512) * 512)


class CachingAllocator:
    """The caching allocator's rules over a reserve limit of ``capacity`` bytes (see the
    module docstring). Blocks are ``(segment, offset)`` pairs. The capacity enters only the
    reserve tests ``reserved + segment > capacity`` (before and after releasing the cached
    segments), answered by ``test`` (optional; :class:`AllocRuntime` records them)."""

    SMALL = 1 * MIB  # requests <= 1 MiB: small pool
    SMALL_SEG = 2 * MIB
    LARGE_SEG = 20 * MIB
    MIN_LARGE_ALLOC = 10 * MIB
    ROUND_LARGE = 2 * MIB

    def __init__(self, capacity: int, test=None):
        self.capacity = capacity
        self.test = test if test is not None else (lambda v: v > capacity)
        self.reserved = 0
        self.segments: dict[int, dict] = {}  # id -> {"size", "small", "free": {off: size}, "used": {off: size}}
        self._next = 0

    def _segment_size(self, size: int) -> int:
        if size <= self.SMALL:
            return self.SMALL_SEG
        if size < self.MIN_LARGE_ALLOC:
            return self.LARGE_SEG
        return -(-size // self.ROUND_LARGE) * self.ROUND_LARGE

    def _find(self, size: int, small: bool):
        best = None
        for sid, seg in self.segments.items():
            if seg["small"] != small:
                continue
            for off, s in seg["free"].items():
                if s >= size and (best is None or s < best[2] or (s == best[2] and (sid, off) < best[:2])):
                    best = (sid, off, s)
        return best

    def alloc(self, size: int):
        size = round_size(size)
        small = size <= self.SMALL
        hit = self._find(size, small)
        if hit is None:
            ss = self._segment_size(size)
            if self.test(self.reserved + ss):
                self.release_cached()
                if self.test(self.reserved + ss):
                    return None
            sid = self._next
            self._next += 1
            self.segments[sid] = {"size": ss, "small": small, "free": {0: ss}, "used": {}}
            self.reserved += ss
            hit = (sid, 0, ss)
        sid, off, s = hit
        seg = self.segments[sid]
        del seg["free"][off]
        rem = s - size
        split = rem >= 512 if small else rem > self.SMALL
        if split:
            seg["free"][off + size] = rem
            seg["used"][off] = size
        else:
            seg["used"][off] = s
        return (sid, off)

    def free(self, block) -> None:
        sid, off = block
        seg = self.segments[sid]
        size = seg["used"].pop(off)
        fr = seg["free"]
        nxt = off + size
        if nxt in fr:
            size += fr.pop(nxt)
        prev = next((o for o, s in fr.items() if o + s == off), None)
        if prev is not None:
            fr[prev] += size
        else:
            fr[off] = size

    def release_cached(self) -> None:
        for sid in [i for i, seg in self.segments.items() if not seg["used"]]:
            self.reserved -= self.segments.pop(sid)["size"]

    def largest_free(self) -> int:
        cached = max((s for seg in self.segments.values() for s in seg["free"].values()), default=0)
        return max(cached, self.capacity - self.reserved)

    def free_total(self) -> int:
        return self.capacity - self.reserved + sum(s for seg in self.segments.values() for s in seg["free"].values())

    def layout(self) -> list[tuple]:
        out = []
        for sid, seg in sorted(self.segments.items()):
            out += [(sid, o, s, "used") for o, s in seg["used"].items()]
            out += [(sid, o, s, "free") for o, s in seg["free"].items()]
        return sorted(out)


def cheapest_window(blocks, size: int):
    """The least-cost window of ``size`` bytes over a tiling of an arena.

    Parameters
    ----------
    blocks : list of (address, length, cost)
        In address order, each starting where the previous one ends; ``cost`` None: the
        block cannot be cleared (locked, pinned, or an output being placed); free blocks
        cost 0.
    size : int
        Bytes of the window (> 0).

    Returns
    -------
    (cost, i, j) or None
        The window ``[blocks[i].address, + size)`` overlaps blocks ``i .. j-1`` and no
        block with cost None; its cost is the sum of their costs (summed in address
        order); least cost, ties: the lowest address. None when every window of ``size``
        bytes inside the tiling overlaps a block with cost None.

    Complexity: O(n + sum of window lengths) for n blocks.
    """
    n = len(blocks)
    locked = [0] * (n + 1)  # locked[k]: blocks with cost None among blocks[:k]
    for k, b in enumerate(blocks):
        locked[k + 1] = locked[k] + (b[2] is None)
    best = None
    j = 0
    end = blocks[0][0] if blocks else 0
    for i in range(n):
        a = blocks[i][0]
        if j < i + 1:
            j, end = i + 1, a + blocks[i][1]
        while end < a + size and j < n:
            end = blocks[j][0] + blocks[j][1]
            j += 1
        if end < a + size:
            break  # no window starting here or later fits
        if locked[j] - locked[i]:
            continue
        c = 0
        for k in range(i, j):
            c += blocks[k][2]
        if best is None or c < best[0]:
            best = (c, i, j)
    return best


def check_heuristic_allocator(heuristic: str, allocator: str) -> None:
    """A window heuristic (``coop``) needs an arena allocator; MemschedError otherwise."""
    from .runtime import canonical_heuristic

    if canonical_heuristic(heuristic) in WINDOW_HEURISTICS and allocator not in ARENAS:
        raise MemschedError(f"--heuristic {heuristic} evicts address windows: it needs --allocator first-fit or "
                            f"best-fit, got {allocator}")


def make_allocator(name: str, capacity: int, test=None):
    """The allocator ``name`` over ``capacity`` bytes; ``test(v)`` answers ``v > capacity``
    (default: the plain comparison)."""
    if name in ("first-fit", "best-fit"):
        return Arena(capacity, name, test)
    if name == "caching":
        return CachingAllocator(capacity, test)
    raise MemschedError(f"--allocator: expected one of {', '.join(ALLOCATORS)}, got {name!r}")


class AllocRuntime(Runtime):
    """:class:`Runtime` with an address-aware allocator (``first-fit``, ``best-fit``,
    ``caching``): every storage holds a block; an operator's results need blocks before it
    runs (after the byte check of the base runtime); a request with no block evicts by the
    heuristic and retries; with nothing left to evict the run's outcome is
    ``fragmentation``."""

    address_aware = True

    def __init__(self, trace, budget, heuristic: str = "dtr", *, allocator: str = "best-fit", evict_first=(),
                 **kw):
        if kw.get("workspace") is not None:
            raise MemschedError("address-aware allocators replay traces only (no graph workspace)")
        check_heuristic_allocator(heuristic, allocator)
        super().__init__(trace, budget, heuristic, **kw)
        self.allocator = allocator
        # every comparison of the allocator with its capacity (the budget) is a budget test
        self.alloc = make_allocator(allocator, budget, self._test)
        self.st_block: dict[int, object] = {}
        self.frag_evictions = 0  # evictions made because no block fitted (bytes would have fitted)
        self.frag_log: list[dict] = []  # record mode: those evictions (see _log_frag)
        self.window = self.h in WINDOW_HEURISTICS
        self.windows = 0  # windows cleared (coop)
        # explanation intervention: these tensors' storages go first whenever anything is evicted
        self.evict_first = frozenset(evict_first)

    def _test(self, v) -> bool:
        """``v > budget``, with ``v`` recorded as a tested value (``eq_lo`` / ``eq_hi``, as
        :meth:`Runtime._free` records the byte tests): every place where the budget decides
        something in an address-aware run goes through here (docs/dtr.md, Allocators)."""
        if v > self.budget:
            if v < self.eq_hi:
                self.eq_hi = v
            return True
        if v > self.eq_lo:
            self.eq_lo = v
        return False

    def _free(self, need, op: int) -> None:
        if not self.window:
            Runtime._free(self, need, op)
        else:
            # coop: the placement clears windows (a block that fits is also room in bytes);
            # the base runtime tested memory + need > budget before calling here and records
            # the value only when it is <= budget, so it is recorded here too (no decision
            # depends on it under coop, but the interval is then a function of the run)
            self._test(self.memory + need)

    def _choose(self) -> int:
        if self.evict_first:
            for s in self.pool:
                if any(self.t_storage[t] == s for t in self.evict_first):
                    return s
        return self._pick(self.pool, self.clock)

    def run(self) -> str:
        try:
            return super().run()
        except FragmentationError:
            return "fragmentation"

    def _compute(self, t: int, op: int, remat: bool) -> None:
        o = self.trace.ops[op]
        blocks = self._place(o, op)  # may evict: the siblings resident after it are the base's dup
        dup = {u for u in self.t_sibs[t] if self.t_defined[u]}
        Runtime._compute(self, t, op, remat)
        for i, r in enumerate(o.results):
            b = blocks[i]
            if b is None:
                continue
            if r in dup:  # recomputed again next to a resident copy: freed at once
                self.alloc.free(b)
            else:
                self.st_block[r] = b

    def _place(self, o, op: int) -> list:
        if self.window:
            return self._place_window(o, op)
        while True:
            got = []
            failed = None
            for i, size in enumerate(o.sizes):
                if size <= 0 or o.aliases[i] != -1:
                    got.append(None)
                    continue
                b = self.alloc.alloc(size)
                if b is None:
                    failed = size
                    break
                got.append(b)
            if failed is None:
                return got
            # the state the request failed in (the operator's earlier outputs placed)
            snap = (self.alloc.free_total(), self.alloc.largest_free()) if self.record else None
            for b in got:
                if b is not None:
                    self.alloc.free(b)
            if not self.pool:
                self._record_fragmentation(o, op, failed)
                raise FragmentationError()
            self.frag_evictions += 1
            s = self._choose()
            if self.record:
                self._log_frag(op, failed, [s], snap)
            self._evict(s, "fragmentation")

    def _log_frag(self, op: int, size: int, evicted, snap) -> None:
        """Record mode: an eviction for want of a block (the bytes fitted): where, the
        request, the free total and largest free block it failed in, what it evicts."""
        self.frag_log.append({"pos": self.pos, "clock": self.clock, "op": op, "requested": size,
                              "free_total": snap[0], "largest_free": snap[1],
                              "evicted": list(evicted), "eviction_index": self.evictions})

    def _blocks(self, cost_of):
        """The arena's tiling ``(address, size, cost)``; cost None for a block that cannot
        be cleared, else ``cost_of(storage)`` (free blocks: 0), and the owners by address."""
        owners = {b: s for s, b in self.st_block.items()}
        pool = self.pool
        out = []
        for a, size, st in self.alloc.layout():
            if st == "free":
                out.append((a, size, 0))
            else:
                s = owners.get(a)
                out.append((a, size, cost_of(s) if s is not None and s in pool else None))
        return out, owners

    def _place_window(self, o, op: int) -> list:
        """Coop: place the outputs one by one; an output that finds no block clears the
        cheapest window of its size (:func:`cheapest_window`) and takes it."""
        got = []
        for i, size in enumerate(o.sizes):
            if size <= 0 or o.aliases[i] != -1:
                got.append(None)
                continue
            b = self.alloc.alloc(size)
            while b is None:
                clock = self.clock
                first = {self.t_storage[t] for t in self.evict_first}
                blocks, owners = self._blocks(lambda s: 0 if s in first else self._cost(s, clock))
                w = cheapest_window(blocks, size)
                self._window_tests(blocks, size)
                if w is None:
                    self._fail_window(o, op, size, got)
                rest = sum(sz for sz, ob in zip(o.sizes[i:], o.aliases[i:]) if sz > 0 and ob == -1)
                why = "pressure" if self._test(self.memory + rest) else "fragmentation"
                self.windows += 1
                if self.record and why == "fragmentation":
                    self._log_frag(op, size, [owners[a] for a, _s, _c in blocks[w[1]:w[2]] if a in owners],
                                   (self.alloc.free_total(), self.alloc.largest_free()))
                for a, _sz, _c in blocks[w[1]:w[2]]:
                    s = owners.get(a)
                    if s is not None:
                        if why == "fragmentation":
                            self.frag_evictions += 1
                        self._evict(s, why)
                b = self.alloc.alloc(size)
            got.append(b)
        return got

    def _window_tests(self, blocks, size: int) -> None:
        """Record the budget tests of :func:`cheapest_window` over the arena's tiling: a
        window ``[a, a + size)`` lies inside the arena iff ``a + size <= budget``. For a start
        ``a`` below the top block with ``a + size <= top`` that holds at every budget of the
        interval (``top <= eq_lo``: each placement that raised the top was a recorded fit);
        the others are tested, in address order up to the first that does not fit (every
        later start is higher). The top block's own start never holds a window: its fit was
        the failed ``alloc`` just before."""
        top = self.alloc.top()
        for a, _sz, _c in blocks:
            if a >= top:
                break
            if a + size > top and self._test(a + size):
                break

    def _fail_window(self, o, op: int, size: int, got) -> None:
        """No window of ``size`` bytes can be cleared: record the failure (the layout with
        the outputs placed so far, unowned) and stop."""
        evictable = sum(self.st_size[s] for s in self.pool)
        need = sum(sz for sz, a in zip(o.sizes, o.aliases) if sz > 0 and a == -1)
        if self._test(self.memory - evictable + need):
            self.failure = {"kind": "oom", "op": op, "requested": need, "memory": self.memory,
                            "short": self.memory - evictable + need - self.budget, "clock": self.clock,
                            "depth": self.depth, "pos": self.pos}
            self.stack_at_failure = list(self.mstack)
            raise OOMError()
        self._record_fragmentation(o, op, size)
        self.failure["placed_bytes"] = sum(self.alloc.used[b] for b in got if b is not None)
        raise FragmentationError()

    def _record_fragmentation(self, o, op: int, size: int) -> None:
        owners = {b: s for s, b in self.st_block.items()}
        lay = []
        for e in self.alloc.layout():
            k = e[0] if len(e) == 3 else (e[0], e[1])
            lay.append(list(e) + [owners.get(k) if e[-1] == "used" else None])
        self.failure = {"kind": "fragmentation", "op": op, "allocator": self.allocator,
                        "requested": size, "request_sizes": list(o.sizes), "memory": self.memory,
                        "budget": self.budget, "free_total": self.alloc.free_total(),
                        "largest_free": self.alloc.largest_free(), "clock": self.clock, "pos": self.pos,
                        "layout": lay, "evictable_bytes": sum(self.st_size[s] for s in self.pool)}
        self.stack_at_failure = list(self.mstack)

    def _evict(self, s: int, why: str) -> None:
        b = self.st_block.pop(s, None)
        if b is not None:
            self.alloc.free(b)
        Runtime._evict(self, s, why)


def explain_fragmentation(failure: dict, trace=None) -> str:
    """One paragraph: the block that was missing and the resident storages that split the
    free space (every resident block is unevictable at that point: locked operands of the
    operator or pinned storages, since the run evicted until nothing was left)."""
    f = failure
    lay = f["layout"]
    free = [e for e in lay if e[-2] == "free"]
    used = [e for e in lay if e[-2] == "used"]

    def name(s):
        if s is None:
            return "?"
        if trace is None:
            return f"storage {s}"
        return f"{trace.tensor_names[s] if s < len(trace.tensor_names) else s} ({f'{trace.ops[trace.tensor_op[s]].name}'})"

    where = "segments" if f.get("allocator") == "caching" else "arena"
    head = (f"no free block of {f['requested']} bytes ({f.get('allocator')}): {f['free_total']} bytes free "
            f"in {len(free)} block(s), the largest {f['largest_free']} bytes, although bytes fit "
            f"(memory {f['memory']} + request {sum(f['request_sizes'])} <= budget {f['budget']}); ")
    parts = [f"{where} layout (address, size, state[, owner]):"]
    for e in lay[:40]:
        addr = e[0] if len(e) == 4 else f"seg{e[0]}+{e[1]}"
        parts.append(f"  {addr} {e[-3]} {e[-2]}" + (f" {name(e[-1])}" if e[-2] == "used" else ""))
    if len(lay) > 40:
        parts.append(f"  ... {len(lay) - 40} more")
    return head + f"the free space is split by {len(used)} resident unevictable block(s)\n" + "\n".join(parts)


def replay_alloc(trace, ratio=None, *, budget=None, heuristic="dtr", allocator="best-fit", overhead_limit=2.0,
                 seed=0, timeout=None, record=False, pin=(), evict_first=(), engine="auto"):
    """:func:`replay` under an allocator model (``bytes``: the plain runtime). ``pin``:
    tensor ids pinned once computed; ``evict_first`` (address-aware only): tensor ids
    whose storages are evicted first whenever an eviction is made (explanations).

    ``engine`` as in :func:`replay`: 'auto' (default) replays with the compiled engine
    (:mod:`.jit_runtime`: exactly :class:`AllocRuntime`'s decisions, figures, failure and
    budget interval; docs/dtr.md, Allocators) when it supports the configuration (heuristic
    dtr, msps or an ab-e* ablation under bytes, first-fit, best-fit or caching; no record,
    pin or evict_first; an acyclic storage graph; integer costs) and the trace has at least
    ``replay.JIT_MIN_COMMANDS`` commands; 'python' always uses :class:`AllocRuntime` (or
    :class:`Runtime` for bytes); 'jit' requires the compiled engine (MemschedError if it
    cannot replay this). With the compiled engine ``runtime`` is a
    :class:`.jit_runtime.JitRun` (figures, ``frag_evictions``, ``eq_lo`` / ``eq_hi``; no
    allocator object, no events)."""
    import time

    from .replay import JIT_MIN_COMMANDS, ReplayResult, budget_for, load_trace, trace_baseline
    from .runtime import canonical_heuristic

    if allocator not in ALLOCATORS:
        raise MemschedError(f"--allocator: expected one of {', '.join(ALLOCATORS)}, got {allocator!r}")
    if engine not in ("auto", "python", "jit"):
        raise MemschedError(f"replay: engine must be 'auto', 'python' or 'jit', got {engine!r}")
    tr = load_trace(trace)
    h = canonical_heuristic(heuristic)
    b = trace_baseline(tr)
    if budget is None:
        if ratio is None or not ratio > 0:
            raise MemschedError("replay: give a positive ratio or a budget")
        budget = budget_for(tr, ratio)
    limit = b["baseline_compute"] * (overhead_limit - 1)
    t0 = time.perf_counter()
    check_heuristic_allocator(h, allocator)
    if allocator == "bytes" and evict_first:
        raise MemschedError("evict_first needs an address-aware allocator")
    deadline = None if timeout is None else t0 + timeout
    res = None
    if engine == "jit" or (engine == "auto" and len(tr.schedule) >= JIT_MIN_COMMANDS):
        from . import jit_runtime

        if jit_runtime.supported(h, record=record, pin_extra=pin, allocator=allocator, evict_first=evict_first):
            res = jit_runtime.run(tr, budget, h, remat_limit=limit, deadline=deadline, allocator=allocator)
        if res is None and engine == "jit":
            raise MemschedError(f"replay: the compiled engine cannot replay {tr.path} with heuristic {h} under "
                                f"allocator {allocator} here (numba "
                                f"{'missing or disabled' if not jit_runtime.AVAILABLE else 'available'}; see "
                                "docs/dtr.md, Allocators)")
    if res is not None:
        out, rt = res
    else:
        kw = dict(remat_limit=limit, record=record, seed=seed, deadline=deadline, pin_extra=pin)
        if allocator == "bytes":
            rt = Runtime(tr, budget, h, **kw)
        else:
            rt = AllocRuntime(tr, budget, h, allocator=allocator, evict_first=evict_first, **kw)
        try:
            out = rt.run()
        except TimeoutError:
            out = "unresolved"
    return ReplayResult(outcome=out, clock=rt.clock, peak=rt.peak, evictions=rt.evictions,
                        baseline_memory=b["baseline_memory"], baseline_compute=b["baseline_compute"],
                        budget=budget, wall_s=time.perf_counter() - t0, heuristic=h, ratio=ratio,
                        eager_evictions=rt.eager_evictions, remat_compute=rt.remat_compute,
                        recomputations=rt.remat_count, overhead_limit=overhead_limit, failure=rt.failure,
                        runtime=rt)


_ = (OOMError, ThrashError)  # the base runtime's outcomes pass through run()
