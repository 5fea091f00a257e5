"""Run PyTorch Inductor's own ``reorder_for_peak_memory`` on a memsched graph.

``torch._inductor.memory.reorder_for_peak_memory(nodes, name_to_buf, name_to_fused_node,
graph_inputs, graph_outputs)`` is the pass Inductor runs on its scheduler nodes (with
``config.reorder_for_peak_memory``): it estimates the peak of the given order and of
``topological_sort_lpmf``, ``topological_sort_bfs`` and ``topological_sort_dfs`` and returns
the order of least *estimated* peak. It reads, of each node, ``get_name()``,
``get_outputs()``, ``get_buffer_names()``, ``read_writes.reads`` and ``unmet_dependencies``
(dependency objects with a ``name``); of each buffer ``get_name()`` and its IR node's
``layout``, ``get_numel()`` and ``get_dtype()``; and from the virtualized graph handler
``V.graph``: ``get_dep_size_hint(dep)``, ``sizevars.optimization_hint(expr, fallback)``,
``scheduler.mutation_real_name`` and ``name``. Nothing else of Inductor (no lowering, no
code generation, no GPU) is involved, so the pass is driven here on memsched's operators
directly: one scheduler node per operator (in the given order), one buffer per produced
tensor (size in bytes: dtype ``uint8``, numel = bytes), ``StarDep`` reads, a small graph
handler answering the four queries, and the unmodified function does the rest.

Mapping of the semantics: Inductor's estimate counts buffers from their producer's step
through their last reader's step, graph outputs to the end, freeable graph inputs from the
start; graph inputs whose names start with ``primals_`` / ``arg`` / ``tangents`` are not
freeable and not counted. memsched's pinned inputs are given such names (resident
throughout: a constant in both models); its other inputs are freeable. Inductor has no
operator workspace. The returned order is judged by memsched's evaluator; the pass's own
estimates are returned alongside (``estimates``), and equal the evaluator's peak of the
same order when the graph has no workspace (tests/test_order_inductor_pass.py).

Requires torch (imported when called). O(n^2) in the worst case (Inductor's LPMF scans all
ready nodes at every step).
"""
from __future__ import annotations

from memsched.formulations import Graph

__all__ = ["inductor_reorder"]


class _Layout:  # neither NoneLayout nor MultiOutputLayout: a plain buffer
    pass


class _IRNode:
    def __init__(self, nbytes: int, dtype):
        self.layout = _Layout()
        self._n, self._dtype = nbytes, dtype

    def get_numel(self) -> int:
        return self._n

    def get_dtype(self):
        return self._dtype


class _Buffer:
    def __init__(self, name: str, nbytes: int, dtype):
        self.name, self.node, self.users = name, _IRNode(nbytes, dtype), []

    def get_name(self) -> str:
        return self.name

    def debug_str(self) -> str:
        return self.name


class _ReadWrites:
    def __init__(self, reads):
        self.reads = reads


class _Node:
    def __init__(self, name: str, outputs: list[_Buffer], reads: list):
        self.name, self.outputs = name, outputs
        self.read_writes = _ReadWrites(reads)
        self.unmet_dependencies = [d for d in reads if not d.name.startswith(("primals_", "in_"))]

    def get_name(self) -> str:
        return self.name

    def get_outputs(self) -> list[_Buffer]:
        return self.outputs

    def get_buffer_names(self) -> list[str]:
        return [b.name for b in self.outputs]

    def debug_str(self) -> str:
        return self.name


class _Sizevars:
    @staticmethod
    def optimization_hint(expr, fallback=0):
        return int(expr)


class _Scheduler:
    mutation_real_name: dict = {}


class _GraphHandler:
    """The four queries ``memory.py`` makes of ``V.graph``."""

    name = ""

    def __init__(self, sizes: dict[str, int]):
        self.sizes = sizes
        self.sizevars = _Sizevars()
        self.scheduler = _Scheduler()

    def get_dep_size_hint(self, dep) -> int:
        return self.sizes[dep.name]


def _build(g: Graph):
    """Scheduler-node stand-ins for the operators of ``g`` (given order), the buffer table,
    graph inputs / outputs, the graph handler and a name -> operator map."""
    import torch
    from torch._inductor.dependencies import StarDep
    from torch.utils._ordered_set import OrderedSet

    kept = g.pinned_idx | g.output_idx

    def tname(j: int) -> str:
        if g.producer[j] == -1:
            return f"primals_{j}" if j in kept else f"in_{j}"
        return f"buf{j}"

    sizes = {tname(j): g.size[j] for j in range(g.n_tensors)}
    bufs = {j: _Buffer(tname(j), g.size[j], torch.uint8) for j in range(g.n_tensors) if g.producer[j] != -1}
    nodes, by_name = [], {}
    for v in g.given_order():
        reads = [StarDep(tname(j)) for j in dict.fromkeys(g.op_in[v])]
        nd = _Node(f"op{v}", [bufs[j] for j in g.op_out[v]], reads)
        nodes.append(nd)
        by_name[nd.name] = v
    name_to_buf = {b.name: b for b in bufs.values()}
    name_to_fused = {b.name: nd for nd in nodes for b in nd.outputs}
    graph_inputs = OrderedSet(tname(j) for j in g.input_idx)
    graph_outputs = OrderedSet(tname(j) for j in g.output_idx)
    return nodes, name_to_buf, name_to_fused, graph_inputs, graph_outputs, _GraphHandler(sizes), by_name


def inductor_reorder(g: Graph) -> tuple[list[int], dict]:
    """The order PyTorch Inductor's ``reorder_for_peak_memory`` picks for ``g``.

    Parameters
    ----------
    g : Graph

    Returns
    -------
    (order, info)
        ``order``: operator indices, a topological order of ``g``. ``info``: ``estimates``
        (Inductor's own peak estimate of the baseline and of each method's order, in bytes,
        without the inputs it treats as not freeable: memsched's pinned and required
        inputs), ``orders`` (each method's order, operator indices), ``method`` (the first
        whose order is the one returned) and ``torch`` (its version).

    Complexity: that of the pass (LPMF is O(n^2) there), plus O(n + E) to build the nodes.
    """
    import torch
    from torch._inductor import memory as M
    from torch._inductor.virtualized import V

    nodes, name_to_buf, name_to_fused, gin, gout, handler, by_name = _build(g)
    methods = [M.topological_sort_lpmf, M.topological_sort_bfs, M.topological_sort_dfs]
    estimates: dict[str, int] = {}
    orders: dict[str, list[int]] = {}
    with V.set_graph_handler(handler):
        best = M.reorder_for_peak_memory(nodes, name_to_buf, name_to_fused, gin, gout, methods=methods)
        # the pass logs its estimates only; the same estimator on the orders its methods
        # return (the planning info is rebuilt exactly as the pass builds it)
        _, free_in = M.prepare_planning_info(nodes, name_to_buf, name_to_fused, gin, gout)
        estimates["baseline"] = M.estimate_peak_memory(nodes, free_in, gout)[0]
        orders["baseline"] = [by_name[x.name] for x in nodes]
        for m in methods:
            o = m(nodes, free_in, name_to_buf, gout) if m is M.topological_sort_lpmf else m(nodes)
            key = m.__name__.replace("topological_sort_", "")
            estimates[key] = M.estimate_peak_memory(o, free_in, gout)[0]
            orders[key] = [by_name[x.name] for x in o]
    order = [by_name[nd.name] for nd in best]
    method = next(k for k, o in orders.items() if o == order)
    return order, {"estimates": estimates, "orders": orders, "method": method, "torch": torch.__version__}
