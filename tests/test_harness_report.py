"""Report tables and plots, and the BENCHMARKS.md builder."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsched.cli.main
from memsched.solvers.harness import run_sweep
from memsched.solvers.harness.report import analyze, build_report

ROOT = Path(__file__).resolve().parents[1]


def _row(inst, solver, status, obj, bound=None, budget=None, family="fam", key=None, **kw):
    r = {"key": key or f"{inst}|{solver}|{budget}", "instance": inst, "instance_hash": "h" + inst, "family": family,
         "n_ops": 5, "solver": solver, "status": status, "objective": obj, "bound": bound, "budget": budget,
         "objective_kind": "peak" if budget is None else "compute", "memsched_version": "t", "wall_s": 0.01}
    r.update(kw)
    return r


def test_certified_optimum_gaps_and_conflicts():
    rows = [
        _row("a", "exact", "optimal", 100, bound=100),
        _row("a", "dfs", "feasible", 120),
        _row("a", "bfs", "feasible", 150),
        _row("b", "exact", "timeout", 200, bound=180),
        _row("b", "dfs", "feasible", 210),
        _row("c", "exact", "optimal", 90, bound=90),  # claims optimal but dfs beats it
        _row("c", "dfs", "feasible", 80),
        _row("d", "lb", "feasible", 50, bound=70),  # a bound above a feasible value
        _row("a", "cp", "feasible", 12.0, budget=0.8, bound=11.0),
        _row("a", "dtr", "infeasible", None, budget=0.8),
    ]
    cells = {(c.instance, c.problem): c for c in analyze(rows)}
    a = cells[("a", "peak")]
    assert (a.best, a.bound, a.certified) == (100, 100, True)
    by = {r["solver"]: r for r in a.rows}
    assert a.gap(by["dfs"]) == pytest.approx(0.2) and a.gap(by["bfs"]) == pytest.approx(0.5)
    b = cells[("b", "peak")]
    assert (b.best, b.bound, b.certified) == (200, 180, False) and b.cert_gap == pytest.approx(0.1)
    assert any("claims optimal 90" in x for x in cells[("c", "peak")].conflicts)
    assert any("bound 70" in x for x in cells[("d", "peak")].conflicts)
    ab = cells[("a", "budget 0.8")]
    assert ab.kind == "compute" and ab.best == 12.0 and not ab.certified
    assert ab.gap([r for r in ab.rows if r["solver"] == "dtr"][0]) is None
    rep = build_report(rows)
    assert "claims optimal 90" in rep.markdown
    h, rs = rep.tables["solvers"]
    dfs = [r for r in rs if r[0] == "dfs"][0]
    # dfs: gaps 20%, 5%, 0% (instance c) -> 1 best; gap to certified optimum only on a
    assert dfs[h.index("best")] == 1 and dfs[h.index("gap to certified opt (n)")] == "20.00% (1)"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from(["s1", "s2", "s3"]),
                          st.sampled_from(["optimal", "feasible", "timeout", "error", "infeasible"]),
                          st.integers(1, 1000), st.one_of(st.none(), st.integers(1, 1000))), min_size=1, max_size=20))
def test_best_known_and_gaps_are_consistent(items):
    rows = [_row(i, s, stt, v if stt in ("optimal", "feasible", "timeout") else None, b, key=f"{n}")
            for n, (i, s, stt, v, b) in enumerate(items)]
    for c in analyze(rows):
        vals = [r["objective"] for r in c.rows if r["objective"] is not None]
        assert c.best == (min(vals) if vals else None)
        for r in c.rows:
            g = c.gap(r)
            assert (g is None) == (r["objective"] is None)
            if g is not None:
                assert g >= 0 and (g == 0) == (r["objective"] == c.best)
        if c.certified:
            assert c.bound >= c.best and c.cert_gap == 0


SPEC = """
name = "rep"
[[instances]]
generator = "random_dag"
params = { n = 9 }
seeds = [0, 1]
[[solvers]]
solver = "given"
[[solvers]]
solver = "order"
grid = { method = ["dfs", "lpmf"] }
[[solvers]]
solver = "tests_fake:remat"
budgets = [0.9, 0.7]
"""


def test_cli_report_writes_tables_and_plots(tmp_path, capsys):
    # a fake budgeted solver exercises the Pareto and feasibility plots without any real remat code
    (tmp_path / "tests_fake.py").write_text(
        "from memsched.formulations import Schedule\nfrom memsched.solvers.result import make_result\n"
        "def remat(graph, budget, **kw):\n"
        "    s = Schedule.from_order(graph, graph.given_order())\n"
        "    ok = budget >= 0.8\n"
        "    return make_result(graph, s if ok else None, solver='fake', status='feasible' if ok else 'infeasible',\n"
        "                       objective='compute')\n")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "r.jsonl"
    import os

    old = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(tmp_path) + (os.pathsep + old if old else "")
    try:
        run_sweep(spec, out, jobs=2, progress=False)
    finally:
        os.environ["PYTHONPATH"] = old
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["status"] for r in rows if r["solver"] == "tests_fake:remat"} == {"feasible", "infeasible"}
    d = tmp_path / "rep"
    assert memsched.cli.main.main(["report", str(out), "-o", str(d)]) == 0
    names = {p.name for p in d.iterdir()}
    assert {"report.md", "instances.csv", "solvers.csv", "families.csv", "pareto.png", "feasibility.png"} <= names
    assert any(n.startswith("timeline_") for n in names)
    with open(d / "instances.csv") as f:
        table = list(csv.reader(f))
    assert table[0][:4] == ["instance", "family", "ops", "problem"] and len(table) == 1 + 2 * 3
    assert memsched.cli.main.main(["report", str(out)]) == 0
    assert "### Per instance" in capsys.readouterr().out
    assert memsched.cli.main.main(["report", str(tmp_path / "none.jsonl")]) == 2
    (tmp_path / "bad.jsonl").write_text("not json\n")
    assert memsched.cli.main.main(["report", str(tmp_path / "bad.jsonl")]) == 2
    assert "no result rows" in capsys.readouterr().err


def test_build_benchmarks_md_assembles_sections_in_order(tmp_path):
    sec = tmp_path / "sections"
    sec.mkdir()
    (sec / "20-b.md").write_text("## B section\n")
    (sec / "10-a.md").write_text("## A section\n")
    (sec / "notes.txt").write_text("ignored\n")
    out = tmp_path / "BENCHMARKS.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "build_benchmarks_md.py"), "--sections", str(sec),
                        "--results", str(tmp_path / "no-results"), "--out", str(out), "--date", "2026-01-02"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "2 cores" in text and "24 GiB" in text and "2026-01-02" in text
    assert text.index("## A section") < text.index("## B section") and "ignored" not in text
