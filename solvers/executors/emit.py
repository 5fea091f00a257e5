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

* numpy: a counting allocation handler installed through numpy's NEP 49 hook
  (``PyDataMem_SetHandler``, reached with ctypes) sees every data allocation and free,
  so ``realized_peak`` is the exact running maximum of numpy data bytes *including any
  temporary a kernel makes*; ``kernel_temporary_max`` is the largest growth of those
  bytes inside one kernel. Beside it, ``realized_peak_without_temporaries``:
  tracemalloc filtered to numpy's domain (``np.lib.tracemalloc_domain``) sampled after
  every allocation step (blind to temporaries, as this measure used to be), and
  ``kernel_transient_max``, the growth of tracemalloc's global high-water mark in a kernel.
* torch CPU: the profiler's allocation events (``profile_memory=True``); the realized
  peak is the maximum of the allocator's running ``total_allocated`` counter (every
  allocation is an event, temporaries included).
* torch CUDA: ``torch.cuda.memory_stats()["requested_bytes.all.peak"]`` above the value
  before the first event: the bytes the program requested, exact (the caching
  allocator's rounding is not in it); ``allocated_peak`` and ``reserved_peak`` (the
  allocator's blocks and segments) are reported beside it. Each CUDA program runs in
  a fresh process (:func:`runner.run_programs` with ``isolate``).

With ``arena`` (an :class:`ArenaPlan`) the program allocates one buffer of the plan's
size and every tensor and workspace is a view at its planned offset (on CUDA too: one
``uint8`` block); the program checks each view's address against the plan
(``arena_offsets_ok``).

Hashes: the sha256 of every hashed tensor (required outputs, or every sink when none
is required) taken right after its first computation (inputs are never written once
computed); a recomputation is hashed again and must agree; ``output_hash`` is the
sha256 over the sorted ``name:hash`` lines.
"""
from __future__ import annotations

import zlib

from memsched.formulations import Graph, Schedule
from memsched.formulations.schedule import COMPUTE

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
_OFFSETS_OK = [True]

def _at(A, t, o):
    """An arena tensor must be a view at its planned offset of the one arena block."""
    if t.shape[0] and _ptr(t) - _ptr(A) != o:
        _OFFSETS_OK[0] = False

def _sha(name, raw):
    h = hashlib.sha256(raw).hexdigest()
    old = _HASHES.setdefault(name, h)
    if old != h:
        _MISMATCH.append(name)
'''

_NUMPY = r'''
import ctypes, tracemalloc
import numpy as np

_DOMAIN = np.lib.tracemalloc_domain
_FILTER = [tracemalloc.DomainFilter(True, _DOMAIN)]
_EMPTY = np.empty(0, np.uint8)  # zero-size tensors are views of this (numpy allocates 1 byte for size 0)
_PEAK = [0]        # tracemalloc numpy-domain total, sampled after every allocation step
_TRANSIENT = [0]   # largest growth of tracemalloc's global high-water mark during one kernel
_TEMP = [0]        # largest growth of numpy-domain bytes (allocation handler) during one kernel
_PATTERNS = {}

# --- the numpy-domain running maximum, from numpy's own allocation-handler hook (NEP 49).
# A PyDataMem_Handler whose malloc/calloc/realloc/free call libc and keep a running byte
# count; installed with PyDataMem_SetHandler (numpy C-API slot 304) through ctypes. Every
# array data allocation of the program goes through it, including any temporary a kernel
# makes, so _H[1] is the exact high-water mark of numpy data bytes.
_H = [0, 0, 0]     # current, running max since _start, running max since the last kernel began
_LIVE = {}         # pointer -> bytes
# the handler's C objects must outlive every array it allocated, also when several programs
# run in one process (runner.run_programs): they are kept on the sys module
_KEEP = sys.__dict__.setdefault("_memsched_numpy_handlers", [])
_RESTORE = []

def _install_handler():
    c = ctypes
    libc = c.CDLL(None)
    libc.malloc.restype = c.c_void_p
    libc.malloc.argtypes = [c.c_size_t]
    libc.calloc.restype = c.c_void_p
    libc.calloc.argtypes = [c.c_size_t, c.c_size_t]
    libc.realloc.restype = c.c_void_p
    libc.realloc.argtypes = [c.c_void_p, c.c_size_t]
    libc.free.restype = None
    libc.free.argtypes = [c.c_void_p]

    def grow(n):
        cur = _H[0] + n
        _H[0] = cur
        if cur > _H[1]:
            _H[1] = cur
        if cur > _H[2]:
            _H[2] = cur

    def h_malloc(ctx, n):
        p = libc.malloc(n)
        if p:
            _LIVE[p] = n
            grow(n)
        return p

    def h_calloc(ctx, k, n):
        p = libc.calloc(k, n)
        if p:
            _LIVE[p] = k * n
            grow(k * n)
        return p

    def h_realloc(ctx, p, n):
        old = _LIVE.pop(p, 0) if p else 0
        q = libc.realloc(p, n)
        if q:
            _LIVE[q] = n
            _H[0] -= old
            grow(n)
        elif p:
            _LIVE[p] = old
        return q

    def h_free(ctx, p, n):
        if p:
            _H[0] -= _LIVE.pop(p, 0)
            libc.free(p)

    M = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.c_size_t)
    C = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.c_size_t, c.c_size_t)
    R = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.c_void_p, c.c_size_t)
    F = c.CFUNCTYPE(None, c.c_void_p, c.c_void_p, c.c_size_t)

    class Alloc(c.Structure):
        _fields_ = [("ctx", c.c_void_p), ("malloc", M), ("calloc", C), ("realloc", R), ("free", F)]

    class Handler(c.Structure):
        _fields_ = [("name", c.c_char * 127), ("version", c.c_uint8), ("allocator", Alloc)]

    fns = (M(h_malloc), C(h_calloc), R(h_realloc), F(h_free))
    h = Handler(b"memsched_counting_handler", 1, Alloc(None, *fns))
    name = b"mem_handler"
    api = c.pythonapi
    api.PyCapsule_New.restype = c.py_object
    api.PyCapsule_New.argtypes = [c.c_void_p, c.c_char_p, c.c_void_p]
    api.PyCapsule_GetName.restype = c.c_char_p
    api.PyCapsule_GetName.argtypes = [c.py_object]
    api.PyCapsule_GetPointer.restype = c.c_void_p
    api.PyCapsule_GetPointer.argtypes = [c.py_object, c.c_char_p]
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as mu
    table_cap = mu._ARRAY_API
    table = api.PyCapsule_GetPointer(table_cap, api.PyCapsule_GetName(table_cap))
    set_handler = c.PYFUNCTYPE(c.py_object, c.py_object)(c.c_void_p.from_address(table + 304 * c.sizeof(c.c_void_p)).value)
    cap = api.PyCapsule_New(c.addressof(h), name, None)
    old = set_handler(cap)
    _KEEP.append((libc, fns, h, name, cap, old, set_handler))
    _RESTORE.append(lambda: set_handler(old))
    if mu.get_handler_name() != "memsched_counting_handler":
        raise RuntimeError("numpy did not accept the counting allocation handler")

def _start():
    _install_handler()
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

def _ptr(a):
    return a.__array_interface__["data"][0]

def _kernel_guarded(outs, ins, ws, salt):
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    _H[2] = _H[0]
    h_before = _H[0]
    _kernel(outs, ins, ws, salt)
    grow = tracemalloc.get_traced_memory()[1] - before
    if grow > _TRANSIENT[0]:
        _TRANSIENT[0] = grow
    if _H[2] - h_before > _TEMP[0]:
        _TEMP[0] = _H[2] - h_before

def _finish():
    _mark()
    tracemalloc.stop()
    while _RESTORE:
        _RESTORE.pop()()  # numpy's previous handler again (arrays remember their own handler)
    return {"realized_peak": _H[1], "realized_peak_without_temporaries": _PEAK[0],
            "kernel_temporary_max": _TEMP[0], "kernel_transient_max": _TRANSIENT[0],
            "measure": "numpy allocation handler (NEP 49): running max of numpy data bytes, kernel temporaries "
                       "included; without temporaries: tracemalloc numpy domain %d sampled after every "
                       "allocation step" % _DOMAIN}
'''

# The torch CPU allocation probe of emitted programs (emit's torch backend and the FX
# programs): the profiler core that torch.profiler.profile(profile_memory=True) drives,
# without the Python wrapper's post-processing; only allocation events are read back.
PROFILER_SRC = r'''
from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler, _enable_profiler, _prepare_profiler


def _profiler_start():
    cfg = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
    _prepare_profiler(cfg, {ProfilerActivity.CPU})
    _enable_profiler(cfg, {ProfilerActivity.CPU})


def _walk(node, out):
    f = node.extra_fields
    if type(f).__name__ == "_ExtraFields_Allocation":
        out.append((node.start_time_ns, f))
    for c in node.children:
        _walk(c, out)


def _profiler_peak():
    """(peak, allocation events): the allocator's running total, made relative to the
    total before the first event (a program run after another one in the same process
    measures only itself)."""
    result = _disable_profiler()
    allocs = []
    for root in result.experimental_event_tree():
        _walk(root, allocs)
    allocs.sort(key=lambda tf: tf[0])
    base = int(allocs[0][1].total_allocated) - int(allocs[0][1].alloc_size) if allocs else 0
    return max([0] + [int(f.total_allocated) - base for _, f in allocs]), len(allocs)
'''

_TORCH = r'''
import torch
''' + PROFILER_SRC + r'''

_DEV = torch.device(DEVICE)
_EMPTY = torch.empty(0, dtype=torch.uint8, device=_DEV)
_PATTERNS = {}
_PROF = [None, 0]

def _start():
    for salt in INPUT_SALTS:  # patterns are set up before measuring (host bytes, or a 256-byte device copy)
        _PATTERNS[salt] = torch.frombuffer(bytearray(_pattern(salt)), dtype=torch.uint8).to(_DEV)
    if _DEV.type == "cuda":
        # each program runs in a fresh process (runner.run_programs isolates CUDA runs); the
        # baseline is what is allocated before the first event (the 256-byte patterns)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        s = torch.cuda.memory_stats()
        _PROF[1] = [int(s.get(k + ".all.current", 0)) for k in ("requested_bytes", "allocated_bytes", "reserved_bytes")]
    else:
        _profiler_start()

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

def _ptr(a):
    return a.data_ptr()

_kernel_guarded = None

def _finish():
    if _DEV.type == "cuda":
        torch.cuda.synchronize()
        s = torch.cuda.memory_stats()
        if "requested_bytes.all.peak" not in s:
            raise RuntimeError("torch.cuda.memory_stats() has no requested_bytes.all.peak (torch too old)")
        req, alloc, resv = (int(s[k + ".all.peak"]) - b for k, b in
                            zip(("requested_bytes", "allocated_bytes", "reserved_bytes"), _PROF[1]))
        return {"realized_peak": req, "allocated_peak": alloc, "reserved_peak": resv,
                "measure": "torch.cuda.memory_stats: requested_bytes.all.peak (exact requested bytes; "
                           "allocated_bytes/reserved_bytes peaks beside it), relative to before the first event"}
    peak, events = _profiler_peak()
    return {"realized_peak": peak, "allocation_events": events,
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

    def place(v, key, n):
        if offsets is not None and n:
            body(f"    _at(A, {v}, {offsets[key]})")

    for j in graph.input_idx:
        body(f"    {var(j)} = {alloc(('input', j, -1), size[j])}  # input {graph.tensors[j].name!r}")
        place(var(j), ('input', j, -1), size[j])
        body(f"    _write_input({var(j)}, {_salt(graph.tensors[j].name)})")
    body("    _mark()")
    kern = "_kernel_guarded" if (backend == "numpy" and guard) else "_kernel"
    for k, (kind, x) in enumerate(schedule.events):
        if kind == COMPUTE:
            op = graph.ops[x]
            body(f"    # event {k}: compute {op.name!r}")
            for j in graph.op_out[x]:
                body(f"    {var(j)} = {alloc(('output', j, k), size[j])}")
                place(var(j), ('output', j, k), size[j])
            ws = graph.workspace[x]
            if ws:
                body(f"    W = {alloc(('workspace', x, k), ws)}")
                place("W", ('workspace', x, k), ws)
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
        body("    res['arena_offsets_ok'] = _OFFSETS_OK[0]")
        body("    del A")
    body("    return res")
    lines.append(_MAIN_TAIL)
    return "\n".join(lines) + "\n"
