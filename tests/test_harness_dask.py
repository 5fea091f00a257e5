"""The Dask executor on a LocalCluster gives the same results as the local pool,
with the same hard limits and crash isolation."""
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from memsched.solvers.harness import run_sweep  # noqa: E402
from memsched.solvers.harness.report import final_table, load_results  # noqa: E402
from memsched.solvers.pool.store import read_rows  # noqa: E402

SPEC = """
name = "dask"
time_limit = 2
[[instances]]
generator = "random_dag"
grid = { n = [7, 12] }
seeds = [0, 1]
[[instances]]
generator = "unet"
params = { depth = 2 }
[[solvers]]
solver = "given"
[[solvers]]
solver = "order"
grid = { method = ["dfs", "bfs", "lpmf", "greedy"] }
[[solvers]]
solver = "debug.hang"
params = { only = "dag7_s0" }
time_limit = 0.2
hard_limit = 0.8
[[solvers]]
solver = "debug.crash"
params = { only = "unet_d2_w1" }
"""


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with Client(lc) as client:
            yield client


def test_dask_equals_local(tmp_path, cluster):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    local, dask = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    run_sweep(spec, local, jobs=2, progress=False)
    s = run_sweep(spec, dask, dask=cluster, progress=False)
    assert s.executor == "dask" and s.executed == 5 * 7
    assert final_table(load_results(dask)) == final_table(load_results(local))
    rows = read_rows(dask)
    assert {r["executor"] for r in rows} == {"dask"}
    by = {(r["instance"], r["solver_name"]): r for r in rows}
    assert by[("dag7_s0", "debug.hang")]["status"] == "timeout"
    assert by[("unet_d2_w1", "debug.crash")]["status"] == "error"
    # after the kill, the same Dask worker goes on with fresh sidecars
    assert by[("dag12_s1", "debug.hang")]["status"] == "feasible"


def test_dask_resume_skips_done(tmp_path, cluster):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("[7, 12]", "[7]"))
    out = tmp_path / "r.jsonl"
    run_sweep(spec, out, dask=cluster, progress=False)
    lines = Path(out).read_text().splitlines()
    Path(out).write_text("\n".join(lines[:4]) + "\n")
    s = run_sweep(spec, out, dask=cluster, resume=True, progress=False)
    assert s.skipped == 4 and s.executed == len(lines) - 4
    assert sorted(r["key"] for r in read_rows(out)) == sorted(r["key"] for r in
                                                                (__import__("json").loads(x) for x in lines))


def test_cli_dask_address(tmp_path, cluster, capsys, monkeypatch):
    import memsched.cli.main

    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("[7, 12]", "[7]").replace("seeds = [0, 1]", "seeds = [0]"))
    out = tmp_path / "r.jsonl"
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(out), "--dask", cluster.scheduler.address, "-q"]) == 0
    assert "on dask" in capsys.readouterr().out
    assert {r["executor"] for r in read_rows(out)} == {"dask"} and len(read_rows(out)) == 2 * 7
    monkeypatch.setenv("MEMSCHED_DASK_TIMEOUT", "1s")
    assert memsched.cli.main.main(["bench", str(spec), "-o", str(tmp_path / "x.jsonl"), "--dask",
                              "tcp://127.0.0.1:9", "-q"]) == 2
    assert "cannot connect to a Dask scheduler" in capsys.readouterr().err
