"""The sweep spec: parsing, expansion, run keys, instance hashes, and spec errors."""
import hashlib
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsched.cli.main
from memsched.instances import generators
from memsched.instances.formats import graph_to_json
from memsched.solvers.harness.spec import SpecError, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BASIC = """
name = "basic"
time_limit = 3
[[instances]]
generator = "random_dag"
params = { edge_prob = 0.4 }
grid = { n = [6, 9] }
seeds = [1, 2, 3]
[[instances]]
generator = "chain"
params = { n = 7 }
[[solvers]]
solver = "given"
[[solvers]]
solver = "order"
grid = { method = ["dfs", "bfs"] }
label = "order-{method}"
[[solvers]]
solver = "remat"
params = { method = "cp" }
budgets = [0.9, 0.8]
time_limit = 4
"""


def test_expansion_counts_labels_and_limits(tmp_path):
    spec = load_spec(_write(tmp_path, BASIC))
    assert len(spec.instances) == 2 * 3 + 1
    labels = sorted({e.label for e in spec.solvers})
    assert labels == sorted(["given", "order-bfs", "order-dfs", "remat:method=cp"])
    assert len(spec.solvers) == 1 + 2 + 2
    runs = spec.runs()
    assert len(runs) == 7 * 5
    assert len({r.key for r in runs}) == len(runs)
    remat = [e for e in spec.solvers if e.solver == "remat"]
    assert {e.budget for e in remat} == {0.9, 0.8}
    assert all(e.time_limit == 4 and e.hard_limit >= 4 for e in remat)
    given_e = [e for e in spec.solvers if e.solver == "given"][0]
    assert given_e.time_limit == 3 and given_e.budget is None


def test_instance_hash_is_sha256_of_canonical_native_json(tmp_path):
    spec = load_spec(_write(tmp_path, BASIC))
    for inst in spec.instances:
        src = inst.source
        g = getattr(generators, src["generator"])(**src["params"])
        text = json.dumps(graph_to_json(g), sort_keys=True, separators=(",", ":"))
        assert inst.hash == hashlib.sha256(text.encode()).hexdigest()
        assert inst.n_ops == g.n_ops


def test_keys_stable_across_parses_and_files_dedupe(tmp_path):
    a = [r.key for r in load_spec(_write(tmp_path, BASIC)).runs()]
    b = [r.key for r in load_spec(_write(tmp_path, BASIC, "t.toml")).runs()]
    assert a == b
    # the same graph twice (a file and its generator) is one instance
    from memsched.instances import save_graph

    save_graph(generators.chain(7), tmp_path / "c7.json")
    spec = load_spec(_write(tmp_path, BASIC + '\n[[instances]]\nfiles = ["*.json"]\n', "u.toml"))
    assert len(spec.instances) == 7


def test_yaml_equals_toml(tmp_path):
    yaml = pytest.importorskip("yaml")
    import tomllib

    d = tomllib.loads(BASIC)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(d))
    a = [r.key for r in load_spec(_write(tmp_path, BASIC)).runs()]
    b = [r.key for r in load_spec(tmp_path / "s.yaml").runs()]
    assert a == b


def test_shipped_prefix_and_relative_globs(tmp_path):
    shipped = sorted((ROOT / "instances" / "shipped").glob("*.json"))
    if not shipped:
        pytest.skip("no shipped instances yet")
    from memsched.instances import load_graph

    spec = load_spec(_write(tmp_path, '[[instances]]\nfiles = "shipped:*.json"\n[[solvers]]\nsolver = "given"\n'))
    hashes = {hashlib.sha256(json.dumps(graph_to_json(load_graph(p)), sort_keys=True, separators=(",", ":"))
                             .encode()).hexdigest() for p in shipped}
    assert {i.hash for i in spec.instances} == hashes
    assert all(i.source["file"].startswith("shipped:") for i in spec.instances)
    # a relative glob is relative to the spec's folder, whatever the current folder
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.json").write_text(shipped[0].read_text())
    spec = load_spec(_write(tmp_path, '[[instances]]\nfiles = "sub/*.json"\n[[solvers]]\nsolver = "given"\n'))
    assert [i.name for i in spec.instances] == ["x"]


