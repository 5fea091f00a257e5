"""Run reordered (and recomputing) schedules of a torch.fx-imported model.

:func:`emit_fx_program` writes a standalone program that runs any valid schedule of
an imported graph (:mod:`memsched.instances.torch_import`) by calling the ATen ops
directly, with ``del`` for every free; :func:`run_fx_schedule` runs it and returns the
same keys as :func:`memsched.solvers.executors.run_schedule`.

Two measurements, so that the check is not the importer's probe checking itself (the
importer measures each operator's workspace with the profiler's allocation events):

* ``realized_peak`` -- independent of the profiler: an ``LD_PRELOAD`` shim
  (:data:`ALLOC_SHIM_C`, compiled once with the system C compiler) interposes libc's
  ``posix_memalign``/``free`` and keeps the running total and high-water mark of the
  blocks requested from code in ``libc10.so`` (torch's CPU allocator, ``c10::alloc_cpu``),
  and separately of all aligned blocks (``aligned_peak_all``: also oneDNN/MKL internal
  scratch and caches, which the model does not contain);
* ``realized_peak_profiler`` -- the profiler's allocation events (max of the CPU
  allocator's running ``total_allocated``), the importer's method.

Without a C compiler the shim cannot be built: ``realized_peak`` is then the profiler's
figure and ``independent`` is False.
"""
from __future__ import annotations

import hashlib
import math
import operator
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from memsched.formulations import Schedule, evaluate
from memsched.formulations.schedule import COMPUTE
from memsched.instances.torch_import import ImportedModel, TorchImportError, _torch
from memsched.solvers.executors.emit import PROFILER_SRC

__all__ = ["emit_fx_program", "run_fx_schedule", "run_fx_schedules", "alloc_shim", "ALLOC_SHIM_C"]

ALLOC_SHIM_C = r'''/* memsched allocation shim (LD_PRELOAD): counts the bytes of live posix_memalign blocks at
   the libc boundary, those requested from code in libc10.so (torch's CPU allocator) apart
   from all others; independent of torch's profiler. Built by solvers/executors/fx.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void __libc_free(void *);

static int (*real_pm)(void **, size_t, size_t);
static void (*real_free)(void *);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define CAP (1u << 18)
static uintptr_t keys[CAP], tmp_keys[CAP];  /* 0 empty, 1 deleted */
static size_t vals[CAP], tmp_vals[CAP];
static unsigned char c10s[CAP], tmp_c10s[CAP];
static long long used, live, cur, peak, c10cur, c10peak;
static void *c10base;
static int overflow;

static size_t slot(uintptr_t k) { return (size_t)((k >> 6) * 11400714819323198485ull) & (CAP - 1); }

__attribute__((constructor)) static void init(void) {
    real_pm = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

static void put(uintptr_t k, size_t n, unsigned char c) {
    size_t i = slot(k);
    while (keys[i] > 1) i = (i + 1) & (CAP - 1);
    if (keys[i] == 0) used++;
    keys[i] = k; vals[i] = n; c10s[i] = c; live++;
}

static void rehash(void) {  /* drop deleted slots */
    size_t m = 0;
    for (size_t i = 0; i < CAP; i++)
        if (keys[i] > 1) { tmp_keys[m] = keys[i]; tmp_vals[m] = vals[i]; tmp_c10s[m] = c10s[i]; m++; }
    memset(keys, 0, sizeof keys);
    used = live = 0;
    for (size_t i = 0; i < m; i++) put(tmp_keys[i], tmp_vals[i], tmp_c10s[i]);
}

int posix_memalign(void **p, size_t al, size_t n) {
    if (!real_pm) init();
    void *ra = __builtin_return_address(0);
    int r = real_pm(p, al, n);
    if (r != 0 || !*p || al < 64) return r;
    unsigned char c = 0;
    Dl_info info;
    if (dladdr(ra, &info) && info.dli_fbase) {
        if (info.dli_fbase == c10base) c = 1;
        else if (!c10base && info.dli_fname && strstr(info.dli_fname, "/libc10.so")) { c10base = info.dli_fbase; c = 1; }
    }
    pthread_mutex_lock(&mu);
    if (2 * (used + 1) > CAP) rehash();
    if (2 * (live + 1) <= CAP) {  /* beyond CAP/2 live blocks: flagged, the figure is void */
        put((uintptr_t)*p, n, c);
        cur += (long long)n;
        if (cur > peak) peak = cur;
        if (c) { c10cur += (long long)n; if (c10cur > c10peak) c10peak = c10cur; }
    } else {
        overflow = 1;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

void free(void *p) {
    if (p && live && !((uintptr_t)p & 63)) {
        uintptr_t k = (uintptr_t)p;
        pthread_mutex_lock(&mu);
        for (size_t i = slot(k); keys[i] != 0; i = (i + 1) & (CAP - 1))
            if (keys[i] == k) {
                keys[i] = 1; live--;
                cur -= (long long)vals[i];
                if (c10s[i]) c10cur -= (long long)vals[i];
                break;
            }
        pthread_mutex_unlock(&mu);
    }
    if (real_free) real_free(p); else __libc_free(p);
}

int memsched_shim_overflow(void) { return overflow; }
long long memsched_shim_c10_current(void) { return c10cur; }
long long memsched_shim_c10_peak(void) { return c10peak; }
long long memsched_shim_all_current(void) { return cur; }
long long memsched_shim_all_peak(void) { return peak; }
void memsched_shim_reset_peak(void) {
    pthread_mutex_lock(&mu); peak = cur; c10peak = c10cur; pthread_mutex_unlock(&mu);
}
'''


