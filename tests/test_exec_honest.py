"""Honest realized peaks: a kernel temporary the model does not know about is measured,
reported, and fails `memsched run` and `memsched crosscheck` when it changes the peak."""
from __future__ import annotations

import json

import pytest

import memsched.cli.main
import memsched.solvers.executors.runner as runner
from memsched.formulations import Graph, Operator, Schedule, Tensor, evaluate
from memsched.instances import generators as gen
from memsched.instances.formats import save_graph
from memsched.solvers.executors import emit_program, run_program
from memsched.solvers.executors.emit import _salt
from memsched.solvers.executors.runner import mismatch

MIB = 1 << 20
KERNEL = "def _kernel(outs, ins, ws, salt):\n"


def _with_temporary(src: str, nbytes: int = MIB, only_salt: int | None = None) -> str:
    """The emitted program with a hidden numpy temporary of ``nbytes`` inside the kernel
    (of every operator, or of the one whose salt is ``only_salt``)."""
    assert src.count(KERNEL) == 1
    cond = "" if only_salt is None else f"if salt == {only_salt}: "
    make = (f"np.empty({nbytes}, np.uint8); _tmp.fill(1)" if "import numpy as np" in src
            else f"torch.empty({nbytes}, dtype=torch.uint8, device=_DEV); _tmp.fill_(1)")
    return src.replace(KERNEL, KERNEL + f"    {cond}_tmp = {make}; del _tmp\n")


def _chain():
    g = gen.chain(5, size=1000)
    return g, Schedule.from_order(g, g.given_order())


def test_hidden_temporary_is_measured_and_reported():
    g, s = _chain()
    src = emit_program(g, s)
    clean = run_program(src)
    assert clean["realized_peak"] == clean["realized_peak_without_temporaries"] == evaluate(g, s).peak == 2000
    assert clean["kernel_temporary_max"] == 0
    res = run_program(_with_temporary(src))
    assert res["realized_peak_without_temporaries"] == 2000  # sampled after allocations: blind to it
    assert res["kernel_temporary_max"] == MIB  # exact numpy data bytes
    assert res["realized_peak"] == 2000 + MIB  # the peak operator (2000 bytes resident) plus the temporary
    line = mismatch(dict(res, graph=g.name, modeled_peak=2000, backend="numpy", device="cpu"))
    assert line is not None and "kernel temporaries" in line and str(2000 + MIB) in line and "\n" not in line


def test_temporary_off_the_peak_does_not_fail_but_is_reported():
    """One MiB of workspace on the peak operator; a 64 KiB temporary in a cheap operator
    does not change the peak: the check passes and the temporary is still reported."""
    g = Graph([Operator("a", ("x",), ("y",), 1.0, MIB), Operator("b", ("y",), ("z",))],
              [Tensor("x", 100), Tensor("y", 100), Tensor("z", 100)], outputs=("z",))
    s = Schedule.from_order(g, g.given_order())
    res = run_program(_with_temporary(emit_program(g, s), 64 << 10, only_salt=_salt("b")))
    assert res["realized_peak"] == evaluate(g, s).peak == MIB + 200
    assert res["kernel_temporary_max"] == 64 << 10
    assert mismatch(dict(res, graph=g.name, modeled_peak=MIB + 200, backend="numpy", device="cpu")) is None


def _inject(monkeypatch, nbytes=MIB):
    real = runner.emit_program

    def emit_with_temporary(*a, **kw):
        return _with_temporary(real(*a, **kw), nbytes)

    monkeypatch.setattr(runner, "emit_program", emit_with_temporary)


