"""The sweep driver: spec -> runs -> executor -> JSON-lines store, with progress."""
from __future__ import annotations

import resource
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memsched.formulations import MemschedError

from .spec import Run, Spec, load_spec
from memsched.solvers.pool.store import ResultStore
from .worker import memsched_version

__all__ = ["run_sweep", "SweepSummary", "base_row"]


@dataclass
class SweepSummary:
    output: str
    total: int  # runs in the spec
    skipped: int  # already in the results (--resume)
    executed: int
    statuses: dict = field(default_factory=dict)
    wall_s: float = 0.0  # driver wall time of the execution phase
    setup_s: float = 0.0  # spec parsing, instance loading and hashing
    solver_wall_s: float = 0.0  # sum over runs of the wall time inside the solver call
    solver_cpu_s: float = 0.0  # sum over runs of the worker CPU time inside the solver call
    driver_cpu_s: float = 0.0
    children_cpu_s: float = 0.0  # CPU of worker processes that ended (local executor)
    import_s: float = 0.0  # sum over runs of importing the solver's module (first use per worker)
    transfer_s: float = 0.0  # sum over runs of (dispatch -> result) - solver wall - import
    worker_startup_s: float = 0.0  # sum over local workers of spawn -> ready
    workers_started: int = 0
    jobs: int = 1
    executor: str = "local"

    def to_json(self) -> dict:
        return dict(self.__dict__)


def base_row(spec: Spec, run: Run) -> dict:
    i, e = run.instance, run.entry
    return {"key": run.key, "spec": spec.name, "instance": i.name, "family": i.family, "instance_hash": i.hash,
            "n_ops": i.n_ops, "source": i.source, "solver": e.label, "solver_name": e.solver, "params": e.params,
            "budget": e.budget, "time_limit": e.time_limit, "hard_limit": e.hard_limit, "seed": e.seed}


def _task(spec: Spec, run: Run, memory_limit: int | None = None) -> dict:
    e = run.entry
    return {"key": run.key, "instance_hash": run.instance.hash, "solver": e.solver, "params": e.params,
            "budget": e.budget, "time_limit": e.time_limit, "hard_limit": e.hard_limit, "seed": e.seed,
            "keep_schedule": spec.keep_schedules, "memory_limit": memory_limit}


_ORDER = ["status", "objective_kind", "objective", "bound", "gap", "peak", "compute", "baseline_compute",
          "given_peak", "budget_bytes", "wall_s", "cpu_s", "solver_wall_s", "run_s", "message"]


def run_sweep(spec: Spec | str | Path, output: str | Path | None = None, *, jobs: int | None = None,
              dask=None, resume: bool = False, progress=None, fsync: bool = False,
              memory_limit: int | None = None) -> SweepSummary:
    """Run every (instance, solver entry) of ``spec`` not yet in ``output``.

    ``dask``: a scheduler address or Client (None = local pool of ``jobs``
    processes). Rows are appended as runs end; with ``resume`` the keys present in
    ``output`` are skipped (a torn last line, cut mid-write, is not done: it is dropped
    and its run executed again), otherwise an existing non-empty ``output`` is an error.
    ``fsync``: fsync the results file after every row. ``memory_limit``: bytes of
    address space each run may use in its worker (RLIMIT_AS); a run past it gets
    status ``memory``. ``progress``: None, or a callable ``progress(done, total, statuses)``
    called after every finished run (``statuses``: a Counter of the statuses so far); the
    caller draws it (the command line: :class:`memsched.cli.progress.ProgressBar`)."""
    from memsched.solvers.pool.executors import DaskExecutor, LocalExecutor

    t_setup = time.perf_counter()
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    out = Path(output or spec.output or f"{spec.name}.jsonl")
    store = ResultStore(out, fsync=fsync)
    if store.exists() and not resume:
        raise MemschedError(f"{out}: results file exists; use --resume to continue it, or choose another -o")
    runs = spec.runs()
    done = store.done_keys() if resume else set()
    todo = [r for r in runs if r.key not in done]
    jobs = jobs or spec.jobs or 2
    executor = DaskExecutor(dask) if dask is not None else LocalExecutor(jobs)
    summary = SweepSummary(output=str(out), total=len(runs), skipped=len(runs) - len(todo), executed=0,
                           jobs=jobs, executor=executor.name)
    by_key = {r.key: r for r in todo}
    texts = {r.instance.hash: r.instance.text for r in todo}
    if memory_limit is not None and (not isinstance(memory_limit, int) or memory_limit <= 0):
        raise MemschedError(f"memory limit must be a positive number of bytes, got {memory_limit!r}")
    tasks = [_task(spec, r, memory_limit) for r in todo]
    version = memsched_version()
    statuses: Counter = Counter()
    summary.setup_s = time.perf_counter() - t_setup

    def on_done(task, outcome):
        row = base_row(spec, by_key[task["key"]])
        outcome = dict(outcome)
        outcome.setdefault("memsched_version", version)
        schedule = outcome.pop("schedule", None)
        for k in _ORDER:
            if k in outcome:
                row[k] = outcome.pop(k)
        row.update(outcome)
        row["executor"] = executor.name
        row["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if schedule is not None:
            row["schedule"] = schedule
        store.append(row)
        statuses[row["status"]] += 1
        summary.executed += 1
        summary.solver_wall_s += float(row.get("wall_s") or 0.0)
        summary.solver_cpu_s += float(row.get("cpu_s") or 0.0)
        summary.import_s += float(row.get("import_s") or 0.0)
        if row.get("run_s") is not None:
            summary.transfer_s += row["run_s"] - float(row.get("wall_s") or 0.0) - float(row.get("import_s") or 0.0)
        if callable(progress):
            progress(summary.executed, len(tasks), statuses)

    store.open(resume)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        executor.run(tasks, texts, on_done)
    finally:
        store.close()
        summary.wall_s = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary.driver_cpu_s = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        summary.children_cpu_s = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
        summary.statuses = dict(statuses)
        summary.worker_startup_s = getattr(executor, "startup_s", 0.0)
        summary.workers_started = getattr(executor, "spawned", 0)
    return summary
