"""Import a PyTorch model into a memsched Graph via torch.fx.

:func:`import_model` traces ``model(*example_inputs)`` with ``make_fx`` into an
ATen-level FX graph (for ``training=True`` the joint forward + backward graph of
``loss = sum(outputs)``, returning the loss and every parameter's gradient), runs
it once on the example inputs, and builds a :class:`formulations.Graph`:

* every FX node that allocates is an operator, named after the node; each distinct
  output storage is a tensor whose size is the storage's byte size measured on the
  real run (shape propagation on real values);
* nodes whose outputs share storage with an input (views: ``view``, ``t``,
  ``expand``, ``detach``, ``_unsafe_view``, ...) are not operators: their consumers
  read the base tensor, and the emitted program recomputes the view inline in
  the consuming statement (views are free and allocate nothing);
* ``getitem`` nodes select one output of a multi-output operator;
* in-place ATen ops (``relu_``...) are rewritten to their out-of-place form when
  the mutated value has no later reader (else the import refuses, naming the node);
* placeholders are graph inputs; parameters and buffers are pinned; the model's
  example inputs are not pinned (the program may drop them after their last use);
* the FX graph's outputs are the required outputs;
* an operator's cost is its FLOP count (``torch.utils.flop_counter``), or the number
  of output elements for ops without a FLOP formula;
* an operator's workspace is measured: the high-water mark of the allocator during
  the op above its outputs' bytes (e.g. a convolution's scratch buffers).

Programs that run a schedule of an imported graph live in
:mod:`memsched.solvers.executors.fx`.

torch is imported lazily; everything here needs ``pip install 'memsched[torch]'``.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

from memsched.formulations import Graph, MemschedError, Operator, Tensor

__all__ = ["TorchImportError", "ImportedModel", "import_model"]


class TorchImportError(MemschedError):
    """The model cannot be imported (torch missing, unsupported in-place op, ...)."""


@dataclass
class ImportedModel:
    graph: Graph
    gm: object  # torch.fx.GraphModule (ATen level)
    op_node: dict[str, str]  # operator name -> FX node name
    placeholder_tensor: dict[str, str]  # FX placeholder name -> tensor name
    node_tensors: dict[str, list[str | None]]  # compute node -> tensor name per output position
    view_nodes: set[str] = field(default_factory=set)
    input_specs: dict[str, tuple] = field(default_factory=dict)  # tensor -> (shape, dtype str, kind)
    training: bool = False
    multi_nodes: set[str] = field(default_factory=set)  # compute nodes returning a tuple/list


def _torch():
    try:
        import torch
    except ImportError:
        raise TorchImportError("importing a torch model needs PyTorch: pip install 'memsched[torch]'") from None
    return torch


def _flat_tensors(x, out=None):
    torch = _torch()
    out = [] if out is None else out
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _flat_tensors(y, out)
    return out


def _storage_key(t):
    return t.untyped_storage().data_ptr()


def _storage_bytes(t) -> int:
    return int(t.untyped_storage().nbytes())


def _prepare_module(model, training: bool):
    """Make the module traceable functionally: no in-place activations, no dropout, and in
    training no running-statistics updates (a buffer mutation)."""
    torch = _torch()
    model.train(training)
    for m in model.modules():
        if hasattr(m, "inplace") and isinstance(m.inplace, bool):
            m.inplace = False
        if isinstance(m, torch.nn.Dropout) or type(m).__name__.startswith("Dropout"):
            m.p = 0.0
        if training and isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.track_running_stats = False
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
    return model


def _trace(model, example_inputs, training: bool):
    torch = _torch()
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functional_call

    params = {k: v.detach().clone().contiguous() for k, v in model.named_parameters()}
    buffers = {k: v.detach().clone().contiguous() for k, v in model.named_buffers() if v is not None}
    pnames, bnames = list(params), list(buffers)
    n_p, n_b = len(pnames), len(bnames)

    def f(*flat):
        p = dict(zip(pnames, flat[:n_p]))
        b = dict(zip(bnames, flat[n_p:n_p + n_b]))
        xs = flat[n_p + n_b:]
        out = functional_call(model, {**p, **b}, tuple(xs))
        if not training:
            return out
        outs = _flat_tensors(out)
        loss = outs[0].float().sum()
        for o in outs[1:]:
            loss = loss + o.float().sum()
        grads = torch.autograd.grad(loss, list(p.values()), allow_unused=True)
        return (loss, *[g for g in grads if g is not None])  # unused parameters have no gradient

    xs = [x.detach().clone().contiguous() for x in example_inputs]
    args = ([v.requires_grad_(training) for v in params.values()] + list(buffers.values()) + xs)
    ctx = torch.enable_grad() if training else torch.no_grad()
    with ctx:
        gm = make_fx(f)(*args)
    kinds = ["param"] * n_p + ["buffer"] * n_b + ["input"] * len(xs)
    labels = pnames + bnames + [f"input{k}" for k in range(len(xs))]
    values = [a.detach() for a in args]
    return gm, values, kinds, labels


def _is_alias_op(n) -> bool:
    torch = _torch()
    if n.op != "call_function":
        return False
    if n.target is operator.getitem:
        return _is_alias_op(n.args[0])
    if not isinstance(n.target, torch._ops.OpOverload):
        return False
    rets = n.target._schema.returns
    return bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


def _alias_family(node) -> set:
    """``node``'s storage root and every FX node that is a view of it (transitively)."""
    root = node
    while _is_alias_op(root) and root.args and hasattr(root.args[0], "op"):
        root = root.args[0]
    fam, todo = {root}, [root]
    while todo:
        a = todo.pop()
        for u in a.users:
            if u not in fam and _is_alias_op(u) and u.args and u.args[0] is a:
                fam.add(u)
                todo.append(u)
    return fam


