"""Executors: where runs happen, with a hard wall-time limit per run.

Both executors drive the same worker process (:mod:`memsched.solvers.harness.worker`,
started as a command, not imported), one per slot:

* :class:`LocalExecutor` - ``jobs`` worker processes on this machine, multiplexed by
  the driver with ``selectors``. A run that exceeds its hard limit gets its worker's
  whole process group SIGKILLed (status ``timeout``); a worker that dies during a run
  (segfault, ``os._exit``, out of memory) gives status ``error`` with the exit status
  and the tail of the worker's stderr. Either way a fresh worker replaces it and the
  sweep goes on.
* :class:`DaskExecutor` - each run is a Dask task; the task runs in a worker process
  owned by the Dask worker thread (a "sidecar"), with the same hard limit and the same
  crash isolation, so a hanging solver never wedges a Dask worker. Graph texts are
  scattered once per instance.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from .wire import recv_msg, send_msg

__all__ = ["WorkerProc", "LocalExecutor", "DaskExecutor", "timeout_outcome", "crash_outcome"]

_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding solvers/, formulations/, instances/
STARTUP_LIMIT = 120.0  # seconds a fresh worker may take to import before it counts as dead


def _worker_env() -> dict:
    env = dict(os.environ)
    pp = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = _ROOT + (os.pathsep + pp if pp else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _describe_exit(rc) -> str:
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def timeout_outcome(hard_limit: float, elapsed: float, time_limit: float | None) -> dict:
    tl = f"; the solver's own time limit was {time_limit:g} s" if time_limit else ""
    return {"status": "timeout", "wall_s": elapsed,
            "message": f"killed by the harness after {elapsed:.1f} s (hard limit {hard_limit:g} s{tl})"}


_OOM_SIGNS = ("bad_alloc", "MemoryError", "Cannot allocate memory", "out of memory", "std::length_error")


def crash_outcome(rc, elapsed: float, tail: str, memory_limit=None) -> dict:
    """A worker that died during a run: status ``error``, or ``memory`` when the run had
    a memory cap and the worker's last words say an allocation failed."""
    msg = f"worker process died during the run ({_describe_exit(rc)})"
    status = "error"
    if memory_limit and any(s in tail for s in _OOM_SIGNS):
        status = "memory"
        msg = (f"out of memory: the run exceeded its memory cap of {int(memory_limit)} bytes "
               f"(RLIMIT_AS); " + msg)
    if tail.strip():
        msg += "; stderr tail: " + " | ".join(tail.strip().splitlines()[-3:])[-400:]
    return {"status": status, "wall_s": elapsed, "message": msg}


