"""QA pass 2 over bench / report / crosscheck / info / emit / run / eval: user errors are
one line and exit 2 before any work, nothing is silently wrong, nothing half-written."""
import json
from pathlib import Path

import pytest

from test_cli_pressure import one_error_line, run

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
CHAIN = str(SHIPPED / "chain_12.json")
G30 = str(SHIPPED / "random_layered_n30.json")

_INST = '[[instances]]\nfiles = ["shipped:chain_12.json"]\n'


def _bench_refused(capsys, tmp_path, spec_text, *needles):
    spec = tmp_path / "s.toml"
    spec.write_text(spec_text)
    out_file = tmp_path / "r.jsonl"
    rc, out, err = run(capsys, "bench", spec, "-o", out_file, "-q")
    assert rc == 2 and out == "", (rc, out, err)
    line = one_error_line(err, *needles)
    assert not out_file.exists(), "a refused spec must not leave a results file"
    return line


# ------------------------------------------------------------------ bench specs
@pytest.mark.parametrize("solver_table,needles", [
    ('solver = "given"\nlabel = 7\n', ("label", "string")),
    ('solver = "order"\nparams = {method = "dfs"}\nlabel = ["a"]\n', ("label",)),
])
def test_bench_non_string_label_is_a_spec_error(capsys, tmp_path, solver_table, needles):
    _bench_refused(capsys, tmp_path, _INST + "[[solvers]]\n" + solver_table, "s.toml", *needles)


def test_bench_non_string_output_is_a_spec_error(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text('output = 5\n' + _INST + '[[solvers]]\nsolver = "given"\n')
    rc, out, err = run(capsys, "bench", "s.toml", "-q")
    assert rc == 2 and out == ""
    one_error_line(err, "output")


@pytest.mark.parametrize("solver", ["remat", "dtr"])
def test_bench_budgeted_solver_without_budgets_is_a_spec_error(capsys, tmp_path, solver):
    """Every run would be an error row: refuse the spec instead of running it."""
    _bench_refused(capsys, tmp_path, _INST + f'[[solvers]]\nsolver = "{solver}"\n', "solvers[0]", "budget")


@pytest.mark.parametrize("solver", ['solver = "given"', 'solver = "order"\nparams = {method = "dfs"}',
                                    'solver = "exact"'])
def test_bench_budgets_on_a_solver_without_budget_is_a_spec_error(capsys, tmp_path, solver):
    """`given` under budgets = [0.5] recorded 'feasible' rows whose peak is twice the budget."""
    _bench_refused(capsys, tmp_path, _INST + f'[[solvers]]\n{solver}\nbudgets = [0.5, 0.9]\n',
                   "solvers[0]", "budget")


@pytest.mark.parametrize("budgets,needle", [("[1.5]", "1.5"), ("[0.9, 2.5]", "2.5"), ("[100.25]", "100.25")])
def test_bench_fractional_budget_above_one_is_a_spec_error(capsys, tmp_path, budgets, needle):
    """1.5 was taken as 1 byte (floor) and every run came back infeasible."""
    _bench_refused(capsys, tmp_path, _INST + f'[[solvers]]\nsolver = "remat"\nbudgets = {budgets}\n',
                   "budgets", needle)


@pytest.mark.parametrize("budgets", ["[1]", "[0.5, 1]"])
def test_bench_integer_one_budget_is_ambiguous(capsys, tmp_path, budgets):
    """budgets = [1] (a TOML integer) ran as the ratio 1.0, where `--budget 1` is refused as
    ambiguous; 1.0 is the ratio."""
    _bench_refused(capsys, tmp_path, _INST + f'[[solvers]]\nsolver = "remat"\nbudgets = {budgets}\n',
                   "budgets", "1.0")


def test_bench_float_one_budget_is_the_whole_peak(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(_INST + '[[solvers]]\nsolver = "remat"\nparams = {method = "checkpoint-all"}\nbudgets = [1.0]\n')
    from memsched.solvers.harness.spec import load_spec

    assert [e.budget for e in load_spec(spec).solvers] == [1.0]


@pytest.mark.parametrize("cmd", ["run", "emit"])
def test_run_and_emit_unknown_method_lists_exact(capsys, tmp_path, cmd):
    extra = ["-o", tmp_path / "p.py"] if cmd == "emit" else []
    rc, out, err = run(capsys, cmd, CHAIN, "--method", "nosuch", *extra)
    assert rc == 2 and out == ""
    one_error_line(err, "nosuch", "exact", "lpmf")
    assert not (tmp_path / "p.py").exists()


def test_bench_same_label_for_different_solvers_is_a_spec_error(capsys, tmp_path):
    """Two different settings under one label were merged into one report column."""
    spec = _INST + ('[[solvers]]\nsolver = "order"\nparams = {method = "dfs"}\nlabel = "x"\n'
                    '[[solvers]]\nsolver = "order"\nparams = {method = "bfs"}\nlabel = "x"\n')
    _bench_refused(capsys, tmp_path, spec, "label", "'x'")
    spec = _INST + '[[solvers]]\nsolver = "order"\ngrid = {method = ["dfs", "bfs"]}\nlabel = "h"\n'
    _bench_refused(capsys, tmp_path, spec, "label", "'h'")


def test_bench_identical_entries_and_distinct_labels_still_run(tmp_path):
    from memsched.solvers.harness.spec import parse_spec

    d = {"instances": [{"files": [CHAIN]}],
         "solvers": [{"solver": "order", "grid": {"method": ["dfs", "bfs"]}, "label": "{method}"},
                     {"solver": "remat", "budgets": [0.8, 0.9], "label": "r"},
                     {"solver": "given"}, {"solver": "given"}]}
    spec = parse_spec(d)
    assert len(spec.runs()) == 5


# ------------------------------------------------------------------ bench --resume on a foreign file
@pytest.mark.parametrize("foreign", ["spec", "graph", "graph_no_newline", "json_object"])
def test_bench_resume_refuses_a_file_that_is_not_results(capsys, tmp_path, foreign):
    """`bench s.toml -o s.toml --resume` appended JSON rows to the spec; a file without a
    final newline even lost its last line (dropped as a 'torn row')."""
    spec = tmp_path / "s.toml"
    spec.write_text(_INST + '[[solvers]]\nsolver = "given"\n')
    target = {"spec": spec, "graph": tmp_path / "g.json", "graph_no_newline": tmp_path / "g2.json",
              "json_object": tmp_path / "x.jsonl"}[foreign]
    if foreign == "graph":
        target.write_text(Path(CHAIN).read_text())
    elif foreign == "graph_no_newline":
        target.write_text(json.dumps(json.loads(Path(CHAIN).read_text())))
    elif foreign == "json_object":
        target.write_text('{"x": 1}\n')
    before = target.read_bytes()
    rc, out, err = run(capsys, "bench", spec, "-o", target, "--resume", "-q")
    assert rc == 2 and out == "", (rc, out, err)
    one_error_line(err, "not a results file")
    assert target.read_bytes() == before


def test_bench_resume_still_continues_a_torn_first_row(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(_INST + '[[solvers]]\nsolver = "given"\n')
    res = tmp_path / "r.jsonl"
    res.write_text('{"key":"abc","spec":"s","ins')  # driver killed during the first write
    rc, out, err = run(capsys, "bench", spec, "-o", res, "--resume", "-q")
    assert rc == 0, err
    rows = [json.loads(ln) for ln in res.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["status"] == "feasible"
