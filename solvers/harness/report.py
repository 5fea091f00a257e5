"""Tables from result rows: per instance (best known, best bound, certified optimum,
each solver's gap), per solver (gap summaries), per family (certificate gap).

The *best known* value of an (instance, problem) is the lowest objective any run
reached (a problem is "peak" for orderings, or "budget B" for runs with a budget;
timeouts count with the schedule they returned). The *best bound* is the highest
proven lower bound of any run. The instance is *certified* when the best bound
meets the best known value and no run contradicts another; its optimum is then known. A solver's *gap* is
(objective - best known) / best known. Conflicts (an "optimal" claim beaten by
another run, a bound above a feasible value) are listed: they are bugs.
"""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from memsched.solvers.pool.store import read_rows

__all__ = ["load_results", "build_report", "Report", "analyze", "md_table", "final_table"]

SOLVED = ("optimal", "feasible", "timeout")


def load_results(paths, notes: list | None = None) -> list[dict]:
    """Rows of one or more results files; a key seen twice keeps its last row."""
    by_key: dict[str, dict] = {}
    for p in ([paths] if isinstance(paths, (str, Path)) else paths):
        for r in read_rows(p, errors=notes):
            by_key[r["key"]] = r
    return list(by_key.values())


def problem_of(r: dict) -> str:
    """``peak`` (orderings), ``budget B`` (least compute within a budget), or
    ``budget B (peak)`` (least peak, e.g. remat with objective="peak")."""
    b = r.get("budget")
    if b is None:
        return "peak"
    kind = r.get("objective_kind") or (r.get("params") or {}).get("objective") or "compute"
    return f"budget {b:g}" + ("" if kind == "compute" else f" ({kind})")


def _close(a, b) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _fmt(x, digits=4):
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isinf(x) or math.isnan(x):
            return str(x)
        if x == int(x) and abs(x) < 1e15:
            return str(int(x))
        return f"{x:.{digits}g}"
    return str(x)


def _pct(x):
    return "-" if x is None else f"{100 * x:.2f}%"


def md_table(headers: list[str], rows: list[list]) -> str:
    def esc(c):
        return str(c).replace("|", "\\|")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


@dataclass
class Cell:
    """One (instance, problem)."""
    instance: str
    family: str
    n_ops: int
    problem: str
    kind: str  # peak | compute
    rows: list = field(default_factory=list)
    best: float | None = None
    bound: float | None = None
    certified: bool = False
    conflicts: list = field(default_factory=list)

    @property
    def cert_gap(self):
        if self.best is None or self.bound is None:
            return None
        if self.best == 0:
            return 0.0
        return max(0.0, (self.best - self.bound) / self.best)

    def gap(self, r):
        v = r.get("objective")
        if r.get("status") not in SOLVED or v is None or self.best is None:
            return None
        if self.best == 0:
            return 0.0 if v == 0 else math.inf
        return max(0.0, (v - self.best) / self.best)


def analyze(rows: list[dict]) -> list[Cell]:
    cells: dict[tuple, Cell] = {}
    for r in rows:
        k = (r["instance_hash"], problem_of(r))
        if k not in cells:
            kind = r.get("objective_kind") or ("peak" if r.get("budget") is None else "compute")
            cells[k] = Cell(r["instance"], r.get("family", ""), r.get("n_ops", 0), k[1], kind)
        c = cells[k]
        c.rows.append(r)
        if r.get("objective_kind"):
            c.kind = r["objective_kind"]
    for c in cells.values():
        vals = [r["objective"] for r in c.rows if r.get("status") in SOLVED and r.get("objective") is not None]
        bnds = [r["bound"] for r in c.rows if r.get("status") != "error" and r.get("bound") is not None]
        c.best = min(vals) if vals else None
        c.bound = max(bnds) if bnds else None
        c.certified = c.best is not None and c.bound is not None and (c.bound >= c.best or _close(c.bound, c.best))
        for r in c.rows:
            if c.best is None:
                break
            v = r.get("objective")
            if r.get("status") == "optimal" and v is not None and v > c.best and not _close(v, c.best):
                c.conflicts.append(f"{c.instance} [{c.problem}]: {r['solver']} claims optimal {_fmt(v)} "
                                   f"but {_fmt(c.best)} was found")
            b = r.get("bound")
            if b is not None and r.get("status") != "error" and b > c.best and not _close(b, c.best):
                c.conflicts.append(f"{c.instance} [{c.problem}]: {r['solver']} proves bound {_fmt(b)} "
                                   f"above the feasible {_fmt(c.best)}")
        if c.conflicts:
            c.certified = False  # a contradiction certifies nothing
    return sorted(cells.values(), key=lambda c: (c.problem != "peak", c.problem, c.family, c.instance))


def _solvers(rows) -> list[str]:
    return sorted({r["solver"] for r in rows})


def final_table(rows: list[dict]) -> list[tuple]:
    """The outcome of a sweep without timings: sorted (instance hash, solver, budget,
    status, objective, bound). Two sweeps of the same spec agree on it."""
    return sorted((r["instance_hash"], r["solver"], r.get("budget") if r.get("budget") is not None else -1.0,
                   r["status"], r.get("objective"), r.get("bound")) for r in rows)


