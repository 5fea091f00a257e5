"""Run an emitted program in a subprocess and collect its measurements."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from memsched.formulations import Graph, MemschedError, Operator, Schedule, Tensor, evaluate

from .arena import plan_arena
from .emit import BACKENDS, DEVICES, emit_program

__all__ = ["ExecError", "ExecutionFailed", "run_schedule", "run_program", "run_programs", "run_schedules", "run_batch", "scaled_graph", "check_backend",
           "DEFAULT_MAX_BYTES", "mismatch"]

DEFAULT_MAX_BYTES = 1 << 30  # refuse to run schedules whose modeled peak exceeds 1 GiB unless told otherwise


class ExecError(MemschedError):
    """A schedule cannot be run as asked (backend missing, device missing, too large)."""


class ExecutionFailed(RuntimeError):
    """The emitted program crashed or printed no result: a bug, with the program's stderr."""


def check_backend(backend: str, device: str) -> None:
    if backend not in BACKENDS:
        raise ExecError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if device not in DEVICES:
        raise ExecError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
    if backend == "numpy" and device != "cpu":
        raise ExecError("--device cuda needs --backend torch (the numpy backend runs on the CPU)")
    if backend == "torch":
        try:
            import torch
        except ImportError:
            raise ExecError("--backend torch needs PyTorch: pip install 'memsched[torch]' (torch==2.13.0)") from None
        if device == "cuda" and not torch.cuda.is_available():
            raise ExecError("--device cuda: torch.cuda is not available on this machine")


def scaled_graph(graph: Graph, scale: int) -> Graph:
    """The same graph with every tensor size and workspace divided by ``scale``, rounded up
    (a nonzero size stays nonzero). Schedules (index based) carry over unchanged."""
    if scale == 1:
        return graph
    sc = lambda n: -(-n // scale)  # noqa: E731
    tensors = [Tensor(t.name, sc(t.size)) for t in graph.tensors]
    ops = [Operator(o.name, o.inputs, o.outputs, o.cost, sc(o.workspace)) for o in graph.ops]
    return Graph(ops, tensors, pinned=graph.pinned, outputs=graph.outputs, order=graph.order,
                 name=f"{graph.name}/scale{scale}", meta=dict(graph.meta, scale=scale))


def _env(extra: dict | None) -> dict:
    return dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), **(extra or {}))


def _run_python(d: str, script: Path, args: list[str], *, marker: str, what: str, timeout: float,
                env: dict | None):
    """Run ``script`` with this Python in directory ``d`` and return the JSON after the last
    line of its stdout that starts with ``marker``; ExecutionFailed (naming ``what``, with
    the tail of stderr) when it runs past ``timeout`` or prints no such line."""
    try:
        cp = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout,
                            cwd=d, env=_env(env))
    except subprocess.TimeoutExpired:
        raise ExecutionFailed(f"{what} ran past {timeout} s") from None
    for line in reversed(cp.stdout.splitlines()):
        if line.startswith(marker + " "):
            return json.loads(line[len(marker) + 1:])
    tail = "\n".join((cp.stderr or "").strip().splitlines()[-15:])
    raise ExecutionFailed(f"{what} exited with status {cp.returncode} and no result:\n{tail}")


def run_program(source: str, *, timeout: float = 600.0, env: dict | None = None) -> dict:
    """Write ``source`` to a file, run it with this Python (``env``: extra environment
    variables), return its MEMSCHED-RESULT JSON."""
    with tempfile.TemporaryDirectory(prefix="memsched-run-") as d:
        path = Path(d) / "prog.py"
        path.write_text(source)
        return _run_python(d, path, [], marker="MEMSCHED-RESULT", what="emitted program", timeout=timeout, env=env)


def _suggest_scale(graph: Graph, schedule: Schedule, max_bytes: int) -> int | None:
    """A scale whose scaled peak is at most ``max_bytes``, or None when no scale gets there
    (sizes round up, so from the largest size on every nonzero size is 1 byte and scaling
    further changes nothing). The scaled peak never grows with the scale."""
    top = max([t.size for t in graph.tensors] + [o.workspace for o in graph.ops] + [1])
    if evaluate(scaled_graph(graph, top), schedule).peak > max_bytes:
        return None
    s = min(top, max(1, math.ceil(evaluate(graph, schedule).peak / max_bytes)))
    while evaluate(scaled_graph(graph, s), schedule).peak > max_bytes:
        s = min(top, 2 * s)
    return s


