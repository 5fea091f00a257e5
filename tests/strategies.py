"""Shared hypothesis strategies for random graphs and schedules.

Import from any test file (tests/ is on sys.path via conftest.py)::

    from strategies import random_graphs, random_trees, random_schedules, topological_orders

* ``random_graphs(max_ops=9, multi_output=True, ...)`` -- validated Graphs exercising
  every feature: graph inputs (some pinned), multi-output operators, workspace,
  required outputs (produced tensors or inputs), float costs, a random given order.
* ``random_trees(max_ops=9, ...)`` -- in-trees/forests (every operator consumed by at
  most one operator), multi-input, optionally multi-output, pinned inputs, required
  outputs, workspace, and sometimes an unpinned graph input.
* ``single_output_graphs(max_ops=9)`` -- Checkmate-style graphs (one output per op, no
  inputs/pinned/required/workspace) that survive node-link export unchanged.
* ``random_schedules(graph)`` -- event schedules, valid and invalid, with
  recomputation; ``valid_schedules(graph)`` only valid ones (checked by construction).
* ``topological_orders(graph)`` -- a uniformly shuffled Kahn order of operator indices.
"""
from __future__ import annotations

from hypothesis import strategies as st

from memsched.formulations import COMPUTE, FREE, Graph, Operator, Schedule, Tensor


def _distinct(draw, items: list, k: int) -> list:
    """k distinct items in random order (a partial Fisher-Yates shuffle: k draws, where
    ``st.permutations(items)[:k]`` draws one per item)."""
    pool = list(items)
    for m in range(k):
        i = draw(st.integers(m, len(pool) - 1))
        pool[m], pool[i] = pool[i], pool[m]
    return pool[:k]


@st.composite
def random_graphs(draw, max_ops: int = 9, min_ops: int = 1, multi_output: bool = True, max_inputs: int = 2,
                  max_size: int = 20, workspace: bool = True, pinned: bool = True, required: bool = True,
                  max_fan_in: int = 3) -> Graph:
    n = draw(st.integers(min_ops, max_ops))
    n_in = draw(st.integers(0, max_inputs))
    tensors = [Tensor(f"in{k}", draw(st.integers(0, max_size))) for k in range(n_in)]
    avail = [t.name for t in tensors]
    ops = []
    for i in range(n):
        k = draw(st.integers(0, min(max_fan_in, len(avail))))
        ins = tuple(_distinct(draw, avail, k))
        n_out = draw(st.integers(1, 3)) if multi_output else 1
        outs = tuple(f"t{i}" if n_out == 1 else f"t{i}_{m}" for m in range(n_out))
        tensors += [Tensor(t, draw(st.integers(0, max_size))) for t in outs]
        cost = draw(st.one_of(st.integers(0, 10).map(float), st.floats(0, 10, allow_nan=False, allow_infinity=False)))
        ws = draw(st.integers(0, max_size)) if workspace and draw(st.booleans()) else 0
        ops.append(Operator(f"op{i}", ins, outs, cost, ws))
        avail += list(outs)
    pins = frozenset(t for t in avail[:n_in] if pinned and draw(st.booleans()))
    outs_req = tuple(t for t in avail if required and draw(st.integers(0, 4)) == 0)
    g = Graph(ops, tensors, pinned=pins, outputs=outs_req, name="hyp")
    order = draw(topological_orders(g))
    return Graph(ops, tensors, pinned=pins, outputs=outs_req, order=tuple(g.ops[i].name for i in order), name="hyp")


@st.composite
def single_output_graphs(draw, max_ops: int = 9, min_ops: int = 1, max_size: int = 50) -> Graph:
    n = draw(st.integers(min_ops, max_ops))
    nodes = [(f"v{i}", draw(st.integers(0, max_size)), float(draw(st.integers(0, 10)))) for i in range(n)]
    edges = []
    for j in range(1, n):
        for i in draw(st.sets(st.integers(0, j - 1), max_size=3)):
            edges.append((f"v{i}", f"v{j}"))
    g = Graph.from_single_output(nodes, edges, name="hyp_so")
    order = draw(topological_orders(g))
    return Graph.from_single_output(nodes, edges, name="hyp_so", order=[g.ops[i].name for i in order])


@st.composite
def random_trees(draw, max_ops: int = 9, min_ops: int = 1, multi_output: bool = True, max_size: int = 12,
                 workspace: bool = True, pinned: bool = True, required: bool = True, forest: bool = True,
                 free_inputs: bool = True) -> Graph:
    n = draw(st.integers(min_ops, max_ops))
    parent = []
    for i in range(n):
        if i == n - 1 or (forest and draw(st.integers(0, 7)) == 0):
            parent.append(None)
        else:
            parent.append(draw(st.integers(i + 1, n - 1)))
    tensors, ins = [], {i: [] for i in range(n)}
    outs, req = {}, []
    for i in range(n):
        k = draw(st.integers(1, 2)) if multi_output else 1
        outs[i] = [f"t{i}" if k == 1 else f"t{i}_{m}" for m in range(k)]
        for m, t in enumerate(outs[i]):
            tensors.append(Tensor(t, draw(st.integers(0, max_size))))
            if parent[i] is not None and (m == 0 or draw(st.booleans())):
                ins[parent[i]].append(t)
            if required and draw(st.integers(0, 5)) == 0:
                req.append(t)
    pins = []
    if pinned and draw(st.booleans()):
        tensors.append(Tensor("w", draw(st.integers(0, max_size))))
        pins.append("w")
        for i in range(n):
            if draw(st.booleans()):
                ins[i].append("w")
    if free_inputs and draw(st.integers(0, 3)) == 0:  # an unpinned input: Liu is then a heuristic
        tensors.append(Tensor("x", draw(st.integers(0, max_size))))
        for i in range(n):
            if draw(st.booleans()):
                ins[i].append("x")
    ops = [Operator(f"op{i}", tuple(ins[i]), tuple(outs[i]), float(draw(st.integers(0, 5))),
                    draw(st.integers(0, max_size)) if workspace and draw(st.booleans()) else 0) for i in range(n)]
    g = Graph(ops, tensors, pinned=frozenset(pins), outputs=tuple(req), name="hyp_tree")
    order = draw(topological_orders(g))
    return Graph(ops, tensors, pinned=frozenset(pins), outputs=tuple(req),
                 order=tuple(g.ops[i].name for i in order), name="hyp_tree")