def test_cli_run_fails_on_hidden_temporary(tmp_path, capsys, monkeypatch):
    g, _ = _chain()
    path = tmp_path / "c.json"
    save_graph(g, path)
    assert memsched.cli.main.main(["run", str(path)]) == 0
    capsys.readouterr()
    _inject(monkeypatch)
    assert memsched.cli.main.main(["run", str(path)]) == 1
    cap = capsys.readouterr()
    err = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert len(err) == 1 and "MISMATCH" in err[0] and "kernel temporaries" in err[0], cap.err
    assert "without kernel temporaries" in cap.out and "Traceback" not in cap.err
    assert memsched.cli.main.main(["run", str(path), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["match"] is False and out["realized_peak"] == out["modeled_peak"] + MIB


def test_crosscheck_fails_on_hidden_temporary(tmp_path, capsys, monkeypatch):
    g = gen.chain(4, size=1000)
    path = tmp_path / "c.json"
    save_graph(g, path)
    _inject(monkeypatch)
    rc = memsched.cli.main.main(["crosscheck", str(path), "--time-limit", "2", "--json"])
    cap = capsys.readouterr()
    assert rc == 1
    err = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert len(err) == 1 and "realized peak" in err[0] and "numpy:cpu" in err[0], cap.err


def test_arena_tensors_at_planned_offsets(tmp_path):
    """Arena programs check that every tensor is a view at its planned offset; a program
    edited to allocate one tensor on its own is caught."""
    from memsched.solvers.executors import plan_arena

    g = gen.random_multi_output(10, 3)
    s = Schedule.from_order(g, g.given_order())
    plan = plan_arena(g, s)
    src = emit_program(g, s, arena=plan)
    ok = run_program(src)
    assert ok["arena_offsets_ok"] is True and ok["realized_peak"] == plan.size
    b = max(plan.buffers, key=lambda b: b.size)
    o = plan.offset_of()[(b.kind, b.op if b.kind == "workspace" else b.tensor, b.event)]
    needle = f"A[{o}:{o + b.size}]"
    assert needle in src
    bad = run_program(src.replace(needle, f"A[{o}:{o + b.size}].copy()", 1))
    assert bad["arena_offsets_ok"] is False
    line = mismatch(dict(bad, graph=g.name, modeled_peak=plan.lower_bound, arena=True, arena_size=plan.size,
                         backend="numpy", device="cpu"))
    assert line is not None and "planned offsets" in line


def test_torch_cpu_counts_kernel_temporaries():
    pytest.importorskip("torch")
    g, s = _chain()
    src = emit_program(g, s, backend="torch")
    assert run_program(src)["realized_peak"] == 2000
    assert run_program(_with_temporary(src))["realized_peak"] == 2000 + MIB


def test_cuda_runs_each_program_in_a_fresh_process(monkeypatch):
    """run_batch on CUDA never shares a process between programs (no GPU needed: the
    device check is bypassed and the programs are only counted)."""
    seen = {}

    def fake_run_programs(sources, *, timeout, isolate, jobs):
        seen.update(isolate=isolate, n=len(sources), cuda=all("DEVICE = 'cuda'" in s for s in sources))
        return [{"realized_peak": 0, "output_hash": "", "wall_s": 0.0, "output_hashes": {},
                 "recompute_mismatch": []} for _ in sources]

    monkeypatch.setattr(runner, "check_backend", lambda b, d: None)
    monkeypatch.setattr(runner, "run_programs", fake_run_programs)
    g, s = _chain()
    runner.run_batch([(g, s), (g, s)], "torch", "cuda")
    assert seen == {"isolate": True, "n": 2, "cuda": True}
    runner.run_batch([(g, s), (g, s)], "torch", "cpu")
    assert seen["isolate"] is False


def test_isolated_programs_run_in_separate_processes():
    prog = "import os, json\nprint('MEMSCHED-RESULT ' + json.dumps({'pid': os.getpid()}))\n"
    iso = runner.run_programs([prog, prog, prog], isolate=True, jobs=2)
    assert len({r["pid"] for r in iso}) == 3


def test_emitted_cuda_program_reads_requested_bytes():
    """The CUDA program reads the exact figure (requested_bytes.all.peak) and reports the
    caching allocator's allocated/reserved peaks beside it (text check: no GPU here)."""
    g, s = _chain()
    src = emit_program(g, s, backend="torch", device="cuda")
    assert "requested_bytes" in src and '"allocated_peak"' in src and '"reserved_peak"' in src
    assert "max_memory_allocated" not in src


def test_cli_run_on_cuda_checks_like_the_cpu_path(tmp_path, capsys, monkeypatch):
    """`run --backend torch --device cuda` exits 1 with one line when the requested-bytes
    peak differs from the model, and 0 when it is equal (the GPU run itself is faked: no
    GPU here; the program text is checked in test_emitted_cuda_program_reads_requested_bytes)."""

    g, s = _chain()
    path = tmp_path / "c.json"
    save_graph(g, path)
    seen = {}

    def fake_run(graph, sched, *, backend, device, **kw):
        seen.update(backend=backend, device=device)
        return {"graph": graph.name, "modeled_peak": 2000, "realized_peak": seen["realized"], "output_hash": "h",
                "backend": backend, "device": device, "wall_s": 0.0, "difference": seen["realized"] - 2000,
                "output_hashes": {}, "recompute_mismatch": [], "measure": "fake", "allocated_peak": 2560,
                "reserved_peak": 2 << 20, "arena": False, "scale": 1}

    import memsched.solvers.executors.runner as runner_mod  # cli.run imports from it when the command runs

    monkeypatch.setattr(runner_mod, "check_backend", lambda b, d: None)
    monkeypatch.setattr(runner_mod, "run_schedule", fake_run)
    seen["realized"] = 2000
    assert memsched.cli.main.main(["run", str(path), "--backend", "torch", "--device", "cuda"]) == 0
    assert seen["device"] == "cuda" and "allocated / reserved peak" in capsys.readouterr().out
    seen["realized"] = 2512
    assert memsched.cli.main.main(["run", str(path), "--backend", "torch", "--device", "cuda"]) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "torch:cuda" in err[0] and "2512" in err[0]
