"""FX programs: the realized peak is measured by a method independent of the importer's
profiler probe (a libc posix_memalign/free shim), and that measure can fail."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from memsched.formulations import Schedule, evaluate  # noqa: E402
from memsched.solvers.executors import fx as fxmod  # noqa: E402
from memsched.solvers.executors.runner import run_programs  # noqa: E402

PROFILER_ON = "    _prepare_profiler(cfg, {ProfilerActivity.CPU})\n    _enable_profiler(cfg, {ProfilerActivity.CPU})\n"


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 8 * 8, 3)

    def forward(self, x):
        y = torch.relu(self.c(x))
        return self.fc(torch.flatten(y, 1)) + 1


@pytest.fixture(scope="module")
def imp():
    from memsched.instances.torch_import import import_model

    torch.manual_seed(0)
    return import_model(Small(), (torch.randn(2, 3, 8, 8),), training=True)


@pytest.fixture(scope="module")
def shim():
    path = fxmod.alloc_shim()
    if path is None:
        pytest.skip("no C compiler: the independent measure cannot be built here")
    return {"LD_PRELOAD": path}


def _src(imp):
    return fxmod.emit_fx_program(imp, Schedule.from_order(imp.graph, imp.graph.given_order()))


def test_independent_measure_equals_model_and_profiler(imp, shim):
    s = Schedule.from_order(imp.graph, imp.graph.given_order())
    r = fxmod.run_fx_schedule(imp, s)
    assert r["independent"] is True and not r["shim_overflow"]
    assert r["realized_peak"] == r["realized_peak_profiler"] == r["modeled_peak"] == evaluate(imp.graph, s).peak
    assert r["aligned_peak_all"] >= r["realized_peak"]  # plus oneDNN/MKL internal blocks, outside the model


def test_independent_measure_does_not_come_from_the_profiler(imp, shim):
    """With the profiler never started, the shim still measures the modeled peak."""
    src = _src(imp)
    assert src.count(PROFILER_ON) == 1
    no_prof = src.replace(PROFILER_ON, "    pass\n").replace("    result = _disable_profiler()\n",
                                                          "    result = None\n").replace(
        "    for root in result.experimental_event_tree():\n", "    for root in []:\n")
    r = run_programs([no_prof], env=shim)[0]
    assert r["realized_peak_profiler"] == 0
    assert r["realized_peak"] == evaluate(imp.graph, Schedule.from_order(imp.graph, imp.graph.given_order())).peak


def test_independent_measure_sees_an_unmodeled_allocation(imp, shim):
    """A tensor the model does not know about (peak + 4 MiB bytes from torch's CPU
    allocator, at the end of the schedule) lifts the measured peak above the model."""
    src = _src(imp)
    peak = evaluate(imp.graph, Schedule.from_order(imp.graph, imp.graph.given_order())).peak
    hot = src.replace("    _wall = time.perf_counter() - _t0\n",
                      "    _x = torch.empty(%d, dtype=torch.uint8); del _x\n    _wall = time.perf_counter() - _t0\n"
                      % (peak + (4 << 20)))
    r = run_programs([hot], env=shim)[0]
    assert r["realized_peak"] >= peak + (4 << 20)


def test_without_shim_the_result_says_so(imp, monkeypatch):
    monkeypatch.setattr(fxmod, "alloc_shim", lambda: None)
    r = fxmod.run_fx_schedule(imp, Schedule.from_order(imp.graph, imp.graph.given_order()))
    assert r["independent"] is False and "importer's method" in r["measure"]
    assert r["realized_peak"] == r["realized_peak_profiler"]