def alloc_shim() -> str | None:
    """Path of the compiled allocation shim (built once per source version into
    ``$MEMSCHED_CACHE`` or ``~/.cache/memsched``), or None when no C compiler works."""
    tag = hashlib.sha256(ALLOC_SHIM_C.encode()).hexdigest()[:16]
    root = Path(os.environ.get("MEMSCHED_CACHE") or Path.home() / ".cache" / "memsched")
    so = root / f"alloc_shim_{tag}.so"
    if so.exists():
        return str(so)
    cc = next((c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c and shutil.which(c)), None)
    if cc is None:
        return None
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="memsched-shim-") as d:
            src = Path(d) / "shim.c"
            src.write_text(ALLOC_SHIM_C)
            out = Path(d) / "shim.so"
            cp = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(src), "-ldl", "-lpthread"],
                                capture_output=True, text=True, timeout=120)
            if cp.returncode != 0:
                return None
            os.replace(out, so)  # atomic: concurrent builders each install a complete file
    except (OSError, subprocess.SubprocessError):
        return None
    return str(so)


# ---------------------------------------------------------------- program emission
def _lit(x) -> str:
    torch = _torch()
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return repr(x)
    if isinstance(x, float):
        if math.isinf(x):
            return "float('inf')" if x > 0 else "float('-inf')"
        if math.isnan(x):
            return "float('nan')"
        return repr(x)
    if isinstance(x, torch.dtype):
        return str(x)
    if isinstance(x, torch.device):
        return f"torch.device({str(x)!r})"
    if isinstance(x, (torch.memory_format, torch.layout)):
        return str(x)
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_lit(y) for y in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
    raise TorchImportError(f"cannot write literal {x!r} of type {type(x).__name__} into the program")


def _target_expr(target) -> str:
    if target is operator.getitem:
        return "operator.getitem"
    s = str(target)  # e.g. aten.convolution.default
    if not s.startswith(("aten.", "prims.")):
        raise TorchImportError(f"cannot emit a call to {target!r}")
    return "torch.ops." + s


