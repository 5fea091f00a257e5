"""The AOTAutograd joint graph of a corpus model's training step, as a memsched Graph.

This is the graph PyTorch's partitioners (``torch._functorch.partitioners``) cut into a
forward and a backward module; benchmarks/bench_partitioner.py runs the real
``min_cut_rematerialization_partition`` on it and compares with memsched's remat.

* :func:`capture_joint` builds a corpus model (instances/extract_models.py: ``CORPUS``,
  random weights, no download; batch-norm on batch statistics, dropout off) and traces
  ``loss = sum(model(x))`` with ``aot_function``; the joint module is captured from the
  partition callback, then dead code is removed and common subexpressions merged
  (``fx_graph_cse``), the partitioner's own first steps: the graph it cuts.
* :func:`joint_to_graph`: one memsched operator per ATen call that is not a view; views
  and ``getitem`` read their base tensor (a view keeps its storage alive, so its readers
  read the base); tensor bytes = numel x element size of the traced value; operator cost
  = ``max(FLOPs, 1)`` with FLOPs from ``torch.utils.flop_counter``'s formulas (the
  partitioner's own "flops" runtime estimate); ``primals_*`` (parameters and the input)
  pinned; the joint graph's outputs (loss and gradients) required.
* :func:`partition_sequence`: the compute sequence of a forward / backward module pair
  (forward operators in order, then backward ones; a forward operator found again in
  the backward module is a recomputation).

Requires torch (imported when called); the Hugging Face models need ``transformers``.
"""
from __future__ import annotations

import copy
import operator

from memsched.formulations import Graph, Operator, Tensor

__all__ = ["SIZES", "capture_joint", "joint_to_graph", "partition_sequence", "model_size", "graph_name"]

#: corpus model -> (batch, sequence) used here (the smaller corpus size of each)
SIZES = {"resnet50": (2, 0), "gpt2_small": (1, 128), "bert_base": (1, 128), "mobilenet_v3_large": (2, 0)}


def model_size(name: str) -> tuple[str, tuple[int, int]]:
    """(corpus model, (batch, sequence)) of ``name``: a corpus model at its size in SIZES, or
    ``model@BxS`` (e.g. ``bert_base@2x512``) for another batch and sequence length."""
    from memsched.formulations import MemschedError

    base, _, size = name.partition("@")
    if not size:
        if base not in SIZES:
            raise MemschedError(f"corpus_aot: no size for {base!r}; known: {', '.join(SIZES)} (or name@BxS)")
        return base, SIZES[base]
    try:
        b, s = (int(x) for x in size.lower().split("x"))
    except ValueError:
        raise MemschedError(f"corpus_aot: {name!r}: expected model@BATCHxSEQ, e.g. bert_base@2x512") from None
    if b < 1 or s < 0:
        raise MemschedError(f"corpus_aot: {name!r}: batch must be >= 1 and sequence >= 0")
    return base, (b, s)


def graph_name(name: str) -> str:
    """The memsched graph name of the joint graph of ``name`` (see :func:`model_size`)."""
    base, (b, s) = model_size(name)
    return f"{base}_b{b}{f'_s{s}' if s else ''}_aot_joint"


def _model(name: str, size: tuple[int, int] | None = None):
    import torch

    from memsched.instances.extract_models import CORPUS

    name, default = model_size(name) if size is None else (name, size)
    builder, make_input, _ = CORPUS[name]
    torch.manual_seed(0)
    model = builder()
    model.train()
    for m in model.modules():  # batch statistics only: no running-stat buffers to mutate
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.track_running_stats = False
            m.running_mean = m.running_var = m.num_batches_tracked = None
    for m in model.modules():  # dropout off: the partitioner never recomputes random ops
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model, make_input(*default)


