"""Executors: emit a schedule as a standalone program, run it, measure its real peak.

* :func:`run_schedule` -- emit + run in a subprocess; returns modeled vs realized peak
  and output hashes (numpy backend by default; torch on CPU or CUDA).
* :func:`emit_program` -- the program's source text.
* :func:`plan_arena` -- one static arena for a schedule (best-fit + exact CP-SAT).

See docs/executors.md.
"""
from .arena import ArenaPlan, best_fit, buffers_of, check_plan, cpsat_plan, plan_arena
from .emit import emit_program, hashed_tensors
from .recompute import recompute_schedule, schedule_from_computes
from .runner import (ExecError, ExecutionFailed, run_batch, run_program, run_programs, run_schedule, run_schedules,
                     scaled_graph)

__all__ = ["run_schedule", "run_schedules", "run_batch", "emit_program", "plan_arena", "ArenaPlan", "best_fit",
           "cpsat_plan", "buffers_of", "check_plan", "hashed_tensors", "ExecError", "ExecutionFailed", "run_program",
           "run_programs", "scaled_graph", "schedule_from_computes", "recompute_schedule"]