_FX_PRELUDE = r'''
import hashlib, json, operator, time
import torch
''' + PROFILER_SRC + r'''

torch.set_num_threads(THREADS)
_GEN = torch.Generator().manual_seed(0)


def _gen(shape, dtype, seed):
    """A deterministic input: normal(0, 0.1) floats, zeros otherwise (one allocation)."""
    dt = getattr(torch, dtype)
    if dt.is_floating_point:
        _GEN.manual_seed(seed)
        t = torch.empty(shape, dtype=dt)
        t.normal_(0.0, 0.1, generator=_GEN)
        return t
    return torch.zeros(shape, dtype=dt)


import ctypes

_LIBC = ctypes.CDLL(None)
_SHIM = hasattr(_LIBC, "memsched_shim_c10_peak")  # the LD_PRELOADed allocation shim
if _SHIM:
    for _f in ("c10_current", "c10_peak", "all_current", "all_peak"):
        getattr(_LIBC, "memsched_shim_" + _f).restype = ctypes.c_longlong
_BASE = [0, 0]


def _start():
    if _SHIM:
        _LIBC.memsched_shim_reset_peak()
        _BASE[:] = [_LIBC.memsched_shim_c10_current(), _LIBC.memsched_shim_all_current()]
    _profiler_start()


def _finish():
    if _SHIM:
        c10 = _LIBC.memsched_shim_c10_peak() - _BASE[0]
        every = _LIBC.memsched_shim_all_peak() - _BASE[1]
    peak, events = _profiler_peak()
    res = {"realized_peak_profiler": peak, "allocation_events": events}
    if _SHIM:
        res.update(realized_peak=int(c10), aligned_peak_all=int(every), independent=True,
                   shim_overflow=bool(_LIBC.memsched_shim_overflow()),
                   measure="libc posix_memalign/free shim: high-water mark of blocks requested by libc10 "
                           "(torch's CPU allocator); profiler allocation events beside it")
    else:
        res.update(realized_peak=peak, independent=False,
                   measure="torch.profiler allocation events, max total_allocated (the importer's method: "
                           "no C compiler for the independent shim)")
    return res


def _hash(t):
    import numpy as np
    a = np.ascontiguousarray(t.detach().cpu().reshape(-1).view(torch.uint8).numpy() if t.numel() else np.zeros(0, np.uint8))
    return hashlib.sha256(memoryview(a)).hexdigest()
'''


