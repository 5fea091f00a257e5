"""The command line as a user drives it (QA pass): edge-case graphs, bad option values and
Ctrl-C. Each test names the bug it pins; every user error is one line and exit status 2."""
import json
from pathlib import Path

import pytest

from memsched.formulations import Graph, Operator, Tensor
from memsched.instances import save_graph
from test_cli_pressure import one_error_line, run

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
CHAIN = str(SHIPPED / "chain_12.json")


def zero_cost_graph() -> Graph:
    """Six operators of cost 0 (baseline compute 0), a given-order peak of 70 bytes."""
    sizes = [10, 20, 30, 10, 20, 30]
    tensors = [Tensor(f"t{i}", s) for i, s in enumerate(sizes)]
    ins = [(), ("t0",), ("t1",), ("t2",), ("t3", "t1"), ("t4", "t0")]
    ops = [Operator(f"o{i}", ins[i], (f"t{i}",), 0.0, 0) for i in range(6)]
    return Graph(ops, tensors, outputs=("t5",), name="zero_cost")


# ------------------------------------------------------------ zero-cost operators
def test_pareto_zero_baseline_compute(tmp_path, capsys):
    """pareto on a graph whose operators all cost 0 died with ZeroDivisionError (overhead
    over a zero baseline); remat printed 0 %. Both now say 0 % for a schedule of compute 0."""
    p = tmp_path / "zc.json"
    save_graph(zero_cost_graph(), p)
    rc, out, err = run(capsys, "pareto", p, "--budgets", "1.0", "0.9", "--time-limit", "5", "--json")
    assert rc == 0, err
    pts = json.loads(out)["points"]
    assert [r["overhead_pct"] for r in pts] == [0.0, 0.0]
    rc, out, err = run(capsys, "pareto", p, "--budgets", "1.0", "0.9", "--time-limit", "5")
    assert rc == 0 and "Traceback" not in err
    rc, out, err = run(capsys, "remat", p, "--budget", "0.9", "--time-limit", "5", "--json")
    assert rc == 0 and json.loads(out)["overhead_pct"] == 0.0


def test_pareto_empty_graph(tmp_path, capsys):
    """An empty graph (no operators: given-order peak 0) through pareto: no crash."""
    p = tmp_path / "empty.json"
    p.write_text(json.dumps({"format": "memsched-graph", "version": 1, "name": "empty", "tensors": [],
                             "operators": []}))
    rc, out, err = run(capsys, "pareto", p, "--budgets", "1.0", "--time-limit", "5")
    assert rc == 0 and "Traceback" not in err, err
    rc, out, err = run(capsys, "pareto", p, "--budgets", "1.0", "--time-limit", "5", "--json")
    assert rc == 0 and json.loads(out)["points"][0]["status"] == "optimal"


# ------------------------------------------------------------ run --max-bytes
@pytest.mark.parametrize("value", ["0", "-1"])
def test_run_max_bytes_not_positive_is_one_line(capsys, value):
    """run --max-bytes 0 died with ZeroDivisionError, -1 with a ValueError from a scale
    doubled past 4300 digits (the scale search never ended): both are one line, exit 2."""
    rc, out, err = run(capsys, "run", CHAIN, "--max-bytes", value)
    assert rc == 2 and out == ""
    one_error_line(err, "--max-bytes")


def test_run_max_bytes_takes_units(capsys):
    rc, out, err = run(capsys, "run", CHAIN, "--max-bytes", "1KiB", "--json")
    assert rc == 0, err
    assert json.loads(out)["modeled_peak"] == 200


def test_run_max_bytes_below_any_scale_says_so(capsys):
    """A limit no --scale can meet (chain_12 has two tensors live, so every scaled peak is >= 2
    bytes... and 3 tensors here): the message says so instead of searching scales forever."""
    rc, out, err = run(capsys, "run", str(SHIPPED / "unet_small.json"), "--max-bytes", "2")
    assert rc == 2
    one_error_line(err, "no --scale")


def test_suggest_scale_is_exact():
    """The suggested scale is one whose scaled peak fits, and None when none can."""
    from memsched.formulations import Schedule, evaluate
    from memsched.instances import load_graph
    from memsched.solvers.executors.runner import _suggest_scale, scaled_graph

    g = load_graph(SHIPPED / "unet_small.json")
    s = Schedule.from_order(g, g.given_order())
    for limit in (10 ** 6, 5000, 100, 20):
        k = _suggest_scale(g, s, limit)
        if k is None:
            assert evaluate(scaled_graph(g, 10 ** 12), s).peak > limit
        else:
            assert evaluate(scaled_graph(g, k), s).peak <= limit
    assert _suggest_scale(g, s, 2) is None


