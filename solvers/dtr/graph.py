"""Traces and memsched graphs.

* :func:`trace_to_graph`: a DTR trace as a memsched :class:`Graph` (forward+backward
  DAG) so that the exact solvers can solve the same training step.
* :func:`graph_to_trace`: a memsched Graph (given order) as a DTR operation sequence.
* :func:`replay_graph`: replay that sequence with the DTR runtime and return the
  schedule it performed (recomputations included) as a :class:`SolveResult`.

Accounting differences (docs/dtr.md): DTR charges an operator's full output size when it
runs, even for outputs already resident (a multi-output op recomputed for one output
counts the resident siblings twice while it runs); memsched requires those siblings to be
freed before the recompute, so the replayed schedule frees them just before, and the
evaluator's peak can be lower than DTR's own figure. The evaluator's peak is the one
returned (``extra['dtr_peak']`` keeps DTR's).
"""
from __future__ import annotations

import math
import time

from memsched.formulations import COMPUTE as S_COMPUTE
from memsched.formulations import FREE as S_FREE
from memsched.formulations import Graph, MemschedError, Operator, Schedule, Tensor
from memsched.instances.dtr_trace import COMPUTE, PIN, RELEASE, DTRTrace, TraceOp
from memsched.solvers.result import SolveResult, Status, make_result

from .runtime import Runtime, canonical_heuristic

__all__ = ["trace_to_graph", "graph_to_trace", "replay_graph"]


def trace_to_graph(trace: DTRTrace, *, name: str | None = None, max_ops: int | None = None) -> Graph:
    """The training step of ``trace`` as a memsched Graph.

    * constants (parameters, data) become pinned graph inputs;
    * alias outputs are collapsed onto the tensor whose storage they share (as simrd's
      Checkmate rewrite does); an operator whose outputs are all aliases disappears and
      its cost is dropped (``meta['dropped_view_cost']``), its consumers read the base;
    * MUTATE outputs are ordinary new tensors (simrd models mutation as a pure op);
    * required outputs: the tensors still referenced at the end of the log (the ones
      simrd pins), mapped through alias collapsing;
    * the given order is the log's order; costs are the logged nanoseconds;
    * ``max_ops``: only the first ``max_ops`` non-constant operators (a fragment of the
      step, e.g. for exact solvers); the required outputs are then the fragment's tensors
      that are read after it or still referenced at the end of the log, and only the
      constants it reads are kept.
    """
    ops_out: list[Operator] = []
    tensors: list[Tensor] = []
    pinned: list[str] = []
    base_of: dict[int, int] = {}  # trace tensor -> trace tensor owning its storage
    tname: dict[int, str] = {}
    dropped = 0
    order = []

    def tn(t: int) -> str:
        return f"t{t}:{trace.tensor_names[t]}"

    cut = None
    if max_ops is not None:
        seen = 0
        for k, op in enumerate(trace.ops):
            if not op.is_constant:
                seen += 1
                if seen > max_ops:
                    cut = k
                    break
    later_reads: set[int] = set()
    if cut is not None:
        for op in trace.ops[cut:]:
            later_reads.update(op.args)
    for op in (trace.ops if cut is None else trace.ops[:cut]):
        if op.is_constant:
            t = op.results[0]
            base_of[t] = t
            tname[t] = tn(t)
            tensors.append(Tensor(tname[t], op.sizes[0]))
            pinned.append(tname[t])
            continue
        outs = []
        for i, t in enumerate(op.results):
            a = op.aliases[i]
            if a == -1:
                base_of[t] = t
                tname[t] = tn(t)
                tensors.append(Tensor(tname[t], op.sizes[i]))
                outs.append(tname[t])
            else:
                base_of[t] = base_of[op.args[a]]
        if not outs:
            dropped += op.cost
            continue
        ins: dict[str, None] = {}
        for a in op.args:
            nm = tname[base_of[a]]
            if nm not in outs:
                ins[nm] = None
        ops_out.append(Operator(op.name, tuple(ins), tuple(outs), float(op.cost)))
        order.append(op.name)
    outputs: dict[str, None] = {}
    for kind, x in trace.schedule:
        if kind == PIN and x in base_of:
            op = trace.ops[trace.tensor_op[x]]
            if op.is_constant:
                continue
            nm = tname[base_of[x]]
            if nm not in pinned:
                outputs[nm] = None
    for x in sorted(later_reads):
        if x in base_of and not trace.ops[trace.tensor_op[base_of[x]]].is_constant:
            outputs[tname[base_of[x]]] = None
    if cut is not None:
        used = {t for op in ops_out for t in op.inputs}
        keep_pinned = [p for p in pinned if p in used]
        drop = set(pinned) - set(keep_pinned)
        tensors = [t for t in tensors if t.name not in drop]
        pinned = keep_pinned
    return Graph(ops_out, tensors, pinned=frozenset(pinned), outputs=tuple(outputs), order=tuple(order),
                 name=name or str(trace.path).split("/")[-1],
                 meta={"source": "dtr-trace", "dropped_view_cost": dropped})


