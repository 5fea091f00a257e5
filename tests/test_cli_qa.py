"""The command line as a user drives it (QA pass): edge-case graphs, bad option values and
Ctrl-C. Each test names the bug it pins; every user error is one line and exit status 2."""
import json
from pathlib import Path

import pytest

import memsched.cli.main
from memsched.formulations import Graph, Operator, Tensor
from memsched.instances import save_graph

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
CHAIN = str(SHIPPED / "chain_12.json")


def run(capsys, *argv):
    try:
        rc = memsched.cli.main.main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own refusals (exit 2)
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_error_line(err: str, *needles):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    assert lines and "error" in lines[-1], err
    for n in needles:
        assert n in lines[-1], (n, err)
    return lines[-1]


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