def capture_joint(name: str, model=None, x=None):
    """(joint GraphModule, joint inputs, partition kwargs) of the training step of corpus
    model ``name`` (``model@BxS`` for another size; see :func:`model_size`), or of ``model``
    on input ``x`` when given."""
    import torch
    from torch._functorch.aot_autograd import aot_function
    from torch._functorch.compile_utils import fx_graph_cse
    from torch._functorch.partitioners import default_partition

    if model is None:
        model, x = _model(name)
    params = {k: v.detach().clone().requires_grad_(True) for k, v in model.named_parameters()}
    bufs = {k: v.detach().clone() for k, v in model.named_buffers() if v is not None}
    names, bnames = list(params), list(bufs)

    def step(*flat):
        # buffers are inputs too (pinned ``primals``), not constants baked into the trace
        p = dict(zip(names, flat[:len(names)]))
        b = dict(zip(bnames, flat[len(names):len(names) + len(bnames)]))
        out = torch.func.functional_call(model, {**p, **b}, (flat[-1],))
        out = getattr(out, "logits", out)
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out.float().sum()

    cap: dict = {}

    def part(joint, joint_inputs, **kw):
        cap.update(joint=copy.deepcopy(joint), inputs=joint_inputs, kw=kw)
        return default_partition(joint, joint_inputs, **kw)

    nop = (lambda gm, _: gm)
    aot_function(step, fw_compiler=nop, bw_compiler=nop, partition_fn=part)(*params.values(), *bufs.values(), x)
    # the partitioner's own first steps (dead code, then common subexpressions merged): the
    # graph it cuts; running them again inside the partitioner changes nothing (same names)
    joint = cap["joint"]
    joint.graph.eliminate_dead_code()
    joint.recompile()
    joint.graph = fx_graph_cse(joint.graph)
    joint.recompile()
    return joint, cap["inputs"], cap["kw"]


def _is_alias(n) -> bool:
    import torch

    if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
        return False
    rets = n.target._schema.returns
    return bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


def _nbytes(v) -> int:
    return int(v.numel()) * v.element_size()


def _flops(n) -> int:
    from torch.fx.node import map_arg
    from torch.utils.flop_counter import flop_registry

    f = flop_registry.get(getattr(n.target, "overloadpacket", None))
    if f is None:
        return 1
    args, kwargs = map_arg((n.args, n.kwargs), lambda a: a.meta.get("val"))
    return max(int(f(*args, **kwargs, out_val=n.meta.get("val"))), 1)


def _metadata_only() -> set:
    """ATen factories whose tensor argument gives only dtype / device / shape (no data read)."""
    import torch

    aten = torch.ops.aten
    return {getattr(aten, k) for k in ("new_ones", "new_zeros", "new_empty", "new_full", "new_empty_strided",
                                       "empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
                                       "randn_like") if hasattr(aten, k)}


def joint_to_graph(joint, name: str) -> Graph:
    """memsched Graph of the joint FX graph ``joint`` (see the module docstring). O(nodes)."""
    import torch
    from torch.fx.node import map_arg

    tensors, ops, pinned, outputs = [], [], set(), []
    of: dict = {}  # fx node -> tensor name, or list of names (multi-output)
    for n in joint.graph.nodes:
        if n.op == "placeholder":
            v = n.meta.get("val")
            if isinstance(v, torch.Tensor):
                tensors.append(Tensor(n.name, _nbytes(v)))
                of[n] = n.name
                if n.name.startswith("primals"):
                    pinned.add(n.name)
        elif n.op == "call_function":
            if n.target is operator.getitem:
                base = of.get(n.args[0])
                of[n] = base[n.args[1]] if isinstance(base, list) else base
                continue
            if _is_alias(n):
                of[n] = of.get(n.args[0])
                continue
            ins: list[str] = []
            if getattr(n.target, "overloadpacket", None) in _metadata_only():
                pass  # reads only the dtype / device / shape of its tensor argument
            else:
                map_arg((n.args, n.kwargs), lambda a: ins.extend(of[a] if isinstance(of.get(a), list) else
                                                                    [of[a]] if of.get(a) else []))
            v = n.meta.get("val")
            if isinstance(v, (tuple, list)):
                outs = [f"{n.name}.{i}" if isinstance(x, torch.Tensor) else None for i, x in enumerate(v)]
                for o, x in zip(outs, v):
                    if o:
                        tensors.append(Tensor(o, _nbytes(x)))
                of[n] = outs
            elif isinstance(v, torch.Tensor):
                outs = [n.name]
                tensors.append(Tensor(n.name, _nbytes(v)))
                of[n] = n.name
            else:
                outs = []
            ops.append(Operator(n.name, tuple(dict.fromkeys(x for x in ins if x)), tuple(o for o in outs if o),
                                float(_flops(n))))
        elif n.op == "output":
            map_arg(n.args[0], lambda a: outputs.append(of[a]) if of.get(a) and not isinstance(of[a], list) else None)
    return Graph(ops, tensors, pinned=frozenset(pinned), outputs=tuple(dict.fromkeys(outputs)), name=name)


def partition_sequence(g: Graph, fw, bw) -> list[int]:
    """Operator indices of ``g`` in the order the forward module ``fw`` and then the backward
    module ``bw`` run them (nodes that are not operators of ``g``: views, getitem, are
    skipped). O(nodes)."""
    seq = []
    for mod in (fw, bw):
        for n in mod.graph.nodes:
            if n.op == "call_function" and n.name in g.op_index:
                seq.append(g.op_index[n.name])
    return seq