def _topological_order(g: Graph, pick) -> list[int]:
    """Kahn's algorithm; ``pick(k)`` chooses which of the k ready operators runs next."""
    succ = g.op_succ()
    indeg = [len(p) for p in g.op_pred()]
    ready = [i for i in range(g.n_ops) if indeg[i] == 0]
    order = []
    while ready:
        v = ready.pop(pick(len(ready)))
        order.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    return order


@st.composite
def topological_orders(draw, g: Graph) -> list[int]:
    return _topological_order(g, lambda k: draw(st.integers(0, k - 1)))


def random_topological_order(g: Graph, rng) -> list[int]:
    """A topological order drawn with ``rng`` (a ``random.Random``): each step runs a
    uniformly chosen ready operator."""
    return _topological_order(g, rng.randrange)


def _complete(g: Graph, events: list, resident: set, computed: set, budget: int = 200) -> None:
    """Append events that (try to) finish a schedule validly: compute every operator not
    yet computed (recomputing freed inputs first), then restore required outputs."""

    def ensure(t, depth=0):
        if t in resident or depth > 20 or len(events) > budget:
            return
        p = g.producer[t]
        if p == -1:
            return  # a freed graph input cannot come back: the schedule stays invalid
        for _ in range(3):
            for j in g.op_in[p]:
                ensure(j, depth + 1)
            if all(j in resident for j in g.op_in[p]):
                break
        for j in g.op_out[p]:
            if j in resident:
                events.append((FREE, j))
                resident.discard(j)
        events.append((COMPUTE, p))
        resident.update(g.op_out[p])
        computed.add(p)

    for v in g.topological_order():
        if v in computed:
            continue
        for _ in range(3):
            for j in g.op_in[v]:
                ensure(j)
            if all(j in resident for j in g.op_in[v]):
                break
        for j in g.op_out[v]:
            if j in resident:
                events.append((FREE, j))
                resident.discard(j)
        events.append((COMPUTE, v))
        resident.update(g.op_out[v])
        computed.add(v)
    for j in sorted(g.output_idx):
        ensure(j)


def _random_legal_event(draw, g: Graph, events: list, resident: set, computed: set, freeable) -> bool:
    """Draw one legal event (compute an op whose inputs are resident and outputs are not,
    or free a resident tensor with ``freeable(j)``), append it and apply it; False when
    no event is legal."""
    legal_c = [v for v in range(g.n_ops)
               if all(j in resident for j in g.op_in[v]) and not any(j in resident for j in g.op_out[v])]
    legal_f = sorted(j for j in resident if freeable(j))
    choices = [(COMPUTE, v) for v in legal_c] + [(FREE, j) for j in legal_f]
    if not choices:
        return False
    ev = draw(st.sampled_from(choices))
    events.append(ev)
    if ev[0] == COMPUTE:
        resident.update(g.op_out[ev[1]])
        computed.add(ev[1])
    else:
        resident.discard(ev[1])
    return True


@st.composite
def random_schedules(draw, g: Graph, max_events: int = 30, p_random: float = 0.15, complete: bool = True) -> Schedule:
    """Mostly legal events (computes whose inputs are resident, frees of resident unpinned
    tensors), a fraction ``p_random`` of arbitrary events (including out-of-range indices),
    then optionally a completion phase; recomputation happens naturally."""
    resident = set(g.input_idx)
    computed: set[int] = set()
    events: list[tuple[int, int]] = []
    k = draw(st.integers(0, max_events))
    for _ in range(k):
        if draw(st.floats(0, 1)) < p_random:
            kind = draw(st.sampled_from([COMPUTE, FREE]))
            hi = (g.n_ops if kind == COMPUTE else g.n_tensors)
            x = draw(st.integers(-1, hi))
            events.append((kind, x))
            if kind == COMPUTE and 0 <= x < g.n_ops:
                resident.update(g.op_out[x])
                computed.add(x)
            elif kind == FREE:
                resident.discard(x)
            continue
        if not _random_legal_event(draw, g, events, resident, computed, lambda j: j not in g.pinned_idx):
            break
    if complete and draw(st.integers(0, 4)) > 0:
        _complete(g, events, resident, computed)
    return Schedule(tuple(events))


@st.composite
def valid_schedules(draw, g: Graph, max_events: int = 30) -> Schedule:
    """Valid schedules (with frees and recomputation): legal random prefix + completion.
    Graph inputs are never freed, so completion always succeeds."""
    resident = set(g.input_idx)
    computed: set[int] = set()
    events: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(0, max_events))):
        if not _random_legal_event(draw, g, events, resident, computed, lambda j: g.producer[j] != -1):
            break
    _complete(g, events, resident, computed, budget=10_000)
    return Schedule(tuple(events))