def emit_fx_program(imp: ImportedModel, schedule: Schedule, *, threads: int = 1) -> str:
    """Standalone program running ``schedule`` (of ``imp.graph``) by calling the ATen ops of
    the FX graph; prints ``MEMSCHED-RESULT {json}`` with realized_peak and output hashes."""
    g = imp.graph
    evaluate(g, schedule)
    nodes = {n.name: n for n in imp.gm.graph.nodes}
    tvar = {t.name: f"T{j}" for j, t in enumerate(g.tensors)}

    def expr(a) -> str:
        """Expression for an FX argument in terms of resident tensors (views inlined)."""
        if not hasattr(a, "op"):
            if isinstance(a, (list, tuple)):
                inner = ", ".join(expr(y) for y in a)
                return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
            if isinstance(a, dict):
                return "{" + ", ".join(f"{k!r}: {expr(v)}" for k, v in a.items()) + "}"
            return _lit(a)
        if a.op == "placeholder":
            return tvar[imp.placeholder_tensor[a.name]]
        if a.target is operator.getitem and a.args[0].name in imp.node_tensors:
            t = imp.node_tensors[a.args[0].name][a.args[1]]
            return tvar[t] if t is not None else "None"
        if a.target is operator.getitem:
            return f"{expr(a.args[0])}[{a.args[1]}]"
        if a.name in imp.view_nodes:
            return call(a)
        if a.name in imp.node_tensors:
            t = imp.node_tensors[a.name][0]
            return tvar[t]
        raise TorchImportError(f"FX node {a.name!r}: cannot express")

    def call(n) -> str:
        args = ", ".join(expr(x) for x in n.args)
        kw = "".join(f", {k}={expr(v)}" for k, v in n.kwargs.items())
        if not n.args:
            kw = kw[2:]
        return f"{_target_expr(n.target)}({args}{kw})"

    lines = [
        "#!/usr/bin/env python3",
        f'"""memsched emitted FX program: model {g.name!r}, {g.n_ops} operators, {len(schedule.events)} events.',
        'Runs the schedule by calling ATen ops; prints MEMSCHED-RESULT {json}."""',
        _FX_PRELUDE.replace("THREADS", str(int(threads))),
        "def main():",
        "    _start()",
        "    _t0 = time.perf_counter()",
    ]
    body = lines.append
    for k, j in enumerate(g.input_idx):
        t = g.tensors[j]
        shape, dtype, kind, label = imp.input_specs[t.name]
        body(f"    {tvar[t.name]} = _gen({tuple(shape)!r}, {dtype!r}, {k})  # {kind} {label}")
    for k, (kind, x) in enumerate(schedule.events):
        if kind == COMPUTE:
            op = g.ops[x]
            n = nodes[imp.op_node[op.name]]
            per = imp.node_tensors[n.name]
            if n.name not in imp.multi_nodes and per[0] is not None:
                body(f"    {tvar[per[0]]} = {call(n)}")
            else:
                body(f"    _r = {call(n)}")
                seen = set()
                for pos, t in enumerate(per):
                    if t is not None and t not in seen:
                        seen.add(t)
                        body(f"    {tvar[t]} = _r[{pos}]")
                for t in op.outputs:
                    if t not in seen:  # an operator without tensor result
                        body(f"    {tvar[t]} = None")
                body("    del _r")
        else:
            body(f"    del {tvar[g.tensors[x].name]}")
    body("    _wall = time.perf_counter() - _t0")
    body("    res = _finish()")
    body("    res['wall_s'] = _wall")
    out_node = next(n for n in imp.gm.graph.nodes if n.op == "output")
    body("    hashes = {}")
    for k, a in enumerate(_flat_nodes(out_node.args[0])):
        body(f"    hashes['out{k}'] = _hash({expr(a)})")
    body("    res['output_hashes'] = hashes")
    body("    res['output_hash'] = hashlib.sha256(''.join('%s:%s\\n' % kv for kv in sorted(hashes.items())).encode()).hexdigest()")
    body("    res['recompute_mismatch'] = []")
    body("    return res")
    lines += ["", "", "def run():", "    return main()", "", "",
              'if __name__ == "__main__":', '    print("MEMSCHED-RESULT " + json.dumps(run()))']
    return "\n".join(lines) + "\n"


def _flat_nodes(a) -> list:
    if isinstance(a, (list, tuple)):
        out = []
        for y in a:
            out += _flat_nodes(y)
        return out
    return [a] if hasattr(a, "op") else []


def run_fx_schedules(imp: ImportedModel, schedules: list[Schedule], *, timeout: float = 600.0) -> list[dict]:
    """Emit and run several schedules of an imported model in one subprocess; per schedule
    return modeled_peak, realized_peak, output_hash, backend "torch-fx", device "cpu", wall_s."""
    from .runner import run_programs

    srcs = [emit_fx_program(imp, s) for s in schedules]
    shim = alloc_shim()
    env = None
    if shim is not None:
        pre = os.environ.get("LD_PRELOAD")
        env = {"LD_PRELOAD": shim + (" " + pre if pre else "")}
    res = run_programs(srcs, timeout=timeout, env=env)
    out = []
    for s, r in zip(schedules, res):
        ev = evaluate(imp.graph, s)
        out.append({"graph": imp.graph.name, "modeled_peak": ev.peak, "realized_peak": r["realized_peak"],
                    "output_hash": r["output_hash"], "backend": "torch-fx", "device": "cpu", "wall_s": r["wall_s"],
                    "difference": r["realized_peak"] - ev.peak, "recomputations": ev.recomputations,
                    "output_hashes": r["output_hashes"], "measure": r["measure"],
                    "realized_peak_profiler": r["realized_peak_profiler"], "independent": r["independent"],
                    "aligned_peak_all": r.get("aligned_peak_all"), "shim_overflow": r.get("shim_overflow", False)})
    return out


def run_fx_schedule(imp: ImportedModel, schedule: Schedule, *, timeout: float = 600.0) -> dict:
    return run_fx_schedules(imp, [schedule], timeout=timeout)[0]
