"""The harness's BENCHMARKS.md section, rendered from committed result files:
``benchmarks/results/harness_overhead.json`` (written by benchmarks/bench_harness.py)
and the sweep's rows ``benchmarks/results/harness_sweep.jsonl``."""
from __future__ import annotations

import json
from pathlib import Path

from .report import build_report, load_results, md_table

__all__ = ["harness_section"]


def _overhead_table(m: dict) -> str:
    rows = []
    for run in m["runs"]:
        slots = run["jobs"] * run["wall_s"]
        other = slots - run["solver_wall_s"] - run["worker_startup_s"] - run["import_s"] - run["transfer_s"]
        rows.append([run["label"], run["jobs"], run["runs"], f"{run['wall_s']:.1f}", f"{run['solver_wall_s']:.1f}",
                     f"**{100 * run['overhead_wall']:.2f}%**", f"{run['worker_startup_s']:.2f}",
                     f"{run['import_s']:.2f}", f"{1000 * run['transfer_s'] / max(1, run['runs']):.1f}",
                     f"{other:.2f}", f"{run['solver_cpu_s']:.1f} / {run['total_cpu_s']:.1f}",
                     f"{100 * run['overhead_cpu']:.2f}%", run.get("load", "")])
    return md_table(["sweep", "jobs", "runs", "wall s", "sum of solver wall s", "overhead (wall)",
                     "worker start-up s", "solver imports s", "dispatch + collect ms/run", "idle + setup s",
                     "solver CPU / total CPU s", "overhead (CPU)", "load before / after"], rows)


def harness_section(results_dir: Path, figures_dir: Path | None = None, repo_root: Path | None = None) -> str | None:
    """The markdown of the section, or None when no result file exists."""
    results_dir = Path(results_dir)
    over = results_dir / "harness_overhead.json"
    sweep = results_dir / "harness_sweep.jsonl"
    if not over.is_file() and not sweep.is_file():
        return None
    md = ["# Benchmark harness: sweep overhead and a sample report", "",
          "What: `memsched bench` runs a spec (instances x solvers x budgets) on a local pool of worker processes "
          "(or Dask); every run has a hard wall-time limit and its row is flushed to JSON lines as it ends. "
          "*Harness overhead* is everything but solver time: spec parsing, instance loading and hashing, worker "
          "start-up, shipping graphs, collecting and writing rows, and idle worker slots at the end of the sweep. "
          "Wall: `1 - sum(solver wall) / (jobs x sweep wall)`, where solver wall is measured in the worker around "
          "the solver call (it includes the evaluator's re-check of the schedule). CPU: `1 - sum(solver CPU) / "
          "(driver CPU + worker CPU)`. The breakdown columns are core-seconds summed over the worker slots: "
          "start-up (spawn to ready), importing each solver's module on its first use in a worker, dispatch + "
          "collect (sending the task and graph, unpickling, the result's trip back, writing the row), and the "
          "rest (spec parsing, worker slots idle while the other finishes the last long run, shutdown).", ""]
    if over.is_file():
        m = json.loads(over.read_text())
        md += [f"Machine: {m.get('machine', '')}. Measured {m.get('date', '')}. "
               f"Command: `{m.get('command', '.venv/bin/python benchmarks/bench_harness.py')}`.", "",
               _overhead_table(m), ""]
        if m.get("notes"):
            md += [m["notes"], ""]
    if sweep.is_file():
        rows = load_results([sweep])
        base = repo_root or results_dir.resolve().parents[1]
        rep = build_report(rows, out_dir=figures_dir, plots=figures_dir is not None, base=base,
                           title="Sample report: the overhead sweep", max_timelines=1, figure_prefix="harness_",
                           write_tables=False)
        text = rep.markdown
        if figures_dir is not None:
            rel = Path(figures_dir).resolve().relative_to(base.resolve())
            text = text.replace("](harness_", f"]({rel.as_posix()}/harness_")
        try:
            shown = sweep.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            shown = str(sweep)
        md += [f"Rendered by `memsched report {shown}` "
               f"(the per-instance table lists every solver's gap to the best known value).", "", text]
    budgets = results_dir / "harness_budgets.jsonl"
    if budgets.is_file():
        rows = load_results([budgets])
        base = repo_root or results_dir.resolve().parents[1]
        rep = build_report(rows, out_dir=figures_dir, plots=figures_dir is not None, base=base, max_timelines=0,
                           figure_prefix="budgets_", write_tables=False)
        conflicts = [x for c in rep.cells for x in c.conflicts]
        md += ["## Budget sweep: Pareto curves and the feasibility map", "",
               f"`memsched bench benchmarks/specs/budgets.toml` ({len(rows)} runs on the shipped instances: DTR "
               "replay on the given order at budgets 0.30..1.00 step 0.02, the remat CP model and the static "
               "DTR-greedy baseline at 0.5..1.0 step 0.1), rendered by `memsched report "
               "benchmarks/results/harness_budgets.jsonl`"
               + (f" (runs finished {min(ends)[:16].replace('T', ' ')} to {max(ends)[11:16]} UTC)"
                  if (ends := sorted(r["finished_at"] for r in rows if r.get("finished_at"))) else "")
               + ". Gaps are to the best known compute at each budget.", "",
               md_table(*rep.tables["solvers"]), "",
               "Conflicts between solvers: " + ("; ".join(conflicts) if conflicts else "none") + ".", ""]
        if figures_dir is not None:
            rel = Path(figures_dir).resolve().relative_to(base.resolve()).as_posix()
            for p, cap in (("budgets_pareto.png", "extra compute vs peak (fraction of the given order's peak)"),
                           ("budgets_feasibility.png", "outcome of every budgeted run; DTR's infeasible "
                                                       "budgets are OOM or thrashing")):
                if (Path(figures_dir) / p).is_file():
                    md += [f"![{cap}]({rel}/{p})", "", f"*{cap}*", ""]
    return "\n".join(md).rstrip() + "\n"