def graph_to_trace(graph: Graph) -> tuple[DTRTrace, list[int], list[int]]:
    """The DTR operation sequence of ``graph`` in its given order.

    Returns ``(trace, op_of, tensor_of)``: ``op_of[k]`` is the graph operator of trace
    op k (-1 for an input's constant op), ``tensor_of[t]`` the graph tensor of trace
    tensor t. Every graph input becomes a
    constant, pinned for the whole run (an unpinned input is not freed after its last use,
    since DTR may need it to recompute an evicted tensor at any later time); each operator is computed in the given order; each tensor is released right
    after its last use (required outputs and pinned inputs never); required outputs are
    pinned at the end (rematerialized first if evicted), as simrd pins a log's outputs."""
    ops: list[TraceOp] = []
    names: list[str] = []
    t_op: list[int] = []
    t_idx: list[int] = []
    sched: list[tuple[int, int]] = []
    tid = [-1] * graph.n_tensors  # graph tensor -> trace tensor
    op_of: list[int] = []
    tensor_of: list[int] = []
    order = graph.given_order()
    pos = {i: k for k, i in enumerate(order)}
    last = [-2] * graph.n_tensors  # -2: never released; -1: release at start; k: after step k
    # every graph input stays resident: DTR cannot recompute an input, and an evicted
    # tensor may need one for its recomputation at any later time
    keep = graph.pinned_idx | graph.output_idx | frozenset(graph.input_idx)
    for j in range(graph.n_tensors):
        if j in keep:
            continue
        lu = max((pos[c] for c in graph.consumers[j]), default=-1)
        p = graph.producer[j]
        if p != -1:
            lu = max(lu, pos[p])
        last[j] = lu
    for j in graph.input_idx:
        t = len(names)
        tid[j] = t
        names.append(graph.tensors[j].name)
        t_op.append(len(ops))
        t_idx.append(0)
        tensor_of.append(j)
        ops.append(TraceOp(f"constant/{len(ops)}", 0, (graph.size[j],), (-1,), (), (t,), False, 0))
        op_of.append(-1)
        sched.append((COMPUTE, len(ops) - 1))
        sched.append((PIN, t))
    release_after: list[list[int]] = [[] for _ in order]
    for j in range(graph.n_tensors):
        if last[j] >= 0:
            release_after[last[j]].append(j)
    workspace = [0] * len(ops)
    for k, i in enumerate(order):
        res = []
        for idx, j in enumerate(graph.op_out[i]):
            t = len(names)
            tid[j] = t
            names.append(graph.tensors[j].name)
            t_op.append(len(ops))
            t_idx.append(idx)
            tensor_of.append(j)
            res.append(t)
        args = tuple(tid[j] for j in graph.op_in[i])
        sizes = tuple(graph.size[j] for j in graph.op_out[i])
        ops.append(TraceOp(f"{graph.ops[i].name}/{len(ops)}", graph.cost[i], sizes, (-1,) * len(sizes), args,
                           tuple(res), False, 0))
        workspace.append(graph.workspace[i])
        op_of.append(i)
        sched.append((COMPUTE, len(ops) - 1))
        for j in release_after[k]:
            sched.append((RELEASE, tid[j]))
    for j in sorted(graph.output_idx):
        if j not in graph.pinned_idx:
            sched.append((PIN, tid[j]))
    tr = DTRTrace(path=f"<graph {graph.name}>", ops=ops, tensor_names=names, tensor_op=t_op, tensor_index=t_idx,
                  schedule=sched, has_start=False, meta={"workspace": workspace})
    return tr, op_of, tensor_of


