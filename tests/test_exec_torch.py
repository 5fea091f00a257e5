"""Torch backend: emitted torch-CPU programs, and FX programs of imported models, realize the
modeled peak to the byte with identical outputs. Skipped when torch is not installed."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from exec_common import EXEC_MAX_OPS, random_graphs, scale_for, schedules_for, shipped_graphs  # noqa: E402
from memsched.formulations import Schedule, evaluate  # noqa: E402
from memsched.solvers.executors import recompute_schedule, run_batch  # noqa: E402


def test_shipped_instances_torch_cpu_matches_numpy():
    jobs, scales, owner = [], [], []
    for name, g in shipped_graphs(EXEC_MAX_OPS):
        scheds = schedules_for(g)
        s = scale_for(g, scheds)
        for lab, sc in scheds:
            jobs.append((g, sc))
            scales.append(s)
            owner.append(name)
    results = run_batch([(g, sc, s) for (g, sc), s in zip(jobs, scales)], "torch")
    first = {}
    for k, name in enumerate(owner):
        first.setdefault(name, k)
    ref = run_batch([jobs[k] + (scales[k],) for k in first.values()], "numpy")
    numpy_hash = {name: r["output_hash"] for name, r in zip(first, ref)}
    for k, r in enumerate(results):
        assert r["realized_peak"] == r["modeled_peak"], (owner[k], r)
        assert r["output_hash"] == numpy_hash[owner[k]], owner[k]  # same bytes as numpy, every schedule


def test_random_graphs_torch_cpu_plain_and_arena():
    jobs = []
    for g in random_graphs(60):
        for lab, sc in schedules_for(g, exact_ops=0):
            jobs.append((g, sc))
    plain = run_batch(jobs, "torch")
    arena = run_batch(jobs, "torch", arena=True)
    ref = run_batch(jobs, "numpy")
    for r, a, n in zip(plain, arena, ref):
        assert r["realized_peak"] == r["modeled_peak"]
        assert a["realized_peak"] == a["arena_size"] >= a["modeled_peak"] and a["arena_offsets_ok"] is True
        assert r["output_hash"] == a["output_hash"] == n["output_hash"]


# ------------------------------------------------------------- torch.fx import
class Tiny(torch.nn.Module):
    """Conv-BN-ReLU with a residual branch, a view chain, a multi-output op (max with
    indices) and two outputs: exercises views, getitem and in-place rewriting."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 4 * 4, 5)
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.act(self.bn(self.c1(x)))
        y = y + self.c2(y)
        y = torch.nn.functional.max_pool2d(y, 2)
        z = self.fc(torch.flatten(y, 1))
        m, _ = torch.max(z, dim=1)
        return z.relu(), m


def _import(training):
    from memsched.instances.torch_import import import_model

    torch.manual_seed(0)
    return import_model(Tiny(), (torch.randn(2, 3, 8, 8),), training=training)


@pytest.mark.parametrize("training", [False, True])
def test_fx_import_and_reordered_programs(training):
    from memsched.solvers.executors.fx import run_fx_schedules
    from memsched.solvers.ordering.heuristics import best_order

    imp = _import(training)
    g = imp.graph
    assert g.n_ops > 5 and g.outputs
    assert all(o.name in imp.op_node for o in g.ops)
    pinned_params = [t for t in g.pinned]
    assert pinned_params and all(imp.input_specs[t][2] in ("param", "buffer") for t in pinned_params)
    scheds = [Schedule.from_order(g, g.given_order()), Schedule.from_order(g, best_order(g))]
    rs = recompute_schedule(g, g.given_order())
    if rs is not None:
        scheds.append(rs)
    res = run_fx_schedules(imp, scheds)
    for s, r in zip(scheds, res):
        assert r["modeled_peak"] == evaluate(g, s).peak
        assert r["realized_peak"] == r["realized_peak_profiler"] == r["modeled_peak"], r  # both measures
    assert len({r["output_hash"] for r in res}) == 1


def test_fx_training_graph_has_backward_and_gradients():
    imp = _import(True)
    g = imp.graph
    names = " ".join(o.name for o in g.ops)
    assert "convolution_backward" in names
    n_params = sum(1 for v in imp.input_specs.values() if v[2] == "param")
    assert len(g.outputs) >= n_params  # loss + one gradient per parameter (some may coincide)


def test_fx_import_refuses_unrewritable_inplace():
    from memsched.instances.torch_import import TorchImportError, import_model

    class Bad(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            v = y.view(2, 2)
            y.add_(1)  # v (a view of y) is read below and must see the update: not functional
            return v * 3

    class Fine(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            z = y.clone()
            y.add_(1)  # later reads of y read the updated value: rewritten to out-of-place add
            return y + z

    with pytest.raises(TorchImportError, match="in-place"):
        import_model(Bad(), (torch.randn(4),))
    from memsched.formulations import Schedule as S
    from memsched.solvers.executors.fx import run_fx_schedule
    imp = import_model(Fine(), (torch.randn(4),))
    targets = [str(n.target) for n in imp.gm.graph.nodes if n.op == "call_function"]
    assert "aten.add.Tensor" in targets and "aten.add_.Tensor" not in targets
    r = run_fx_schedule(imp, S.from_order(imp.graph, imp.graph.given_order()))
    assert r["realized_peak"] == r["modeled_peak"]


def test_shipped_model_matches_fresh_extraction(tmp_path):
    from memsched.instances import load_graph
    from memsched.instances.extract_models import extract
    from exec_common import SHIPPED

    shipped = SHIPPED / "models" / "ds_cnn_kws_infer.json"
    if not shipped.exists():
        pytest.skip("shipped model instances not present")
    fresh = load_graph(extract("ds_cnn_kws", False, tmp_path))
    old = load_graph(shipped)
    assert [o.name for o in fresh.ops] == [o.name for o in old.ops]
    assert fresh.size == old.size and fresh.cost == old.cost
    assert fresh.outputs == old.outputs and fresh.pinned == old.pinned
