"""The worker: executes runs one at a time, in its own process.

``python -m solvers.harness.worker`` reads length-prefixed pickled messages on stdin
and answers on (the original) stdout; the solver's own prints go to stderr. A
message is ``{"task": {...}, "text": canonical graph JSON or None}``; graphs are
cached by hash, so the driver sends each graph once per worker. A task of kind
``dtr_replay`` is one replay of a DTR trace sweep; its "text" is the parsed trace
(:func:`solvers.dtr.sweep.execute_replay_task`). The worker dies
with its driver (Linux: PR_SET_PDEATHSIG), and the executors kill it (its whole
process group) when a run exceeds its hard limit.

:func:`execute` is the one place a run happens, used by every executor.
"""
from __future__ import annotations

import os
import pickle
import sys
import time
import traceback

from memsched.solvers.pool.wire import recv_msg, send_msg

__all__ = ["execute", "send_msg", "recv_msg", "memsched_version", "main"]

_VERSION = None


def memsched_version() -> str:
    global _VERSION
    if _VERSION is None:
        try:
            from importlib.metadata import version

            _VERSION = version("memsched")
        except Exception:  # not installed: running from a source tree
            _VERSION = "unknown"
    return _VERSION








# ------------------------------------------------------------------ memory cap
def memory_message(limit) -> str:
    if limit:
        return (f"out of memory: the run exceeded its memory cap of {int(limit)} bytes "
                f"({int(limit) / 2 ** 30:.2f} GiB of worker address space, RLIMIT_AS)")
    return "out of memory (MemoryError)"


class memory_cap:
    """Lower the soft RLIMIT_AS (address space) of this worker to ``limit`` bytes for
    the duration of one run, then restore it: an allocation beyond it raises
    MemoryError in Python (status ``memory``) or kills the worker from native code
    (classified as ``memory`` from its stderr by the executors). The cap counts the
    whole worker process: interpreter and imported modules included."""

    def __init__(self, limit):
        self.limit = int(limit) if limit else None
        self.old = None

    def __enter__(self):
        if self.limit:
            import resource

            self.old = resource.getrlimit(resource.RLIMIT_AS)
            hard = self.old[1]
            soft = self.limit if hard == resource.RLIM_INFINITY else min(self.limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, self.old)
        return False


# ------------------------------------------------------------------ runs
class GraphCache:
    """Graphs by instance hash, with their given-order peak and baseline compute."""

    def __init__(self, limit: int = 32):
        self.limit = limit
        self.items: dict[str, tuple] = {}

    def __contains__(self, h):
        return h in self.items

    def add(self, h: str, text: str):
        import json

        from memsched.formulations import Schedule, evaluate
        from memsched.instances.formats import graph_from_json

        g = graph_from_json(json.loads(text), "<sweep instance>")
        given_peak = evaluate(g, Schedule.from_order(g, g.given_order())).peak
        if len(self.items) >= self.limit:
            self.items.pop(next(iter(self.items)))
        self.items[h] = (g, given_peak, g.total_cost())

    def get(self, h: str):
        return self.items[h]


def execute(task: dict, graph, given_peak: int, baseline: float) -> dict:
    """Run ``task`` on ``graph``; return the outcome fields of its result row.
    Never raises for a solver failure: it becomes ``status: error``."""
    from .registry import SolverUnavailable, call_solver, resolve

    out = {"memsched_version": memsched_version(), "given_peak": given_peak, "baseline_compute": baseline,
           "worker": f"pid{os.getpid()}"}
    # importing the solver's module is the harness's cost (paid once per worker), not the solver's
    t0 = time.perf_counter()
    res, fn = None, None
    try:
        fn = resolve(task["solver"])
    except SolverUnavailable as e:
        err = str(e)
    except Exception as e:  # the solver's module is broken (SyntaxError, ...)
        err = f"solver {task['solver']!r} cannot be loaded: {type(e).__name__}: {e}"
    out["import_s"] = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        if fn is not None:
            with memory_cap(task.get("memory_limit")):
                res = call_solver(task["solver"], graph, task["params"], budget=task["budget"],
                                  time_limit=task["time_limit"], seed=task["seed"], fn=fn)
    except MemoryError:  # the run hit the per-run memory cap (or the machine's memory)
        res = None
        out["wall_s"] = time.perf_counter() - t0
        out["cpu_s"] = time.process_time() - c0
        out.update(status="memory", message=memory_message(task.get("memory_limit")))
        return out
    except Exception as e:  # a solver bug or bad parameter: recorded, the sweep goes on
        tb = traceback.extract_tb(e.__traceback__)
        where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
        res, err = None, f"{type(e).__name__}: {e}{where}"
    out["wall_s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0
    if res is None:
        out.update(status="error", message=err)
        return out
    out.update(status=res.status, objective_kind=res.objective, objective=res.value, bound=res.lower_bound,
               gap=res.gap, peak=res.peak, compute=res.compute, solver_wall_s=round(res.wall_s, 6))
    if res.message:
        out["message"] = res.message
    for k in ("budget_bytes", "certified", "outcome"):
        if k in res.extra:
            out[k] = res.extra[k]
    for d in (res.params, res.extra):
        b = d.get("budget")
        if isinstance(b, (int, float)) and not isinstance(b, bool) and "budget_bytes" not in out:
            out["budget_bytes"] = b
    if task.get("keep_schedule") and res.schedule is not None:
        out["schedule"] = res.schedule.to_names(graph)
    return out


def handle(msg: dict, cache: GraphCache) -> dict:
    task = msg["task"]
    if task.get("kind") == "dtr_replay":  # one replay of a DTR trace sweep (solvers.dtr.sweep)
        from memsched.solvers.dtr.sweep import execute_replay_task

        return execute_replay_task(task, msg.get("text"))
    h = task["instance_hash"]
    if msg.get("text") is not None and h not in cache:
        cache.add(h, msg["text"])
    if h not in cache:
        return {"status": "error", "message": "worker has no copy of the instance (driver bug)", "wall_s": 0.0}
    g, gp, base = cache.get(h)
    return execute(task, g, gp, base)


def _pdeathsig():
    """Ask Linux to SIGKILL this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def main() -> int:
    parent = os.getppid()
    _pdeathsig()
    if os.getppid() != parent:  # the driver died before prctl took effect
        return 1
    fin = os.fdopen(os.dup(0), "rb")
    fout = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the solvers' prints go to stderr, never into the protocol
    cache = GraphCache()
    send_msg(fout, {"hello": os.getpid(), "version": memsched_version()})
    while True:
        msg = recv_msg(fin)
        if msg is None:
            return 0
        try:
            out = handle(msg, cache)
        except Exception as e:  # a bad instance text etc.: reported, never silent
            out = {"status": "error", "message": f"{type(e).__name__}: {e}", "wall_s": 0.0}
        try:
            try:
                send_msg(fout, out)
            except (pickle.PicklingError, TypeError, AttributeError) as e:  # an exotic value in the result
                send_msg(fout, {"status": "error", "wall_s": out.get("wall_s", 0.0),
                                "message": f"result cannot be sent back: {type(e).__name__}: {e}"})
        except BrokenPipeError:
            return 0


if __name__ == "__main__":
    sys.exit(main())