_BATCH_DRIVER = r"""
import json, runpy, sys
out = []
for path in sys.argv[1:]:
    ns = runpy.run_path(path, run_name="memsched_prog")
    out.append(ns["run"]())
    ns.clear()  # breaks the functions <-> globals cycle: the program's objects go now
    del ns
print("MEMSCHED-RESULTS " + json.dumps(out))
"""


def run_programs(sources: list[str], *, timeout: float = 600.0, isolate: bool = False, jobs: int = 1,
                 env: dict | None = None) -> list[dict]:
    """Run several emitted programs one after another in ONE subprocess (one interpreter
    start, one torch import); each program measures only itself. With ``isolate`` every
    program runs in its own fresh process (required on CUDA, where the caching allocator
    keeps freed blocks of one program for the next), ``jobs`` of them at a time."""
    if not sources:
        return []
    if isolate:
        if jobs <= 1 or len(sources) == 1:
            return [run_program(src, timeout=timeout, env=env) for src in sources]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lambda src: run_program(src, timeout=timeout, env=env), sources))
    with tempfile.TemporaryDirectory(prefix="memsched-run-") as d:
        paths = []
        for k, src in enumerate(sources):
            p = Path(d) / f"prog{k}.py"
            p.write_text(src)
            paths.append(str(p))
        drv = Path(d) / "driver.py"
        drv.write_text(_BATCH_DRIVER)
        return _run_python(d, drv, paths, marker="MEMSCHED-RESULTS", what="emitted programs", timeout=timeout,
                           env=env)


def _prepare(graph: Graph, schedule: Schedule, backend: str, device: str, arena: bool, scale: int,
             max_bytes: int | None, arena_method: str, arena_time_limit: float):
    check_backend(backend, device)
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ExecError(f"--scale must be a positive integer, got {scale!r}")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1):
        raise ExecError(f"--max-bytes must be a positive number of bytes, got {max_bytes!r}")
    unscaled = evaluate(graph, schedule)
    g = scaled_graph(graph, scale)
    ev = evaluate(g, schedule)
    if max_bytes is not None and ev.peak > max_bytes:
        k = _suggest_scale(g, schedule, max_bytes)
        fix = (f"rerun with --scale {k * scale} (divides every size, rounding up) or raise --max-bytes"
               if k is not None else "no --scale gets under it (every size is 1 byte at most); raise --max-bytes")
        raise ExecError(f"graph {graph.name!r}: modeled peak {ev.peak} bytes exceeds the run limit of {max_bytes} "
                        f"bytes; {fix}")
    plan = plan_arena(g, schedule, method=arena_method, time_limit=arena_time_limit) if arena else None
    src = emit_program(g, schedule, backend=backend, device=device, arena=plan)
    meta = {"graph": graph.name, "modeled_peak": ev.peak, "backend": backend, "device": device,
            "arena": bool(arena), "scale": scale, "modeled_peak_unscaled": unscaled.peak,
            "events": len(schedule.events), "recomputations": ev.recomputations}
    if plan is not None:
        meta.update(arena_size=plan.size, arena_method=plan.method, arena_status=plan.status,
                    arena_plan_s=plan.wall_s)
    return src, meta


def _combine(meta: dict, res: dict) -> dict:
    out = {k: meta[k] for k in ("graph", "modeled_peak")}
    out.update(realized_peak=res["realized_peak"], output_hash=res["output_hash"], backend=meta["backend"],
               device=meta["device"], wall_s=res["wall_s"])
    out.update({k: v for k, v in meta.items() if k not in out})
    out.update(output_hashes=res["output_hashes"], recompute_mismatch=res["recompute_mismatch"],
               measure=res.get("measure"))
    for k in ("realized_peak_without_temporaries", "kernel_temporary_max", "kernel_transient_max",
              "allocated_peak", "reserved_peak", "allocation_events", "arena_offsets_ok"):
        if k in res:
            out[k] = res[k]
    out["difference"] = out["realized_peak"] - out["modeled_peak"]
    return out


