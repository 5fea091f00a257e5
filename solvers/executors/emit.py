"""Emit a standalone Python program that runs a schedule and measures its memory.

The program (numpy or torch backend) realizes the evaluator's semantics exactly:

* every graph input is allocated (and filled with a deterministic byte pattern)
  before the first event: resident from the start;
* ``compute(v)`` allocates one ``uint8`` buffer of exactly the tensor's byte size per
  output, then ``workspace(v)`` bytes, then runs the kernel, then drops the
  workspace: while v runs, memory = resident + outputs + workspace;
* ``free(t)`` deletes the program's only reference to t's buffer.

The kernel writes each output from its inputs with in-place ``uint8`` additions on
slices (``np.add(a, b, out=a)`` / ``a.add_(b)``) and ``fill``: no hidden temporaries,
identical arithmetic (addition mod 256) in both backends, so numpy and torch give
bitwise-identical outputs. Output byte ``i`` starts at a per-operator salt and adds
byte ``i`` of every input no longer than the output; an input longer than the
output (``full`` whole rows of the output's length) adds its first row, a strided
sample ``x[0 : full*S : full]`` (S bytes) spanning the whole input, and its partial last row: at most
three operations per input, whatever the size ratio.

Measurement is done by the program itself, independently of the model (the
program never sees the modeled peak):

* numpy: tracemalloc, filtered to numpy's allocation domain
  (``np.lib.tracemalloc_domain``), sampled after every allocation step (inputs, each
  compute's outputs + workspace; memory never grows elsewhere); plus a
  guard: the growth of tracemalloc's global high-water mark during each kernel
  (``kernel_transient_max``), which bounds any hidden temporary.
* torch CPU: the profiler's allocation events (``profile_memory=True``); the realized
  peak is the maximum of the allocator's running ``total_allocated`` counter.
* torch CUDA: ``torch.cuda.max_memory_allocated()`` minus the allocation before the
  run (the caching allocator rounds blocks up to 512 bytes, so realized >= modeled).

With ``arena`` (an :class:`ArenaPlan`) the program allocates one buffer of the plan's
size and every tensor and workspace is a view at its planned offset.

Hashes: the sha256 of every hashed tensor (required outputs, or every sink when none
is required) taken right after its first computation (inputs are never written once
computed); a recomputation is hashed again and must agree; ``output_hash`` is the
sha256 over the sorted ``name:hash`` lines.
"""
from __future__ import annotations

import zlib

from memsched.formulations import Graph, Schedule
from memsched.formulations.schedule import COMPUTE, FREE

from .arena import ArenaPlan

__all__ = ["emit_program", "hashed_tensors", "BACKENDS", "DEVICES"]

BACKENDS = ("numpy", "torch")
DEVICES = ("cpu", "cuda")

_COMMON = r'''
import hashlib, json, sys, time

_BASE = bytes((i * 167) & 255 for i in range(256))
_PATTERN_CACHE = {}

def _pattern(salt):
    """256 deterministic bytes (a Python bytes object: not in the measured domain)."""
    c = (salt * 131 + (salt >> 8) * 17 + 11) & 255
    p = _PATTERN_CACHE.get(c)
    if p is None:
        p = _PATTERN_CACHE[c] = bytes((b + c) & 255 for b in _BASE)
    return p

_HASHES, _MISMATCH = {}, []

def _sha(name, raw):
    h = hashlib.sha256(raw).hexdigest()
    old = _HASHES.setdefault(name, h)
    if old != h:
        _MISMATCH.append(name)
'''

_NUMPY = r'''
import tracemalloc
import numpy as np

_DOMAIN = np.lib.tracemalloc_domain
_FILTER = [tracemalloc.DomainFilter(True, _DOMAIN)]
_EMPTY = np.empty(0, np.uint8)  # zero-size tensors are views of this (numpy allocates 1 byte for size 0)
_PEAK = [0]
_TRANSIENT = [0]
_PATTERNS = {}

def _start():
    tracemalloc.start()

try:
    from _tracemalloc import _get_traces  # what take_snapshot() reads: (domain, size, traceback, ...)

    def _numpy_bytes():
        return sum([t[1] for t in _get_traces() if t[0] == _DOMAIN])
except ImportError:  # pragma: no cover
    def _numpy_bytes():
        return sum(t.size for t in tracemalloc.take_snapshot().filter_traces(_FILTER).traces)

def _mark():
    cur = _numpy_bytes()
    if cur > _PEAK[0]:
        _PEAK[0] = cur

def _new(n):
    return np.empty(n, np.uint8) if n else _EMPTY[:0]

def _add(a, b):
    np.add(a, b, out=a)

def _fill(a, v):
    a.fill(v)

def _write_input(a, salt):
    n = a.shape[0]
    if n == 0:
        return
    p = _PATTERNS.get(salt)
    if p is None:
        p = _PATTERNS[salt] = np.frombuffer(_pattern(salt), np.uint8)  # a view: no numpy allocation
    rows = n // 256
    if rows:
        np.copyto(a[:rows * 256].reshape(rows, 256), p)
    tail = n - rows * 256
    if tail:
        np.copyto(a[rows * 256:], p[:tail])

def _raw(a):
    return memoryview(a)

def _kernel_guarded(outs, ins, ws, salt):
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    _kernel(outs, ins, ws, salt)
    grow = tracemalloc.get_traced_memory()[1] - before
    if grow > _TRANSIENT[0]:
        _TRANSIENT[0] = grow

def _finish():
    _mark()
    tracemalloc.stop()
    return {"realized_peak": _PEAK[0], "kernel_transient_max": _TRANSIENT[0],
            "measure": "tracemalloc numpy domain %d, sampled after every allocation" % _DOMAIN}
'''