def _functionalize_inplace(gm) -> None:
    """Rewrite in-place ATen ops to out-of-place ones when the mutated value is not read later."""
    torch = _torch()
    nodes = list(gm.graph.nodes)
    pos = {n: k for k, n in enumerate(nodes)}
    for n in nodes:
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
            continue
        schema = n.target._schema
        writes = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        if not writes:
            continue
        if writes[0].name == "self" and schema.name.endswith("_"):
            base = n.args[0]
            family = _alias_family(base)
            later = [u for a in family for u in a.users if u is not n and pos[u] > pos[n]]
            if later:
                raise TorchImportError(f"FX node {n.name!r} ({n.target}): in-place update of {base.name!r}, "
                                       f"which {later[0].name!r} reads later; cannot make it functional")
            packet = n.target.overloadpacket
            fname = packet.__name__.rstrip("_")
            fpacket = getattr(torch.ops.aten, fname, None)
            overload = getattr(fpacket, n.target._overloadname, None) if fpacket is not None else None
            if overload is None:
                raise TorchImportError(f"FX node {n.name!r}: in-place op {n.target} has no out-of-place form")
            n.target = overload
        else:
            raise TorchImportError(f"FX node {n.name!r}: op {n.target} writes to an argument (out= variant?)")
    gm.graph.lint()
    gm.recompile()


def _node_flops(target, args, kwargs) -> int:
    _torch()  # the clear error when torch is absent
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with FlopCounterMode(display=False) as fc:
            target(*args, **kwargs)
        return int(fc.get_total_flops())
    except Exception:  # a FLOP count is best effort
        return 0


