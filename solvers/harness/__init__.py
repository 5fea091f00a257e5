"""The benchmark harness: sweeps over instances x solvers x budgets.

* :mod:`.spec`      - the sweep spec (TOML, or YAML when PyYAML is installed) and its
  expansion into runs;
* :mod:`.registry`  - solver names -> callables returning a :class:`~solvers.result.SolveResult`
  (resolved lazily: a missing module becomes an ``error`` row, not a crash);
* :mod:`.worker`    - the worker process that executes one run at a time;
* :mod:`.executors` - a local process pool and a Dask executor, both with hard per-run
  wall-time limits (a hanging or crashing run is recorded and the sweep goes on);
* :mod:`.store`     - JSON-lines results, flushed per run, resumable;
* :mod:`.sweep`     - :func:`run_sweep`, the driver;
* :mod:`.report`, :mod:`.plots` - markdown/CSV tables and matplotlib figures.

docs/harness.md describes the spec format and the result rows.
"""
from .spec import Spec, SpecError, load_spec
from .sweep import SweepSummary, run_sweep

__all__ = ["Spec", "SpecError", "load_spec", "SweepSummary", "run_sweep"]