_TORCH = r'''
import torch
from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler, _enable_profiler, _prepare_profiler

_DEV = torch.device(DEVICE)
_EMPTY = torch.empty(0, dtype=torch.uint8, device=_DEV)
_PATTERNS = {}
_PROF = [None, 0]

def _start():
    for salt in INPUT_SALTS:  # patterns are set up before measuring (host bytes, or a 256-byte device copy)
        _PATTERNS[salt] = torch.frombuffer(bytearray(_pattern(salt)), dtype=torch.uint8).to(_DEV)
    if _DEV.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        _PROF[1] = torch.cuda.memory_allocated()
    else:
        # the profiler core (what torch.profiler.profile(profile_memory=True) drives), without
        # the Python wrapper's post-processing: only allocation events are read back
        cfg = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
        _prepare_profiler(cfg, {ProfilerActivity.CPU})
        _enable_profiler(cfg, {ProfilerActivity.CPU})

def _mark():
    pass

def _new(n):
    return torch.empty(n, dtype=torch.uint8, device=_DEV) if n else _EMPTY[:0]

def _add(a, b):
    a.add_(b)

def _fill(a, v):
    a.fill_(v)

def _write_input(a, salt):
    n = a.shape[0]
    if n == 0:
        return
    p = _PATTERNS[salt]
    rows = n // 256
    if rows:
        a[:rows * 256].view(rows, 256).copy_(p)
    tail = n - rows * 256
    if tail:
        a[rows * 256:].copy_(p[:tail])

def _raw(a):
    return memoryview(a.cpu().numpy() if a.device.type != "cpu" else a.numpy())

_kernel_guarded = None

def _walk(node, out):
    f = node.extra_fields
    if type(f).__name__ == "_ExtraFields_Allocation":
        out.append((node.start_time_ns, f))
    for c in node.children:
        _walk(c, out)

def _finish():
    if _DEV.type == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - _PROF[1]
        return {"realized_peak": int(peak), "measure": "torch.cuda.max_memory_allocated"}
    result = _disable_profiler()
    allocs = []
    for root in result.experimental_event_tree():
        _walk(root, allocs)
    # the allocator's running total; made relative to the total before the first event so
    # that a program run after another one in the same process measures only itself
    allocs.sort(key=lambda tf: tf[0])
    base = int(allocs[0][1].total_allocated) - int(allocs[0][1].alloc_size) if allocs else 0
    peak = max([0] + [int(f.total_allocated) - base for _, f in allocs])
    return {"realized_peak": peak, "allocation_events": len(allocs),
            "measure": "torch.profiler allocation events, max total_allocated"}
'''

_KERNEL = r'''
def _fold(o, x, S):
    n = x.shape[0]
    if n == 0:
        return
    if n <= S:
        _add(o[:n], x)
        return
    full = n // S
    _add(o, x[:S])                      # the first row
    if full > 1:
        _add(o, x[0:full * S:full])  # S bytes, one per row: a sample spanning the input
    tail = n - full * S
    if tail:
        _add(o[:tail], x[full * S:])    # the last partial row

def _kernel(outs, ins, ws, salt):
    if ws is not None and ws.shape[0]:
        _fill(ws, (salt >> 8) & 255)
    for m, o in enumerate(outs):
        S = o.shape[0]
        if S == 0:
            continue
        _fill(o, (salt + 97 * m) & 255)
        for x in ins:
            _fold(o, x, S)
        if ws is not None and ws.shape[0]:
            k = min(S, ws.shape[0])
            _add(o[:k], ws[:k])
'''