class _Importer:
    """Walks the ATen-level FX graph once, running each node on the example values, and
    collects the memsched operators and tensors (see the module docstring): one method
    per node kind. Views and ``getitem`` make no operator; they record which tensors
    (``alias_of``) the node's value stands for."""

    def __init__(self, values, kinds, labels, measure_workspace: bool):
        self.values, self.kinds, self.labels = values, kinds, labels
        self.measure_workspace = measure_workspace
        self.env: dict = {}  # FX node name -> value
        self.storage_tensor: dict[int, str] = {}  # storage ptr -> tensor name (live storages)
        self.tensors: list[Tensor] = []
        self.ops: list[Operator] = []
        self.pinned: set[str] = set()
        self.op_node: dict[str, str] = {}
        self.node_tensors: dict[str, list] = {}
        self.placeholder_tensor: dict[str, str] = {}
        self.view_nodes: set[str] = set()
        self.multi_nodes: set[str] = set()
        self.input_specs: dict[str, tuple] = {}
        self.alias_of: dict[str, list] = {}  # node -> per-position tensor names
        self.outputs: list[str] = []
        self.ph = 0

    def names_of(self, arg) -> list[str]:
        """The tensor names an FX argument (nested lists, kwargs) refers to, in order, once each."""
        from torch.fx.node import map_arg

        names: list[str] = []

        def visit(a):
            for t in self.alias_of.get(getattr(a, "name", None), ()):
                if t is not None and t not in names:
                    names.append(t)
            return a
        map_arg(arg, visit)
        return names

    def node(self, n) -> None:
        from torch.fx.node import map_arg

        if n.op == "placeholder":
            return self.placeholder(n)
        if n.op == "output":
            self.outputs.extend(t for t in self.names_of(n.args[0]) if t not in self.outputs)
            return
        if n.op != "call_function":
            raise TorchImportError(f"FX node {n.name!r}: unsupported node kind {n.op!r}")
        args = map_arg(n.args, lambda a: self.env[a.name])
        kwargs = map_arg(n.kwargs, lambda a: self.env[a.name])
        if n.target is operator.getitem:
            return self.getitem(n, args)
        self.call(n, args, kwargs)

    def placeholder(self, n) -> None:
        """A graph input (kind "input") or a parameter/buffer (pinned)."""
        v, kind = self.values[self.ph], self.kinds[self.ph]
        tname = n.name
        self.tensors.append(Tensor(tname, _storage_bytes(v)))
        if kind != "input":
            self.pinned.add(tname)
        self.input_specs[tname] = (tuple(v.shape), str(v.dtype).replace("torch.", ""), kind, self.labels[self.ph])
        self.placeholder_tensor[n.name] = tname
        self.storage_tensor[_storage_key(v)] = tname
        self.alias_of[n.name] = [tname]
        self.env[n.name] = v
        self.ph += 1

    def getitem(self, n, args) -> None:
        """An item of a multi-output operator (that output's tensor) or of a view's result
        (whatever the view aliases)."""
        src = n.args[0]
        self.env[n.name] = args[0][args[1]]
        if src.name in self.node_tensors:
            self.alias_of[n.name] = [self.node_tensors[src.name][args[1]]]
        else:
            self.alias_of[n.name] = list(self.alias_of[src.name])

    def call(self, n, args, kwargs) -> None:
        """Run the node; a view when every output shares an input's storage, else an
        allocating operator with one tensor per new storage."""
        in_tensors = self.names_of((n.args, n.kwargs))
        in_storages = {_storage_key(t) for t in _flat_tensors([args, list(kwargs.values())])}
        before = _alloc_probe_start() if self.measure_workspace else None
        val = n.target(*args, **kwargs)
        trans = _alloc_probe_stop(before) if self.measure_workspace else None
        self.env[n.name] = val
        outs = _flat_tensors(val)

        def shares(o):
            return _storage_key(o) in in_storages and o.untyped_storage().nbytes() > 0
        aliased = [o for o in outs if shares(o)]
        fresh = [o for o in outs if not shares(o)]
        if outs and not fresh:  # a view: consumers read the base tensors
            self.view_nodes.add(n.name)
            self.alias_of[n.name] = [self.storage_tensor[_storage_key(o)] for o in aliased]
            return
        if aliased:
            raise TorchImportError(f"FX node {n.name!r} ({n.target}): returns both views and new tensors")
        multi = isinstance(val, (list, tuple))
        per_pos, out_names = self.new_tensors(n, val if multi else [val], multi)
        ws = 0 if trans is None else max(0, trans[0] - sum(_storage_bytes(o) for o in fresh))
        flops = _node_flops(n.target, args, kwargs)
        cost = float(flops) if flops > 0 else float(sum(o.numel() for o in fresh) or 1)
        self.ops.append(Operator(n.name, tuple(in_tensors), tuple(out_names), cost, ws))
        self.op_node[n.name] = n.name
        self.node_tensors[n.name] = per_pos
        if multi:
            self.multi_nodes.add(n.name)
        self.alias_of[n.name] = per_pos if multi else [per_pos[0]]

    def new_tensors(self, n, items, multi: bool) -> tuple[list, list[str]]:
        """(tensor name per output position (None: not a tensor), the new tensor names):
        one tensor per distinct output storage; an operator without a tensor result gets
        an empty output so it stays an operator."""
        torch = _torch()
        per_pos: list[str | None] = []
        out_names: list[str] = []
        for k, item in enumerate(items):
            if not isinstance(item, torch.Tensor):
                per_pos.append(None)
                continue
            key = _storage_key(item)
            if key in self.storage_tensor and self.storage_tensor[key] in out_names:
                per_pos.append(self.storage_tensor[key])
                continue
            tname = f"{n.name}.{k}" if multi else n.name
            self.tensors.append(Tensor(tname, _storage_bytes(item)))
            self.storage_tensor[key] = tname
            out_names.append(tname)
            per_pos.append(tname)
        if not out_names:
            tname = f"{n.name}.none"
            self.tensors.append(Tensor(tname, 0))
            out_names.append(tname)
        return per_pos, out_names

    def graph(self, model, training: bool, name: str) -> Graph:
        meta = {"source": "torch.fx make_fx (ATen)", "model": type(model).__name__, "training": training,
                "input_specs": {k: list(v) for k, v in self.input_specs.items()}, "fx_view_nodes": len(self.view_nodes),
                "cost_unit": "FLOPs (output elements for ops without a FLOP formula)",
                "workspace": "measured allocator high-water mark above the outputs"}
        return Graph(self.ops, self.tensors, pinned=frozenset(self.pinned), outputs=tuple(self.outputs),
                     order=tuple(o.name for o in self.ops), name=name, meta=meta)