# ------------------------------------------------------------ remat --objective peak
def test_remat_objective_peak_has_no_default_budget(capsys):
    """remat --objective peak ("least peak with compute <= (1+eps) x baseline") silently
    applied --budget's default 0.8 as a cap on the peak, so chain_12 (least peak 200 = its
    given-order peak) was reported 'infeasible for the asked problem'. Without --budget
    there is no peak cap; a --budget given is one."""
    rc, out, err = run(capsys, "remat", CHAIN, "--objective", "peak", "--time-limit", "10", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["status"] == "optimal" and d["peak"] == 200 and d["budget"] is None
    rc, out, err = run(capsys, "remat", CHAIN, "--objective", "peak", "--time-limit", "10")
    assert rc == 0 and "optimal" in out and "infeasible" not in out
    rc, out, err = run(capsys, "remat", CHAIN, "--objective", "peak", "--budget", "0.8", "--json")
    assert rc == 0 and json.loads(out)["status"] == "infeasible" and json.loads(out)["budget"] == 160
    rc, out, err = run(capsys, "remat", CHAIN, "--json")  # the compute objective keeps its default 0.8
    assert rc == 0 and json.loads(out)["budget"] == 160


# ------------------------------------------------------------ a string where a list belongs
def _native(**over):
    d = {"format": "memsched-graph", "version": 1, "name": "sl",
         "tensors": [{"name": "x", "size": 5}, {"name": "a", "size": 5}, {"name": "b", "size": 7}],
         "operators": [{"name": "A", "inputs": ["x"], "outputs": ["a"]}, {"name": "B", "inputs": ["x"], "outputs": ["b"]}]}
    d.update(over)
    return d


@pytest.mark.parametrize("field,value", [("outputs", "ab"), ("pinned", "x"), ("order", "AB"), ("name", ["x"]),
                                         ("meta", [1]), ("tensors", "x"), ("operators", {"A": 1})])
def test_graph_field_of_the_wrong_type_is_refused(tmp_path, capsys, field, value):
    """'outputs': "ab" was read as the required outputs ['a', 'b'] (a string is iterable),
    'order': "AB" as the order A, B: silently another graph. Every list field must be a list."""
    p = tmp_path / "g.json"
    p.write_text(json.dumps(_native(**{field: value})))
    rc, out, err = run(capsys, "info", p)
    assert rc == 2 and out == ""
    one_error_line(err, "g.json", field)


def test_schedule_order_string_is_refused(tmp_path, capsys):
    """{"order": "v0"} was read as the operators 'v', '0' (here: an unknown operator 'v');
    with one-letter names it would have been a valid schedule."""
    s = tmp_path / "s.json"
    s.write_text(json.dumps({"order": "v0"}))
    rc, out, err = run(capsys, "eval", CHAIN, s)
    assert rc == 2
    one_error_line(err, "s.json", "list")


def test_infeasible_remat_json_as_schedule_names_the_cause(tmp_path, capsys):
    """The --json of an infeasible remat ('schedule': null, 'order': 'free') given to eval/run
    said "order position 0: unknown operator 'f'" (it read the order scope 'free' as
    operator names); now it says the file holds no schedule and why."""
    rc, out, _ = run(capsys, "remat", CHAIN, "--json")
    assert rc == 0 and json.loads(out)["status"] == "infeasible"
    s = tmp_path / "r.json"
    s.write_text(out)
    for cmd in ("eval", "run", "emit"):
        extra = ["-o", tmp_path / "p.py"] if cmd == "emit" else []
        rc, out2, err = run(capsys, cmd, CHAIN, s, *extra)
        assert rc == 2
        one_error_line(err, "r.json", "no schedule", "infeasible")
    assert not (tmp_path / "p.py").exists()


# ------------------------------------------------------------ Ctrl-C in emit / run / arena --method exact
@pytest.mark.parametrize("cmd", ["emit", "run", "arena"])
def test_ctrl_c_in_the_exact_order_of_emit_run_arena(tmp_path, cmd):
    """Ctrl-C while emit/run/arena solved --method exact was swallowed: the command went on,
    wrote or ran the best-so-far order labelled 'exact (timeout)' and exited 0. Now it
    stops: one line, exit 130, nothing written."""
    from memsched.instances.generators import random_layered
    from test_cli_interrupt import interrupt

    g = tmp_path / "n500.json"
    save_graph(random_layered(500, seed=2), g)
    prog = tmp_path / "p.py"
    extra = ["-o", prog] if cmd == "emit" else (["--keep", prog] if cmd == "run" else [])
    rc, out, err, dt = interrupt([cmd, g, "--method", "exact", "--time-limit", "60", *extra], after=5.0)
    if rc is None:
        pytest.skip("the exact order finished before the signal")
    assert rc == 130, (rc, out[-500:], err[-800:])
    assert "Traceback" not in err and out == ""
    assert "interrupted" in err.strip().splitlines()[-1]
    assert not prog.exists()


# ------------------------------------------------------------ --seed and --workers
@pytest.mark.parametrize("argv", [["order", CHAIN, "--exact", "--seed", "99999999999"],
                                  ["remat", CHAIN, "--seed", "99999999999"],
                                  ["pareto", CHAIN, "--seed", "-1"],
                                  ["remat", CHAIN, "--workers", "-5"],
                                  ["order", CHAIN, "--exact", "--workers", "-1"],
                                  ["pareto", CHAIN, "--workers", "-2"]])
def test_seed_and_workers_out_of_range(capsys, argv):
    """--seed 99999999999 reached CP-SAT and died with a TypeError traceback from OR-Tools'
    parameter setter (its seed is a 32-bit integer); --workers -5 was silently taken as
    'one per core'. Both are refused by the option parser: one line, exit 2."""
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    one_error_line(err, "--seed" if "--seed" in argv else "--workers")


def test_cpsat_seed_out_of_range_is_a_typed_error():
    """The library refuses a CP-SAT seed outside 32 bits with a MemschedError (no OR-Tools TypeError)."""
    from ortools.sat.python import cp_model

    from memsched.formulations import MemschedError
    from memsched.solvers.engines.cpsat import solve_cpsat

    m = cp_model.CpModel()
    m.NewIntVar(0, 1, "x")
    with pytest.raises(MemschedError, match="seed"):
        solve_cpsat(m, time_limit=1, seed=2 ** 40)
    assert solve_cpsat(m, time_limit=1, seed=2 ** 31 - 1) is not None


# ------------------------------------------------------------ --help
def test_every_option_has_help():
    """`memsched COMMAND --help` explains every option and argument (GRAPH, --seed, --backend,
    emit -o, crosscheck --time-limit, ... had none). dtr is covered by its own tests."""
    import argparse

    from memsched.cli.main import build_parser

    missing = []

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    if name != "dtr":
                        walk(sp, path + [name])
            elif a.dest != "help" and not a.help:
                missing.append(f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}")

    walk(build_parser(), ["memsched"])
    assert not missing, missing


# ------------------------------------------------------------ generators in bench specs
@pytest.mark.parametrize("gen,n", [("random_dag", -6), ("chain", 0), ("tree", -1), ("random_layered", 0),
                                   ("random_multi_output", 0)])
def test_bench_generator_with_no_operators_is_refused(tmp_path, capsys, gen, n):
    """A spec asking random_dag n = -6 silently benchmarked an empty graph ('1 optimal');
    random_layered n = 0 and random_multi_output n = 0 died with a ValueError / IndexError
    traceback. A generator's n must be a positive integer: one line naming the spec, exit 2."""
    spec = tmp_path / "s.toml"
    seeds = "" if gen == "chain" else "seeds = [0]\n"  # chain takes no seed
    spec.write_text(f'name = "x"\n[[instances]]\ngenerator = "{gen}"\ngrid = {{n = [{n}]}}\n{seeds}'
                    '[[solvers]]\nsolver = "order"\n')
    res = tmp_path / "r.jsonl"
    rc, out, err = run(capsys, "bench", spec, "-o", res, "-q")
    assert rc == 2
    one_error_line(err, "s.toml", "n")
    assert not res.exists()


def test_generators_refuse_bad_sizes_with_a_typed_error():
    from memsched.formulations import MemschedError
    from memsched.instances import generators as G

    for fn in (G.chain, G.tree, G.random_dag, G.random_multi_output):
        for n in (0, -3, 2.5, True):
            with pytest.raises(MemschedError, match="n must be"):
                fn(n)
        assert fn(1).n_ops == 1
    with pytest.raises(MemschedError):
        G.random_layered(1)
    with pytest.raises(MemschedError, match="depth"):
        G.unet(-1)


def test_claim_without_a_searched_class_names_the_asked_problem():
    """Ctrl-C before the method returns leaves a result with no class searched (scope None):
    the claim line says nothing is proven for the asked problem, not "beyond the lower bound
    (an unnamed class)"."""
    from memsched.cli.remat import claim_words
    from memsched.solvers.result import SolveResult, Status

    res = SolveResult(solver="remat-milp", status=Status.INTERRUPTED, objective="compute",
                      params={"method": "milp", "order": "given", "cap": 1})
    assert claim_words(res) == "nothing proven (the given order of first computations)"


@pytest.mark.parametrize("argv, needle", [
    (["--eps", "0.1"], "--eps applies to --objective peak only"),
    (["--objective", "peak", "--eps", "-1"], "--eps must be >= 0"),
    (["--mip-solver", "cbc"], "--mip-solver applies to --method milp only"),
])
def test_remat_options_that_would_be_ignored_are_refused(capsys, argv, needle):
    """--eps without --objective peak, a negative --eps, and --mip-solver without --method
    milp were accepted and silently ignored (or made every budget infeasible)."""
    rc, out, err = run(capsys, "remat", CHAIN, *argv, "--time-limit", "5")
    assert rc == 2 and out == ""
    one_error_line(err, needle)


def test_pareto_refuses_a_mip_solver_without_milp(capsys):
    rc, out, err = run(capsys, "pareto", CHAIN, "--mip-solver", "cbc")
    assert rc == 2
    one_error_line(err, "--mip-solver applies to --method milp only")


def test_gadget_writes_both_files_or_neither(tmp_path, capsys):
    """When FILE.answer.json cannot be written, the instance FILE is not left behind."""
    out = tmp_path / "k.json"
    (tmp_path / "k.json.answer.json").mkdir()  # the answer's path is taken by a directory
    rc, _, err = run(capsys, "gadget", "knapsack", "--random", "4", "-o", out)
    assert rc == 2 and not out.exists()
    one_error_line(err, "k.json.answer.json: cannot write")


def test_a_library_failing_after_ctrl_c_is_an_interrupt(monkeypatch, capsys):
    """Ctrl-C while numba compiled made it fail on the way out ("RuntimeError: no compiled
    object yet"), and the command died with a traceback and exit 1 (seen on a cold cache in
    test_ctrl_c_in_the_exact_order_of_emit_run_arena). An exception raised after Ctrl-C is
    now the interrupt: one line, exit 130. Without Ctrl-C it still propagates."""
    import memsched.cli.main as M
    from memsched.cli.interrupts import Interrupts

    def boom(args):
        Interrupts.count = 1  # as the SIGINT handler does
        raise RuntimeError("no compiled object yet")

    parser = M.build_parser()
    args = parser.parse_args(["info", CHAIN])
    monkeypatch.setattr(args, "func", boom, raising=False)
    assert M._run(args) == 130
    assert capsys.readouterr().err.strip() == "memsched info: interrupted"

    def plain(args):
        Interrupts.count = 0
        raise RuntimeError("a bug")

    args.func = plain
    with pytest.raises(RuntimeError, match="a bug"):
        M._run(args)


def test_ctrl_c_in_a_native_callback_prints_no_traceback(monkeypatch):
    """Ctrl-C landing in a native callback (llvmlite's object cache while numba compiles) is
    an unraisable exception, which Python prints with a traceback ("Exception ignored in
    ..."; seen on a cold numba cache in the emit Ctrl-C test). During a command, after
    Ctrl-C, that report is silent; any other unraisable exception still goes to the hook
    that was there before."""
    import sys
    from types import SimpleNamespace

    from memsched.cli.interrupts import Interrupts

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: seen.append(type(args.exc_value).__name__))
    it = Interrupts()
    with it:
        installed = it.old_handler is not None  # not where SIGINT is ignored (a background run)
        hook = sys.unraisablehook if installed else it._unraisable
        it.old_unraisable = it.old_unraisable or (lambda args: seen.append(type(args.exc_value).__name__))
        Interrupts.count = 1  # as the SIGINT handler does
        hook(SimpleNamespace(exc_value=KeyboardInterrupt()))
        hook(SimpleNamespace(exc_value=ValueError("a real fault")))
    Interrupts.count = 0
    assert seen == ["ValueError"]
