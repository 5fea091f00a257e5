"""The AOTAutograd joint graph as a memsched Graph (instances/corpus_aot.py) and the
translation of PyTorch's min-cut partitioner's forward / backward split into a memsched
schedule (benchmarks/bench_partitioner.py): valid for the evaluator, and at the boundary
between the two modules exactly the saved tensors (plus parameters and tangents) are
resident."""
import copy
import operator

import pytest

torch = pytest.importorskip("torch")

from memsched.formulations import evaluate  # noqa: E402
from memsched.formulations.schedule import COMPUTE  # noqa: E402
from memsched.instances.corpus_aot import capture_joint, joint_to_graph, partition_sequence  # noqa: E402
from memsched.solvers.remat.local_search import schedule_from_sequence  # noqa: E402


def _mlp():
    torch.manual_seed(0)
    nn = torch.nn
    m = nn.Sequential(nn.Linear(32, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(),
                      nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8))
    return m, torch.randn(16, 32)


@pytest.fixture(scope="module")
def joint():
    m, x = _mlp()
    return capture_joint("mlp", model=m, x=x)


@pytest.mark.parametrize("knob", [1.0, 0.5, 0.0])
def test_partitioner_split_becomes_a_valid_schedule_with_the_saved_set_at_the_boundary(joint, knob):
    import torch._functorch.config as fcfg
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    jm, inputs, kw = joint
    g = joint_to_graph(jm, "mlp")
    assert g.n_ops > 10 and sum(g.cost) > 0
    with fcfg.patch(activation_memory_budget=knob):
        fw, bw = min_cut_rematerialization_partition(copy.deepcopy(jm), inputs, **kw)
    seq = partition_sequence(g, fw, bw)
    sched = schedule_from_sequence(g, seq)
    ev = evaluate(g, sched)  # raises on any invalid step
    n_fw = sum(1 for n in fw.graph.nodes if n.op == "call_function" and n.name in g.op_index)
    assert sorted(set(seq)) == list(range(g.n_ops))  # every operator runs
    assert ev.recomputations == len(seq) - g.n_ops
    # the memory between the modules = graph inputs (parameters, input, tangents) + the
    # tensors the forward module returns (saved for the backward, and the loss), each
    # counted once at its storage root (views and getitem resolved in the joint graph)
    k = [i for i, (kind, _) in enumerate(sched.events) if kind == COMPUTE][n_fw]
    jn = {n.name: n for n in jm.graph.nodes}
    roots = set()
    for a in list(fw.graph.nodes)[-1].args[0]:
        if not isinstance(a, torch.fx.Node):
            continue
        n = jn[a.name]
        while n.name not in g.tensor_index:
            if n.op == "call_function" and n.target is operator.getitem:
                roots.add(f"{n.args[0].name}.{n.args[1]}")
                break
            n = n.args[0]  # a view: its base
        else:
            roots.add(n.name)
    inputs_resident = sum(g.size[j] for j in g.input_idx)
    saved = sum(g.size[g.tensor_index[t]] for t in roots if g.producer[g.tensor_index[t]] != -1)
    assert saved > 0
    assert ev.timeline[k - 1] == inputs_resident + saved


def test_recomputation_appears_at_low_knobs(joint):
    import torch._functorch.config as fcfg
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    jm, inputs, kw = joint
    g = joint_to_graph(jm, "mlp")
    counts = {}
    for knob in (1.0, 0.0):
        with fcfg.patch(activation_memory_budget=knob):
            fw, bw = min_cut_rematerialization_partition(copy.deepcopy(jm), inputs, **kw)
        counts[knob] = len(partition_sequence(g, fw, bw)) - g.n_ops
    assert counts[0.0] > counts[1.0]


def test_model_names_with_a_size():
    from memsched.formulations import MemschedError
    from memsched.instances.corpus_aot import SIZES, graph_name, model_size

    assert model_size("resnet50") == ("resnet50", SIZES["resnet50"])
    assert model_size("bert_base@2x512") == ("bert_base", (2, 512))
    assert graph_name("bert_base@2x512") == "bert_base_b2_s512_aot_joint"
    assert graph_name("resnet50") == "resnet50_b2_aot_joint"
    for bad in ("bert_base@2", "bert_base@0x128", "nosuchmodel"):
        with pytest.raises(MemschedError):
            model_size(bad)