class WorkerProc:
    """One worker process and its pipes. Its stderr goes to a log file, whose tail is
    quoted when the worker dies during a run."""

    def __init__(self, log_dir: str | None = None):
        self._log = tempfile.TemporaryFile(dir=log_dir)
        # unbuffered pipes: a buffered reader could pull the next message into its
        # buffer, where select() cannot see it (the run would then look hung)
        self.proc = subprocess.Popen([sys.executable, "-m", "memsched.solvers.harness.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, env=_worker_env(),
                                     start_new_session=True, close_fds=True, bufsize=0)
        self.fd = self.proc.stdout.fileno()
        self.ready = False  # True once the worker's hello has arrived
        self.seen: set[str] = set()
        self.task = None
        self.spawned = self.started = time.perf_counter()
        self.startup_s = None  # spawn -> hello
        self.log_pos = 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, task: dict, text: str) -> None:
        h = task["instance_hash"]
        self.log_pos = self._log.tell() if not self._log.closed else 0
        self.task = task
        self.started = time.perf_counter()
        try:
            send_msg(self.proc.stdin, {"task": task, "text": None if h in self.seen else text})
        except (BrokenPipeError, OSError):
            return  # the worker is dead: its stdout reports EOF, recorded as a crash
        self.seen.add(h)

    def recv(self):
        """The next message (blocking); None if the worker died."""
        try:
            return recv_msg(self.proc.stdout)
        except (OSError, EOFError, ValueError):
            return None

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            self._log.flush()
            self._log.seek(0, os.SEEK_END)
            end = self._log.tell()
            self._log.seek(max(self.log_pos, end - n))
            return self._log.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        self.close()

    def stop(self) -> None:
        """Ask politely (EOF on stdin), then kill."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        self.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self._log):
            try:
                f.close()
            except OSError:
                pass

    def wait_result(self, hard_limit: float, time_limit: float | None):
        """Block until the current run finishes or exceeds ``hard_limit``: returns
        (outcome, worker_ok). Used by the Dask sidecar."""
        sel = selectors.DefaultSelector()
        sel.register(self.fd, selectors.EVENT_READ)
        try:
            while True:
                limit = hard_limit if self.ready else STARTUP_LIMIT
                left = self.started + limit - time.perf_counter()
                if left <= 0:
                    el = time.perf_counter() - self.started
                    self.kill()
                    if not self.ready:
                        return crash_outcome(None, el, "worker did not start in time"), False
                    return timeout_outcome(hard_limit, el, time_limit), False
                if not sel.select(timeout=left):
                    continue
                msg = self.recv()
                if msg is None:
                    el = time.perf_counter() - self.started
                    self.proc.wait()
                    out = crash_outcome(self.proc.returncode, el, self.stderr_tail(),
                                        (self.task or {}).get("memory_limit"))
                    self.close()
                    return out, False
                if "hello" in msg:
                    self.ready = True
                    self.started = time.perf_counter()
                    self.startup_s = self.started - self.spawned
                    continue
                self.task = None
                msg["run_s"] = time.perf_counter() - self.started
                return msg, True
        finally:
            sel.close()


class LocalExecutor:
    """A pool of ``jobs`` worker processes on this machine."""

    name = "local"

    def __init__(self, jobs: int = 2):
        self.jobs = max(1, int(jobs))
        self.startup_s = 0.0  # sum over workers of spawn -> ready
        self.spawned = 0

    def run(self, tasks: list[dict], texts: dict[str, str], on_done) -> None:
        """Run every task; call ``on_done(task, outcome)`` in the driver as each ends
        (in completion order); a list that ``on_done`` returns is queued as more tasks
        (their texts must be in ``texts`` by then). Ctrl-C kills the workers and propagates."""
        if not tasks:
            return
        pool = _Pool(self, tasks, texts, on_done)
        try:
            pool.start()
            while pool.busy():
                pool.wait_once()
        finally:
            pool.shutdown()


class _Pool:
    """The state of one :meth:`LocalExecutor.run`: the queue, the workers and a selector
    over their result pipes. Each worker runs one task at a time; a worker that dies or
    runs past its task's hard limit (or does not start in time) is retired and its task
    gets a crash or timeout outcome; a fresh worker takes the next task."""

    def __init__(self, owner: LocalExecutor, tasks: list[dict], texts: dict[str, str], on_done):
        self.owner, self.texts, self.on_done = owner, texts, on_done
        self.pending = deque(tasks)
        self.workers: list[WorkerProc] = []
        self.sel = selectors.DefaultSelector()
        self.t_start = time.perf_counter()

    def spawn(self) -> WorkerProc:
        w = WorkerProc()
        self.sel.register(w.fd, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    def retire(self, w: WorkerProc) -> None:
        try:
            self.sel.unregister(w.fd)
        except (KeyError, ValueError):
            pass
        self.workers.remove(w)

    def dispatch(self, w: WorkerProc) -> None:
        if self.pending and w.task is None:
            t = self.pending.popleft()
            w.send(t, self.texts[t["instance_hash"]])

    def fill(self) -> None:
        """Idle workers take the next tasks; new workers up to ``jobs`` for the rest."""
        for w in self.workers:
            self.dispatch(w)
        while self.pending and len(self.workers) < self.owner.jobs:
            self.dispatch(self.spawn())

    def done(self, t: dict, out: dict) -> None:
        more = self.on_done(t, out)
        if more:
            self.pending.extend(more)
        self.fill()

    def start(self) -> None:
        for _ in range(min(self.owner.jobs, len(self.pending))):
            self.dispatch(self.spawn())

    def busy(self) -> bool:
        return any(w.task is not None for w in self.workers)

    @staticmethod
    def limit(w: WorkerProc) -> float:
        return w.task["hard_limit"] if w.ready else STARTUP_LIMIT

    def wait_once(self) -> None:
        """Wait for the next message or the nearest deadline, handle what came, then expire
        the workers past their limits."""
        deadline = min(w.started + self.limit(w) for w in self.workers if w.task is not None)
        for key, _ in self.sel.select(timeout=max(0.0, deadline - time.perf_counter())):
            self.receive(key.data)
        now = time.perf_counter()
        for w in [w for w in self.workers if w.task is not None]:
            limit = self.limit(w)
            if now - w.started >= limit:
                t, el = w.task, now - w.started
                self.retire(w)
                w.kill()
                self.done(t, timeout_outcome(limit, el, t.get("time_limit")) if w.ready
                          else crash_outcome(None, el, "worker did not start in time"))

    def receive(self, w: WorkerProc) -> None:
        """One message from ``w``: its death (EOF), its hello (ready), or a task's outcome."""
        msg = w.recv()
        t = w.task
        if msg is None:  # the worker died
            el = time.perf_counter() - w.started
            w.proc.wait()
            out = crash_outcome(w.proc.returncode, el, w.stderr_tail(), (t or {}).get("memory_limit"))
            self.retire(w)
            w.close()
            if t is not None:
                self.done(t, out)
            else:
                self.fill()
            return
        if "hello" in msg:
            w.ready = True
            w.started = time.perf_counter()
            w.startup_s = w.started - w.spawned
            self.owner.startup_s += w.startup_s
            self.owner.spawned += 1
            return
        w.task = None
        msg["run_s"] = time.perf_counter() - w.started
        msg["dispatch_s"] = w.started - self.t_start
        self.done(t, msg)

    def shutdown(self) -> None:
        """Idle workers hold nothing of value: kill them rather than wait for a clean
        interpreter shutdown (which costs ~0.1-0.5 s per worker)."""
        for w in list(self.workers):
            w.kill()
        self.sel.close()