def import_model(model, example_inputs, *, training: bool = False, name: str | None = None,
                 measure_workspace: bool = True, threads: int = 1) -> ImportedModel:
    """Trace ``model`` on ``example_inputs`` into a memsched Graph (module docstring).

    Parameters
    ----------
    model : torch.nn.Module
    example_inputs : tuple of torch.Tensor
    training : bool
        Trace one training step (forward, loss, backward, parameter gradients) instead of
        inference.
    name : str, optional
        The graph's name (default: the model's class name, ``_train`` appended when training).
    measure_workspace : bool
        Measure each operator's transient workspace with the allocator probe.
    threads : int
        torch threads while tracing (1: deterministic FLOP and workspace figures).

    Returns
    -------
    ImportedModel
        The graph and the maps from its operators and tensors back to the FX graph.

    Deterministic for a fixed model and inputs. O(FX nodes) plus running every node once.
    """
    torch = _torch()

    torch.set_num_threads(threads)
    model = _prepare_module(model, training)
    example_inputs = tuple(example_inputs)
    gm, values, kinds, labels = _trace(model, example_inputs, training)
    _functionalize_inplace(gm)
    name = name or f"{type(model).__name__}{'_train' if training else ''}"
    imp = _Importer(values, kinds, labels, measure_workspace)
    for n in gm.graph.nodes:
        imp.node(n)
    return ImportedModel(imp.graph(model, training, name), gm, imp.op_node, imp.placeholder_tensor,
                         imp.node_tensors, imp.view_nodes, imp.input_specs, training, imp.multi_nodes)


# ---------------------------------------------------------------- allocator probe
_PROBE: dict = {}


def _alloc_probe_start():
    _torch()  # the clear error when torch is absent
    from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
    from torch.autograd import ProfilerConfig, ProfilerState, _enable_profiler, _prepare_profiler

    cfg = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
    _prepare_profiler(cfg, {ProfilerActivity.CPU})
    _enable_profiler(cfg, {ProfilerActivity.CPU})
    return True


def _alloc_probe_stop(_):
    """(high-water mark above the start, net change) of the CPU allocator during the probe."""
    from torch.autograd import _disable_profiler

    res = _disable_profiler()
    ev = []

    def walk(node):
        f = node.extra_fields
        if type(f).__name__ == "_ExtraFields_Allocation":
            ev.append((node.start_time_ns, int(f.alloc_size)))
        for c in node.children:
            walk(c)
    for r in res.experimental_event_tree():
        walk(r)
    ev.sort()
    cur = hi = 0
    for _, d in ev:
        cur += d
        hi = max(hi, cur)
    return hi, cur