_MAIN_TAIL = r'''
def run():
    """Run the schedule once; return the measurements and hashes."""
    _HASHES.clear()
    del _MISMATCH[:]
    res = main()
    res["output_hashes"] = dict(sorted(_HASHES.items()))
    res["output_hash"] = hashlib.sha256("".join("%s:%s\n" % kv for kv in sorted(_HASHES.items())).encode()).hexdigest()
    res["recompute_mismatch"] = list(_MISMATCH)
    return res


if __name__ == "__main__":
    print("MEMSCHED-RESULT " + json.dumps(run()))
'''


def _salt(name: str) -> int:
    return zlib.crc32(name.encode()) & 0xFFFF


def hashed_tensors(graph: Graph) -> list[int]:
    """Tensor indices whose bytes are hashed: the required outputs, or when none is
    required every sink (a produced tensor nobody consumes)."""
    if graph.outputs:
        return sorted(graph.output_idx)
    return [j for j in range(graph.n_tensors) if graph.producer[j] != -1 and not graph.consumers[j]]


def emit_program(graph: Graph, schedule: Schedule, *, backend: str = "numpy", device: str = "cpu",
                 arena: ArenaPlan | None = None, guard: bool = True) -> str:
    """Source text of a standalone program running ``schedule``; it prints one line
    ``MEMSCHED-RESULT {json}`` with realized_peak, output_hashes, output_hash, wall_s."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}")
    if backend == "numpy" and device != "cpu":
        raise ValueError("the numpy backend runs on cpu only")
    size = graph.size
    hashed = set(hashed_tensors(graph))
    offsets = arena.offset_of() if arena is not None else None
    var = lambda j: f"T{j}"  # noqa: E731

    input_salts = sorted({_salt(graph.tensors[j].name) for j in graph.input_idx})
    lines = [
        "#!/usr/bin/env python3",
        f'"""memsched emitted program: graph {graph.name!r}, {graph.n_ops} operators, {len(schedule.events)} events,',
        f"backend {backend}, device {device}, arena {'%d bytes' % arena.size if arena else 'no'}.",
        "Generated by solvers.executors.emit; run it directly: it prints MEMSCHED-RESULT {json}.",
        '"""',
        _COMMON,
        f"DEVICE = {device!r}",
        f"INPUT_SALTS = {input_salts!r}",
        _NUMPY if backend == "numpy" else _TORCH,
        _KERNEL,
        "",
        "def main():",
        "    _start()",
        "    _t0 = time.perf_counter()",
    ]
    body = lines.append
    if arena is not None:
        body(f"    A = _new({arena.size})  # the arena")

    def alloc(key, n):
        if n == 0:
            return "_EMPTY[:0]"
        if offsets is None:
            return f"_new({n})"
        o = offsets[key]
        return f"A[{o}:{o + n}]"

    for j in graph.input_idx:
        body(f"    {var(j)} = {alloc(('input', j, -1), size[j])}  # input {graph.tensors[j].name!r}")
        body(f"    _write_input({var(j)}, {_salt(graph.tensors[j].name)})")
    body("    _mark()")
    kern = "_kernel_guarded" if (backend == "numpy" and guard) else "_kernel"
    for k, (kind, x) in enumerate(schedule.events):
        if kind == COMPUTE:
            op = graph.ops[x]
            body(f"    # event {k}: compute {op.name!r}")
            for j in graph.op_out[x]:
                body(f"    {var(j)} = {alloc(('output', j, k), size[j])}")
            ws = graph.workspace[x]
            if ws:
                body(f"    W = {alloc(('workspace', x, k), ws)}")
            body("    _mark()")
            outs = "".join(var(j) + ", " for j in graph.op_out[x])
            ins = "".join(var(j) + ", " for j in graph.op_in[x])
            body(f"    {kern}(({outs}), ({ins}), {'W' if ws else 'None'}, {_salt(op.name)})")
            if ws:
                body("    del W")
            for j in graph.op_out[x]:
                if j in hashed:
                    body(f"    _sha({graph.tensors[j].name!r}, _raw({var(j)}))")
        else:
            # memory only grows at allocations, which are all sampled: no sample after a free
            body(f"    del {var(x)}  # event {k}: free {graph.tensors[x].name!r}")
    body("    _wall = time.perf_counter() - _t0")
    if backend == "torch":
        body("    if _DEV.type == 'cuda': torch.cuda.synchronize()")
    body("    res = _finish()")
    body("    res['wall_s'] = _wall")
    if arena is not None:
        body("    del A")
    body("    return res")
    lines.append(_MAIN_TAIL)
    return "\n".join(lines) + "\n"