# ------------------------------------------------------------------ dask
_local = threading.local()


def dask_task(task: dict, text: str) -> dict:
    """Runs inside a Dask worker: executes ``task`` in this thread's sidecar worker
    process with the hard limit; returns the outcome."""
    w = getattr(_local, "worker", None)
    if w is None or not w.alive():
        w = _local.worker = WorkerProc()
    w.send(task, text)
    out, ok = w.wait_result(task["hard_limit"], task.get("time_limit"))
    if not ok:
        _local.worker = None
    out.setdefault("worker", "")
    try:
        from distributed import get_worker

        out["worker"] = f"{get_worker().address}/{out['worker']}"
    except Exception:
        pass
    return out


class DaskExecutor:
    """Runs each task on a Dask cluster (``address``: a scheduler address, or a
    ``distributed.Client``/cluster object, e.g. a LocalCluster in tests)."""

    name = "dask"

    def __init__(self, address, window: int | None = None):
        self.address = address
        self.window = window

    def run(self, tasks: list[dict], texts: dict[str, str], on_done) -> None:
        try:
            from distributed import Client, as_completed
        except ImportError:
            from memsched.formulations import MemschedError

            raise MemschedError("--dask needs dask[distributed]: pip install 'memsched[dask]'") from None
        if not tasks:
            return
        own = False
        if isinstance(self.address, Client):
            client = self.address
        elif isinstance(self.address, str):
            from memsched.formulations import MemschedError

            try:
                client, own = Client(self.address, timeout=os.environ.get("MEMSCHED_DASK_TIMEOUT", "30s")), True
            except (OSError, TimeoutError, ValueError) as e:
                raise MemschedError(f"--dask {self.address}: cannot connect to a Dask scheduler: "
                                    f"{type(e).__name__}: {e}") from None
        else:
            client, own = Client(self.address), True
        try:
            nthreads = max(1, sum(client.nthreads().values()))
            window = self.window or 2 * nthreads
            scattered = {}
            futures = {}
            pending = deque(tasks)
            ac = as_completed()

            def submit():
                t = pending.popleft()
                h = t["instance_hash"]
                if h not in scattered:
                    scattered[h] = client.scatter(texts[h], hash=False, broadcast=False)
                f = client.submit(dask_task, t, scattered[h], pure=False, retries=0)
                futures[f.key] = t
                ac.add(f)

            for _ in range(min(window, len(pending))):
                submit()
            for f in ac:
                t = futures.pop(f.key)
                try:
                    out = f.result()
                except Exception as e:  # the Dask worker itself died: record, go on
                    out = {"status": "error", "wall_s": 0.0, "message": f"dask task failed: {type(e).__name__}: {e}"}
                more = on_done(t, out)  # a returned list: more tasks (as for LocalExecutor)
                if more:
                    pending.extend(more)
                f.release()
                while pending and len(futures) < window:
                    submit()
        finally:
            if own:
                client.close()
