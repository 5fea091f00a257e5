"""The command line under pressure (issue 19): bad output paths and plot formats are one
line and exit 2 *before* any work, no directory is ever created, bad schedules and empty
traces are refused, budgets mean one thing, and stdout holds only the result."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memsched.cli.main
from memsched.cli.paths import Budget, PathError, check_output, check_output_dir, check_plot, parse_budget
from memsched.formulations import MemschedError, ratio_budget
from test_dtr_sweep_harness import synth_file

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
G30 = str(SHIPPED / "random_layered_n30.json")
CHAIN = str(SHIPPED / "chain_12.json")


def run(capsys, *argv):
    try:
        rc = memsched.cli.main.main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own refusals (exit 2)
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def run_sub(*argv, timeout=120):
    """The real console: separate stdout/stderr, nothing captured by pytest."""
    p = subprocess.run([sys.executable, "-m", "memsched.cli.main", *map(str, argv)], cwd=ROOT, capture_output=True,
                       text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=str(ROOT.parent)))
    return p.returncode, p.stdout, p.stderr


def one_error_line(err: str, *needles):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    assert lines and "error" in lines[-1], err
    for n in needles:
        assert n in lines[-1], (n, err)
    return lines[-1]


# ------------------------------------------------------------------ paths
def test_check_output_rules(tmp_path):
    check_output(tmp_path / "a.json")  # parent exists: fine
    with pytest.raises(PathError, match="does not exist"):
        check_output(tmp_path / "nodir" / "a.json")
    with pytest.raises(PathError, match="is a directory"):
        check_output(tmp_path)
    check_plot(tmp_path / "p.pdf")
    for bad in ("front.txt", "pdir", "p.json"):
        with pytest.raises(PathError, match="unsupported file type"):
            check_plot(tmp_path / bad)
    check_output_dir(tmp_path / "newdir")  # created later, inside an existing parent
    with pytest.raises(PathError, match="does not exist"):
        check_output_dir(tmp_path / "a" / "b")
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathError, match="not a directory"):
        check_output_dir(tmp_path / "f")
    assert not (tmp_path / "nodir").exists() and not (tmp_path / "a").exists()


@pytest.mark.parametrize("argv,needle", [
    (["pareto", G30, "--budgets", "1.0", "--plot", "{d}/front.txt"], "unsupported file type"),
    (["pareto", G30, "--budgets", "1.0", "--plot", "{d}/pdir"], "unsupported file type"),
    (["pareto", G30, "--budgets", "1.0", "--plot", "{d}/nodir/p.png"], "does not exist"),
    (["crosscheck", G30, "--plot", "{d}/nodir/p.png"], "does not exist"),
    (["crosscheck", G30, "--plot", "{d}/p.csv"], "unsupported file type"),
    (["run", CHAIN, "--keep", "{d}/nodir/p.py"], "does not exist"),
    (["emit", CHAIN, "-o", "{d}/nodir/p.py"], "does not exist"),
    (["emit", CHAIN, "-o", "{d}"], "is a directory"),
    (["gadget", "knapsack", "--random", "4", "-o", "{d}/nodir/g.json"], "does not exist"),
])
def test_bad_output_paths_refused_before_any_work(tmp_path, capsys, argv, needle):
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    t0 = time.perf_counter()
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == "", (out, err)
    one_error_line(err, needle)
    assert time.perf_counter() - t0 < 5  # no solve ran before the check (crosscheck takes ~10 s)
    assert not (tmp_path / "nodir").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written (no pdir.png either)


def test_dtr_paths_refused_and_no_directory_created(tmp_path, capsys):
    trace = synth_file(tmp_path, 6, 1)
    rc, out, err = run(capsys, "dtr", "to-graph", trace, "-o", tmp_path / "nodir" / "g.json")
    assert rc == 2 and out == ""
    one_error_line(err, "does not exist")
    rc, out, err = run(capsys, "dtr", "sweep", trace, "--results", tmp_path / "nope" / "d" / "r.jsonl", "-q")
    assert rc == 2 and out == ""
    one_error_line(err, "does not exist")
    rc, out, err = run(capsys, "dtr", "sweep", trace, "--plot", tmp_path / "map.txt", "-q")
    assert rc == 2 and out == ""
    one_error_line(err, "unsupported file type")
    assert not (tmp_path / "nodir").exists() and not (tmp_path / "nope").exists()


def test_bench_and_report_never_create_missing_directories(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\ntime_limit = 1\n[[instances]]\ngenerator = "chain"\nparams = { n = 4 }\n'
                    '[[solvers]]\nsolver = "given"\n')
    rc, out, err = run(capsys, "bench", spec, "-o", tmp_path / "nope" / "d" / "r.jsonl", "-q")
    assert rc == 2 and out == ""
    one_error_line(err, "does not exist")
    assert not (tmp_path / "nope").exists()
    res = tmp_path / "r.jsonl"
    rc, out, err = run(capsys, "bench", spec, "-o", res, "-q")
    assert rc == 0, err
    rc, out, err = run(capsys, "report", res, "-o", tmp_path / "nope" / "rep")
    assert rc == 2
    one_error_line(err, "does not exist")
    assert not (tmp_path / "nope").exists()
    rc, out, err = run(capsys, "report", res, "-o", tmp_path / "rep", "--no-plots")  # one new level: fine
    assert rc == 0 and (tmp_path / "rep" / "report.md").is_file(), err


# ------------------------------------------------------------------ acceptance
def _bad_schedules(g):
    names = [g.ops[i].name for i in g.given_order()]
    t0 = g.ops[g.given_order()[0]].outputs[0]
    ev = [["compute", n] for n in names]
    return {
        "non-topological": {"order": list(reversed(names))},
        "double-free": {"events": ev[:1] + [["free", t0], ["free", t0]] + ev[1:]},
        "use-after-free": {"events": ev[:1] + [["free", t0]] + ev[1:]},
        "incomplete": {"order": names[:-1]},
        "empty": {"order": []},
    }


@pytest.mark.parametrize("kind", ["non-topological", "double-free", "use-after-free", "incomplete", "empty"])
def test_emit_validates_schedules_as_run_does(tmp_path, capsys, kind):
    """emit, run and eval refuse a bad schedule file alike: one line naming the file, exit 2."""
    from memsched.instances import load_graph

    g = load_graph(CHAIN)
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps(_bad_schedules(g)[kind]))
    prog = tmp_path / "p.py"
    rc_run, out_run, err_run = run(capsys, "run", CHAIN, sched)
    rc, out, err = run(capsys, "emit", CHAIN, sched, "-o", prog)
    rc_eval, out_eval, err_eval = run(capsys, "eval", CHAIN, sched)
    assert rc_run == 2 and rc_eval == 2, (kind, out_run, err_run, err_eval)
    assert rc == 2 and out == "", (kind, out, err)
    for e in (err, err_run, err_eval):
        one_error_line(e, "s.json: invalid schedule")
    assert not prog.exists()


def test_emit_accepts_a_valid_schedule(tmp_path, capsys):
    from memsched.instances import load_graph

    g = load_graph(CHAIN)
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps({"order": [g.ops[i].name for i in g.given_order()]}))
    rc, out, err = run(capsys, "emit", CHAIN, sched, "-o", tmp_path / "p.py")
    assert rc == 0 and (tmp_path / "p.py").is_file(), err


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_dtr_replay_refuses_an_empty_trace(tmp_path, capsys, text):
    p = tmp_path / "empty.log"
    p.write_text(text)
    rc, out, err = run(capsys, "dtr", "replay", p)
    assert rc == 2 and out == ""
    one_error_line(err, "empty trace")


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_dtr_sweep_refuses_an_empty_trace(tmp_path, capsys, text):
    p = tmp_path / "empty.log"
    p.write_text(text)
    rc, out, err = run(capsys, "dtr", "sweep", p, "--step", "0.1", "-q")
    assert rc == 2 and out == ""
    one_error_line(err, "empty trace")


def test_dtr_sweep_names_a_directory(tmp_path, capsys):
    rc, out, err = run(capsys, "dtr", "sweep", tmp_path, "--step", "0.1", "-q")
    assert rc == 2 and out == ""
    one_error_line(err, "a directory")


def test_dtr_replay_prints_units_not_python_reprs(tmp_path, capsys):
    trace = synth_file(tmp_path, 8, 2)
    rc, out, err = run(capsys, "dtr", "replay", trace, "--ratio", "0.5")
    assert rc == 0, err
    assert "{" not in out and "[" not in out, out
    budget_line = next(ln for ln in out.splitlines() if ln.startswith("budget"))
    assert budget_line.split()[1].isdigit()
    wall_line = next(ln for ln in out.splitlines() if ln.startswith("wall_s"))
    assert wall_line.endswith(" s") and len(wall_line.split()[1].split(".")[1]) == 3


# ------------------------------------------------------------------ budgets
@pytest.mark.parametrize("text,ratio,nbytes", [
    ("0.8", 0.8, None), ("1.0", 1.0, None), (".5", 0.5, None), ("8e-1", 0.8, None),
    ("37056", None, 37056), ("37056B", None, 37056), ("36KiB", None, 36864), ("36kb", None, 36000),
    ("1.5GiB", None, 3 << 29), ("2MiB", None, 2 << 20), ("2", None, 2), ("1.5B", None, None),
])
def test_budget_rule(text, ratio, nbytes):
    if ratio is None and nbytes is None:
        with pytest.raises(MemschedError):
            parse_budget(text)
        return
    b = parse_budget(text)
    assert (b.ratio, b.bytes) == (ratio, nbytes)
    assert isinstance(b, Budget) and (isinstance(b.value(), float) if ratio else isinstance(b.value(), int))


@pytest.mark.parametrize("text,needle", [
    ("2.0", "at most 1"), ("1.5", "at most 1"), ("inf", "finite"), ("nan", "finite"), ("-0.5", "positive"),
    ("0", "positive"), ("1", "ambiguous"), ("12XB", "unknown unit"), ("lots", "expected a ratio"),
    ("1B", "at least 2 bytes"),
])
def test_ambiguous_or_bad_budgets_are_refused(capsys, text, needle):
    with pytest.raises(MemschedError, match=needle):
        parse_budget(text)
    rc, out, err = run(capsys, "remat", G30, f"--budget={text}", "--method", "dtr-greedy")
    assert rc == 2 and out == ""
    one_error_line(err, needle)


def test_budget_help_states_the_rule(capsys):
    with pytest.raises(SystemExit):
        memsched.cli.main.main(["remat", "--help"])
    out = capsys.readouterr().out
    assert "ratio" in out and "KiB" in out and "floor" in out


def test_bound_shave_must_be_non_negative(capsys):
    rc, out, err = run(capsys, "bound", CHAIN, "--shave", "-5")
    assert rc == 2 and out == ""
    one_error_line(err, "--shave")
    rc, out, err = run(capsys, "bound", CHAIN, "--shave", "0")
    assert rc == 0


def test_one_rounding_rule_for_ratio_budgets(tmp_path, monkeypatch):
    """remat and dtr replay turn a ratio into bytes with the same function: floor(r x P),
    on the decimal r (0.29 x 100 = 29, where float arithmetic gives 28.999...)."""
    from memsched.solvers.dtr.replay import budget_for, load_trace, trace_baseline
    from memsched.solvers.remat.dispatch import given_peak, resolve_budget
    from memsched.instances import load_graph

    assert ratio_budget(0.8, 46319) == 37055  # the example: 0.8 x 46319 = 37055.2
    assert ratio_budget(0.29, 100) == 29 and int(0.29 * 100) == 28
    assert ratio_budget(1.0, 7) == 7 and ratio_budget("0.5", 7) == 3
    with pytest.raises(MemschedError):
        ratio_budget(float("inf"), 10)
    g = load_graph(G30)
    tr = load_trace(str(synth_file(tmp_path, 8, 3)))
    for r in (0.8, 0.65, 0.29, 0.5, 1.0):
        assert resolve_budget(g, r) == ratio_budget(r, given_peak(g))
        assert budget_for(tr, r) == ratio_budget(r, trace_baseline(tr)["baseline_memory"])
    # one function: replacing it changes both
    import memsched.formulations as F

    monkeypatch.setattr(F, "ratio_budget", lambda r, p: 12345)
    assert resolve_budget(g, 0.8) == 12345 and budget_for(tr, 0.8) == 12345


def test_remat_and_dtr_replay_agree_on_a_ratio_budget(tmp_path, capsys):
    """The issue's case: the same ratio gives the same bytes in remat and dtr replay of a graph."""
    rc, out, _ = run(capsys, "remat", G30, "--budget", "0.8", "--method", "dtr-greedy", "--json")
    b_remat = json.loads(out)["budget"]
    rc, out, _ = run(capsys, "dtr", "replay", G30, "--ratio", "0.8", "--json")
    assert json.loads(out)["budget"] == b_remat


# ------------------------------------------------------------------ stdout
def test_mip_solver_bogus_is_one_line_and_nothing_on_stdout():
    rc, out, err = run_sub("remat", G30, "--method", "milp", "--mip-solver", "bogus", "--time-limit", "5")
    assert rc == 2 and out == "", out
    assert len(err.strip().splitlines()) == 1, err
    one_error_line(err, "bogus")


def test_json_with_progress_keeps_stdout_parseable():
    """The HiGHS log (native prints) and progress lines go to stderr; stdout is one JSON object."""
    rc, out, err = run_sub("remat", G30, "--method", "milp", "--budget", "0.8", "--progress", "--json",
                           "--time-limit", "10")
    assert rc == 0, err
    d = json.loads(out)
    assert d["method"] == "milp"
    assert "HiGHS" in err or "highs" in err.lower(), err[-2000:]