@dataclass
class Report:
    markdown: str
    tables: dict
    cells: list
    files: list = field(default_factory=list)


def instance_table(cells: list[Cell], solvers: list[str]):
    headers = ["instance", "family", "ops", "problem", "best known", "best bound", "certified optimum"] + solvers
    out = []
    for c in cells:
        by = {r["solver"]: r for r in c.rows}
        row = [c.instance, c.family, c.n_ops, c.problem, _fmt(c.best), _fmt(c.bound),
               _fmt(c.best) if c.certified else "-"]
        for s in solvers:
            r = by.get(s)
            if r is None:
                row.append("")
                continue
            g = c.gap(r)
            if g is None:
                row.append(r.get("status", "?"))
            else:
                row.append(_pct(g) + ("*" if r.get("status") == "optimal" else "")
                           + ("(t)" if r.get("status") == "timeout" else ""))
        out.append(row)
    return headers, out


def solver_table(cells: list[Cell], solvers: list[str]):
    headers = ["solver", "problem", "runs", "solved", "optimal", "timeout", "error", "best", "mean gap", "median gap",
               "max gap", "gap to certified opt (n)", "mean wall s"]
    out = []
    for s in solvers:
        for kind in sorted({c.kind for c in cells}):
            mine = [(c, r) for c in cells if c.kind == kind for r in c.rows if r["solver"] == s]
            if not mine:
                continue
            gaps = [c.gap(r) for c, r in mine if c.gap(r) is not None]
            cert = [c.gap(r) for c, r in mine if c.certified and c.gap(r) is not None]
            st = [r.get("status") for _, r in mine]
            walls = [r.get("wall_s") or 0.0 for _, r in mine]
            solved = sum(1 for _, r in mine if r.get("status") in SOLVED and r.get("objective") is not None)
            out.append([s, kind, len(mine), solved, st.count("optimal"), st.count("timeout"),
                        st.count("error"), sum(1 for g in gaps if g == 0), _pct(statistics.fmean(gaps)) if gaps else "-",
                        _pct(statistics.median(gaps)) if gaps else "-", _pct(max(gaps)) if gaps else "-",
                        f"{_pct(statistics.fmean(cert))} ({len(cert)})" if cert else "-",
                        f"{statistics.fmean(walls):.3f}"])
    return headers, out


def family_table(cells: list[Cell]):
    headers = ["family", "problem", "instances", "certified", "mean certificate gap", "max certificate gap"]
    out = []
    keys = sorted({(c.family, c.problem) for c in cells})
    for fam, prob in keys:
        mine = [c for c in cells if c.family == fam and c.problem == prob]
        gaps = [c.cert_gap for c in mine if c.cert_gap is not None]
        out.append([fam, prob, len(mine), sum(c.certified for c in mine),
                    _pct(statistics.fmean(gaps)) if gaps else "-", _pct(max(gaps)) if gaps else "-"])
    return headers, out


def _write_csv(path: Path, headers, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(headers)
        w.writerows(rows)


def build_report(rows: list[dict], out_dir: Path | None = None, *, plots: bool = True, base: Path | None = None,
                 title: str = "Benchmark report", max_timelines: int = 3, figure_prefix: str = "",
                 write_tables: bool = True) -> Report:
    """Tables (markdown, and CSV files plus report.md when ``out_dir`` is given and
    ``write_tables``) and plots (into ``out_dir``)."""
    cells = analyze(rows)
    solvers = _solvers(rows)
    tables = {"instances": instance_table(cells, solvers), "solvers": solver_table(cells, solvers),
              "families": family_table(cells)}
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    versions = sorted({str(r.get("memsched_version")) for r in rows})
    md = [f"## {title}", "",
          f"{len(rows)} runs, {len({r['instance_hash'] for r in rows})} instances, {len(solvers)} solvers; "
          f"status: {', '.join(f'{v} {k}' for k, v in sorted(statuses.items()))}; memsched {', '.join(versions)}.", ""]
    md += ["### Per instance", "",
           "Gap of each solver to the best known value (`*` = the solver proved optimality, `(t)` = timed out "
           "with that schedule); a status where it found no schedule.", "",
           md_table(*tables["instances"]), "",
           "### Per solver", "", md_table(*tables["solvers"]), "",
           "### Certificate gap per family", "",
           "(best known - best bound) / best known; 0 = certified optimal.", "",
           md_table(*tables["families"]), ""]
    conflicts = [x for c in cells for x in c.conflicts]
    md += ["### Conflicts", ""] + ([f"* {x}" for x in conflicts] or ["none"]) + [""]
    files = []
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(exist_ok=True)  # one level only: memsched never creates missing parent directories
        for name, (h, rs) in tables.items() if write_tables else ():
            p = out_dir / f"{name}.csv"
            _write_csv(p, h, rs)
            files.append(p)
        if plots:
            from . import plots as P

            figs = P.all_plots(rows, cells, out_dir, base=base, max_timelines=max_timelines, prefix=figure_prefix)
            if figs:
                md += ["### Figures", ""]
                for caption, p in figs:
                    md += [f"![{caption}]({p.name})", "", f"*{caption}*", ""]
                    files.append(p)
        if write_tables:
            p = out_dir / "report.md"
            p.write_text("\n".join(md))
            files.append(p)
    return Report("\n".join(md), tables, cells, files)