@pytest.mark.parametrize("text, needle", [
    ('[[instances]]\ngenerator="chain"\nparams={n=3}\n', "no [[solvers]]"),
    ('[[solvers]]\nsolver="given"\n', "no [[instances]]"),
    ('bogus = 1\n[[instances]]\ngenerator="chain"\n[[solvers]]\nsolver="given"\n', "unknown key 'bogus'"),
    ('[[instances]]\ngenerator="nope"\n[[solvers]]\nsolver="given"\n', "unknown generator 'nope'"),
    ('[[instances]]\nfiles=["missing/*.json"]\n[[solvers]]\nsolver="given"\n', "matches no file"),
    ('[[instances]]\ngenerator="chain"\nparams={n=3}\n[[solvers]]\nsolver="frobnicate"\n', "unknown solver"),
    ('[[instances]]\ngenerator="chain"\nparams={n=3}\n[[solvers]]\nsolver="given"\ntime_limit=-1\n',
     "time_limit"),
    ('[[instances]]\ngenerator="chain"\nparams={n=3}\n[[solvers]]\nsolver="remat"\nbudgets=[]\n', "budgets"),
    ('[[instances]]\ngenerator="chain"\nparams={m=3}\n[[solvers]]\nsolver="given"\n', "bad parameters"),
    ('[[instances]\n', "invalid TOML"),
])
def test_spec_errors_name_file_and_key(tmp_path, text, needle):
    p = _write(tmp_path, text)
    with pytest.raises(SpecError) as ei:
        load_spec(p)
    assert needle in str(ei.value) and str(p) in str(ei.value)


def test_cli_bad_spec_exits_2(tmp_path, capsys):
    p = _write(tmp_path, "[[instances]]\ngenerator = 'chain'\n")
    assert memsched.cli.main.main(["bench", str(p), "-o", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "no [[solvers]]" in err and "Traceback" not in err
    assert memsched.cli.main.main(["bench", str(tmp_path / "absent.toml")]) == 2
    assert "no such file" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(ns=st.lists(st.integers(2, 7), min_size=1, max_size=3, unique=True),
       seeds=st.lists(st.integers(0, 50), min_size=1, max_size=3, unique=True),
       methods=st.lists(st.sampled_from(["dfs", "bfs", "lpmf", "greedy"]), min_size=1, max_size=4, unique=True),
       budgets=st.lists(st.sampled_from([0.5, 0.6, 0.7, 0.8, 0.9]), min_size=1, max_size=3, unique=True))
def test_grid_expansion_is_the_cartesian_product(ns, seeds, methods, budgets):
    d = {"instances": [{"generator": "random_dag", "grid": {"n": ns}, "seeds": seeds}],
         "solvers": [{"solver": "order", "grid": {"method": methods}},
                     {"solver": "remat", "budgets": budgets, "params": {"method": "cp"}}]}
    spec = parse_spec(d)
    expect_inst = {(n, s) for n, s in itertools.product(ns, seeds)}
    got = {(i.source["params"]["n"], i.source["params"]["seed"]) for i in spec.instances}
    # identical graphs (tiny n, different seeds) are deduplicated by hash
    assert got <= expect_inst and len({i.hash for i in spec.instances}) == len(spec.instances)
    assert len(spec.solvers) == len(methods) + len(budgets)
    runs = spec.runs()
    assert len(runs) == len(spec.instances) * len(spec.solvers) == len({r.key for r in runs})
    # a different time limit changes every key
    d["solvers"][0]["time_limit"] = 7
    d["solvers"][1]["time_limit"] = 7
    keys2 = {r.key for r in parse_spec(d).runs()}
    assert keys2.isdisjoint({r.key for r in runs})


def test_budget_range(tmp_path):
    p = _write(tmp_path, '[[instances]]\ngenerator="chain"\nparams={n=4}\n[[solvers]]\nsolver="dtr"\n'
                         'budgets = { from = 0.5, to = 1.0, step = 0.1 }\n')
    assert [e.budget for e in load_spec(p).solvers] == pytest.approx([0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    p = _write(tmp_path, '[[instances]]\ngenerator="chain"\nparams={n=4}\n[[solvers]]\nsolver="dtr"\n'
                         'budgets = { from = 0.5, step = 0.1 }\n', "u.toml")
    with pytest.raises(SpecError, match="budgets"):
        load_spec(p)


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks" / "specs").glob("*.toml")), ids=lambda p: p.name)
def test_committed_specs_parse(path):
    if not any((ROOT / "instances" / "shipped").glob("*.json")):
        pytest.skip("no shipped instances")
    spec = load_spec(path)
    runs = spec.runs()
    assert runs and len({r.key for r in runs}) == len(runs)
    if path.name == "overhead.toml":
        assert len(runs) == 100