def mismatch(res: dict) -> str | None:
    """None when a run realized its modeled peak (its planned arena size with ``arena``) exactly (numpy, torch CPU or CUDA: every
    path measures requested bytes) with consistent recomputations; otherwise one line saying
    what differs. A kernel temporary the model does not know about is named as such."""
    where = f"graph {res.get('graph')!r} on {res.get('backend')}:{res.get('device')}"
    problems = []
    # an arena program allocates exactly its planned block (>= the schedule's peak)
    expected, what = ((res["arena_size"], "the planned arena") if res.get("arena") and "arena_size" in res
                      else (res["modeled_peak"], "modeled"))
    if res["realized_peak"] != expected:
        line = f"realized peak {res['realized_peak']} bytes != {what} {expected}"
        wo = res.get("realized_peak_without_temporaries")
        if wo is not None and wo != res["realized_peak"]:
            line += (f"; kernel temporaries the model does not know about (up to {res.get('kernel_temporary_max')} "
                     f"bytes in one kernel) raised it from {wo}")
        problems.append(line)
    if res.get("arena_offsets_ok") is False:
        problems.append("arena tensors are not at their planned offsets")
    if res.get("recompute_mismatch"):
        problems.append("a recomputation produced different bytes: " + ", ".join(res["recompute_mismatch"]))
    return f"{where}: " + "; ".join(problems) if problems else None


def run_schedule(graph: Graph, schedule: Schedule, backend: str = "numpy", device: str = "cpu",
                 arena: bool = False, *, scale: int = 1, max_bytes: int | None = DEFAULT_MAX_BYTES,
                 arena_method: str = "auto", arena_time_limit: float = 10.0, timeout: float = 600.0,
                 keep_program: str | None = None) -> dict:
    """Emit ``schedule`` for ``backend``/``device``, run it in a subprocess and return
    ``{modeled_peak, realized_peak, output_hash, backend, device, wall_s, ...}``.

    ``modeled_peak`` is the evaluator's peak (of the scaled graph when ``scale`` > 1; the
    unscaled figure is in ``modeled_peak_unscaled``); ``difference`` = realized - modeled.
    With ``arena`` the program uses one static arena planned by :func:`plan_arena`
    (``arena_size``, ``arena_status`` in the result). Schedules whose modeled peak
    exceeds ``max_bytes`` are refused with an :class:`ExecError` that suggests a
    ``scale``. ``keep_program`` writes the emitted program to that path too."""
    src, meta = _prepare(graph, schedule, backend, device, arena, scale, max_bytes, arena_method,
                         arena_time_limit)
    if keep_program:
        Path(keep_program).write_text(src)
    res = run_program(src, timeout=timeout)
    return _combine(meta, res)


def run_schedules(graph: Graph, schedules: list[Schedule], backend: str = "numpy", device: str = "cpu",
                  arena: bool = False, *, scale: int = 1, max_bytes: int | None = DEFAULT_MAX_BYTES,
                  arena_method: str = "auto", arena_time_limit: float = 10.0, timeout: float = 600.0) -> list[dict]:
    """:func:`run_schedule` for several schedules of one graph in a single subprocess."""
    return run_batch([(graph, s) for s in schedules], backend, device, arena, scale=scale, max_bytes=max_bytes,
                     arena_method=arena_method, arena_time_limit=arena_time_limit, timeout=timeout)


def run_batch(jobs: list[tuple[Graph, Schedule]], backend: str = "numpy", device: str = "cpu",
              arena: bool = False, *, scale: int = 1, max_bytes: int | None = DEFAULT_MAX_BYTES,
              arena_method: str = "auto", arena_time_limit: float = 10.0, timeout: float = 600.0,
              parallel: int = 1) -> list[dict]:
    """:func:`run_schedule` for many ``(graph, schedule)`` or ``(graph, schedule, scale)`` jobs
    in a single subprocess (one interpreter start and one torch import for all). On CUDA every
    program runs in a fresh process instead (``parallel`` processes at a time): cached blocks
    must not carry over from one program to the next."""
    prepared = [_prepare(job[0], job[1], backend, device, arena, job[2] if len(job) > 2 else scale, max_bytes,
                         arena_method, arena_time_limit) for job in jobs]
    results = run_programs([src for src, _ in prepared], timeout=timeout, isolate=(device == "cuda"),
                           jobs=parallel)
    return [_combine(meta, res) for (_, meta), res in zip(prepared, results)]
