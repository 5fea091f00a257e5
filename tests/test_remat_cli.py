"""The remat and pareto commands."""
import json

import pytest

import memsched.cli.main
from memsched.instances import save_graph
from test_remat_properties import train_chain


@pytest.fixture
def gfile(tmp_path):
    p = tmp_path / "g.json"
    save_graph(train_chain(4, 7, max_size=20), p)
    return str(p)


def run(capsys, *argv):
    rc = memsched.cli.main.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("method", ["cp", "milp", "checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy"])
def test_remat_json_keys(capsys, gfile, method):
    rc, out, _ = run(capsys, "remat", gfile, "--budget", "0.9", "--method", method, "--cap", "1", "--json")
    assert rc == 0
    d = json.loads(out)
    for k in ("status", "peak", "compute", "baseline_compute", "budget", "lower_bound", "schedule", "wall_s", "method"):
        assert k in d
    assert d["method"] == method
    if d["schedule"] is not None:
        assert d["peak"] <= d["budget"]


def test_remat_text_and_infeasible_budget(capsys, gfile):
    rc, out, _ = run(capsys, "remat", gfile, "--budget", "3")
    assert rc == 0 and "infeasible" in out and "budget 3" in out


def test_remat_user_errors_exit_2(capsys, gfile, tmp_path):
    rc, _, err = run(capsys, "remat", gfile, "--method", "bogus")
    assert rc == 2 and "unknown method" in err
    rc, _, err = run(capsys, "remat", gfile, "--cap", "-2")
    assert rc == 2 and "cap" in err
    rc, _, err = run(capsys, "remat", str(tmp_path / "missing.json"))
    assert rc == 2 and "missing.json" in err
    rc, _, err = run(capsys, "remat", gfile, "--method", "milp", "--mip-solver", "nosuch")
    assert rc == 2 and "nosuch" in err


def test_pareto_table_json_and_plot(capsys, gfile, tmp_path):
    png = tmp_path / "p.png"
    rc, out, _ = run(capsys, "pareto", gfile, "--budgets", "1.0", "0.8", "0.6", "--cap", "1", "--plot", str(png))
    assert rc == 0 and png.stat().st_size > 0 and "overhead" in out
    rc, out, _ = run(capsys, "pareto", gfile, "--budgets", "1.0", "0.7", "--json")
    d = json.loads(out)
    assert [p["budget_ratio"] for p in d["points"]][0] == 1.0
    assert d["points"][0]["overhead_pct"] == 0.0


def test_remat_scale_progress_reports_each_search(capsys, gfile):
    """`--method scale --progress` reports its bounds and each search on stderr (it printed
    nothing before: the flag was not passed on); stdout stays the table."""
    rc, out, err = run(capsys, "remat", gfile, "--budget", "0.7", "--method", "scale", "--time-limit", "5",
                       "--progress")
    assert rc == 0 and "remat" in out and "[scale]" not in out
    lines = [ln for ln in err.splitlines() if "[scale]" in ln]
    assert any("lower bounds" in ln for ln in lines), err
    assert any("eviction greedy" in ln or "two-phase" in ln for ln in lines), err
    rc, out, err = run(capsys, "remat", gfile, "--budget", "0.7", "--method", "scale", "--time-limit", "5")
    assert rc == 0 and "[scale]" not in err


def test_remat_scale_anytime_figures_are_its_own(capsys, tmp_path):
    """solve_scale records when its best schedule first appeared and last improved (the
    anytime figures were the whole wall time, whatever the search did after)."""
    from memsched.solvers.remat.budgets import resolve_budget
    from memsched.solvers.remat.scale import solve_scale

    g = train_chain(6, 7, max_size=20)
    r = solve_scale(g, resolve_budget(g, 0.7), time_limit=3.0)
    assert r.schedule is not None and r.extra["searches"], r.message
    t1, t2 = r.extra["time_to_first_s"], r.extra["time_to_best_s"]
    assert t1 is not None and t1 <= t2 <= r.wall_s + 1e-6
