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

    def add(self, row: dict) -> None:
        """Count one finished run's row."""
        wall, imp = float(row.get("wall_s") or 0.0), float(row.get("import_s") or 0.0)
        self.executed += 1
        self.solver_wall_s += wall
        self.solver_cpu_s += float(row.get("cpu_s") or 0.0)
        self.import_s += imp
        if row.get("run_s") is not None:
            self.transfer_s += row["run_s"] - wall - imp


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


def _row(spec: Spec, run: Run, outcome: dict, executor: str, version: str) -> dict:
    """The results row of one finished run: what was run (:func:`base_row`), the outcome's
    fields in a fixed order first, then the rest, the schedule last."""
    row = base_row(spec, run)
    outcome = dict(outcome)
    outcome.setdefault("memsched_version", version)
    schedule = outcome.pop("schedule", None)
    for k in _ORDER:
        if k in outcome:
            row[k] = outcome.pop(k)
    row.update(outcome)
    row["executor"] = executor
    row["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if schedule is not None:
        row["schedule"] = schedule
    return row


def _cpu_since(who, before) -> float:
    """User + system CPU seconds of ``who`` (RUSAGE_SELF / RUSAGE_CHILDREN) since ``before``."""
    now = resource.getrusage(who)
    return (now.ru_utime + now.ru_stime) - (before.ru_utime + before.ru_stime)


def _check_results_file(path: Path) -> None:
    """Before ``--resume`` appends to (and trims a torn last line of) ``path``: it must be
    a results file, i.e. hold at least one row (a JSON object with a "key"), or be only
    the torn start of a first row. A spec, a graph or any other file is refused untouched."""
    from memsched.solvers.pool.store import read_rows

    if read_rows(path):
        return
    data = path.read_bytes()
    if b"\n" not in data.rstrip(b"\n") and data.lstrip().startswith(b'{"key"'):
        return  # the driver was killed while writing the first row
    raise MemschedError(f"{path}: not a results file of memsched bench (no result rows); "
                        "--resume would append to it: choose another -o")


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
    if memory_limit is not None and (not isinstance(memory_limit, int) or memory_limit <= 0):
        raise MemschedError(f"memory limit must be a positive number of bytes, got {memory_limit!r}")
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    out = Path(output or spec.output or f"{spec.name}.jsonl")
    store = ResultStore(out, fsync=fsync)
    if store.exists() and not resume:
        raise MemschedError(f"{out}: results file exists; use --resume to continue it, or choose another -o")
    if resume and store.exists():
        _check_results_file(out)
    runs = spec.runs()
    done = store.done_keys() if resume else set()
    todo = [r for r in runs if r.key not in done]
    jobs = jobs or spec.jobs or 2
    executor = DaskExecutor(dask) if dask is not None else LocalExecutor(jobs)
    summary = SweepSummary(output=str(out), total=len(runs), skipped=len(runs) - len(todo), executed=0,
                           jobs=jobs, executor=executor.name)
    by_key = {r.key: r for r in todo}
    texts = {r.instance.hash: r.instance.text for r in todo}
    tasks = [_task(spec, r, memory_limit) for r in todo]
    version = memsched_version()
    statuses: Counter = Counter()
    summary.setup_s = time.perf_counter() - t_setup

    def on_done(task, outcome):
        row = _row(spec, by_key[task["key"]], outcome, executor.name, version)
        store.append(row)
        statuses[row["status"]] += 1
        summary.add(row)
        if callable(progress):
            progress(summary.executed, len(tasks), statuses)

    store.open(resume)
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        executor.run(tasks, texts, on_done)
    finally:
        store.close()
        summary.wall_s = time.perf_counter() - t0
        summary.driver_cpu_s = _cpu_since(resource.RUSAGE_SELF, r0)
        summary.children_cpu_s = _cpu_since(resource.RUSAGE_CHILDREN, c0)
        summary.statuses = dict(statuses)
        summary.worker_startup_s = getattr(executor, "startup_s", 0.0)
        summary.workers_started = getattr(executor, "spawned", 0)
    return summary
