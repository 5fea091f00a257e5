"""Run reordered (and recomputing) schedules of a torch.fx-imported model.

:func:`emit_fx_program` writes a standalone program that runs any valid schedule of
an imported graph (:mod:`memsched.instances.torch_import`) by calling the ATen ops
directly, with ``del`` for every free, and measures the realized peak with the
allocator's profiler events (as :mod:`memsched.solvers.executors.emit` does);
:func:`run_fx_schedule` runs it and returns the same keys as
:func:`memsched.solvers.executors.run_schedule`.
"""
from __future__ import annotations

import math
import operator

from memsched.formulations import Schedule, evaluate
from memsched.formulations.schedule import COMPUTE
from memsched.instances.torch_import import ImportedModel, TorchImportError, _torch

__all__ = ["emit_fx_program", "run_fx_schedule", "run_fx_schedules"]


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
from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler, _enable_profiler, _prepare_profiler

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


def _walk(node, out):
    f = node.extra_fields
    if type(f).__name__ == "_ExtraFields_Allocation":
        out.append((node.start_time_ns, f))
    for c in node.children:
        _walk(c, out)


def _start():
    cfg = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
    _prepare_profiler(cfg, {ProfilerActivity.CPU})
    _enable_profiler(cfg, {ProfilerActivity.CPU})


def _finish():
    result = _disable_profiler()
    allocs = []
    for root in result.experimental_event_tree():
        _walk(root, allocs)
    allocs.sort(key=lambda tf: tf[0])
    base = int(allocs[0][1].total_allocated) - int(allocs[0][1].alloc_size) if allocs else 0
    peak = max([0] + [int(f.total_allocated) - base for _, f in allocs])
    return {"realized_peak": peak, "allocation_events": len(allocs),
            "measure": "torch.profiler allocation events, max total_allocated"}


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
    from torch.fx.node import map_arg

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
    res = run_programs(srcs, timeout=timeout)
    out = []
    for s, r in zip(schedules, res):
        ev = evaluate(imp.graph, s)
        out.append({"graph": imp.graph.name, "modeled_peak": ev.peak, "realized_peak": r["realized_peak"],
                    "output_hash": r["output_hash"], "backend": "torch-fx", "device": "cpu", "wall_s": r["wall_s"],
                    "difference": r["realized_peak"] - ev.peak, "recomputations": ev.recomputations,
                    "output_hashes": r["output_hashes"], "measure": r["measure"]})
    return out


def run_fx_schedule(imp: ImportedModel, schedule: Schedule, *, timeout: float = 600.0) -> dict:
    return run_fx_schedules(imp, [schedule], timeout=timeout)[0]