def replay_graph(graph: Graph, budget_bytes: int, heuristic: str = "dtr", overhead_limit: float = 2.0,
                 *, seed: int = 0, timeout: float | None = None) -> SolveResult:
    """Replay ``graph`` (its given order) with the DTR runtime under ``budget_bytes``.

    Graph inputs are all kept resident (DTR cannot recompute them), so the budget must
    hold every input for the whole run. On success: status 'feasible', the schedule the
    runtime performed (compute events including recomputations, free events for eager
    releases and evictions), re-checked by the evaluator through make_result (objective 'compute';
    ``peak`` is the evaluator's). On OOM or when the recompute limit
    ``total_cost x (overhead_limit - 1)`` is exceeded: status 'infeasible' with a message.
    ``timeout`` seconds (optional): past it the replay stops with status 'timeout' (no
    schedule; neither feasible nor infeasible)."""
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, (int, float)) or budget_bytes < 0:
        raise MemschedError(f"replay_graph: budget_bytes must be a non-negative number, got {budget_bytes!r}")
    h = canonical_heuristic(heuristic)
    t0 = time.perf_counter()
    tr, op_of, tensor_of = graph_to_trace(graph)
    total = graph.total_cost()
    limit = total * (overhead_limit - 1) if not math.isinf(overhead_limit) else math.inf
    rt = Runtime(tr, budget_bytes, h, remat_limit=limit, record=True, seed=seed,
                 workspace=tr.meta["workspace"],
                 deadline=None if timeout is None else time.perf_counter() + timeout)
    params = {"budget": budget_bytes, "heuristic": h, "overhead_limit": overhead_limit}
    try:
        out = rt.run()
    except TimeoutError:
        return SolveResult(solver="dtr-replay", status=Status.TIMEOUT, wall_s=time.perf_counter() - t0,
                           params=params, objective="compute",
                           message=f"DTR ({h}) replay stopped after the {timeout} s timeout")
    wall = time.perf_counter() - t0
    extra = {"dtr_peak": rt.peak, "evictions": rt.evictions, "eager_evictions": rt.eager_evictions,
             "dtr_recomputations": rt.remat_count, "outcome": out}
    if out != "ok":
        f = rt.failure or {}
        opname = graph.ops[op_of[f["op"]]].name if f.get("op") is not None and op_of[f["op"]] >= 0 else "an input"
        if out == "oom":
            msg = (f"DTR ({h}) ran out of memory at budget {budget_bytes}: computing {opname} needs "
                   f"{f.get('requested')} bytes, {f.get('short')} bytes short with nothing evictable")
        else:
            msg = (f"DTR ({h}) exceeded the recompute limit {limit} (overhead limit {overhead_limit}) "
                   f"while computing {opname}")
        return SolveResult(solver="dtr-replay", status=Status.INFEASIBLE, wall_s=wall, params=params,
                           message=msg, extra=extra, objective="compute")
    events: list[tuple[int, int]] = []
    resident = [False] * graph.n_tensors
    for j in graph.input_idx:
        resident[j] = True
    for ev in rt.events:
        if ev[0] == "compute":
            op = ev[1]
            gi = op_of[op]
            if gi < 0:
                continue
            for u in ev[6]:  # duplicate siblings: memsched frees them before the recompute
                j = tensor_of[u]
                if resident[j]:
                    events.append((S_FREE, j))
                    resident[j] = False
            events.append((S_COMPUTE, gi))
            for j in graph.op_out[gi]:
                resident[j] = True
        else:
            s = ev[1]
            for u in rt.st_tensors[s]:
                j = tensor_of[u]
                if resident[j]:
                    events.append((S_FREE, j))
                    resident[j] = False
    sched = Schedule(tuple(events))
    claimed = rt.model_compute + rt.remat_compute
    return make_result(graph, sched, solver="dtr-replay", status=Status.FEASIBLE, objective="compute",
                       claimed=claimed, wall_s=wall, params=params, extra=extra)
