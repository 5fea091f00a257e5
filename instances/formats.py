"""Graph and schedule file formats (docs/format.md).

* native JSON ``{"format": "memsched-graph", "version": 1, ...}``: lossless;
* Checkmate/Moccasin node-link JSON (nodes ``id, name, cost_cpu, cost_ram``;
  links ``source -> target``), given order = networkx topological sort, as in
  Moccasin's benchmark protocol;
* random-layered node-link JSON (nodes ``name, out_cost, duration``; links
  with keys ``"0"``/``"1"``; ``graph.order``).

:func:`load_graph` detects the format from the content. Every problem raises
:class:`InputError` whose message names the file and, for JSON syntax errors,
the line and column.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memsched.formulations.errors import MemschedError
from memsched.formulations import Graph, GraphError, Operator, Schedule, ScheduleFormatError, Tensor

__all__ = [
    "InputError", "FORMAT_VERSION", "read_text", "load_graph", "graph_from_json", "graph_to_json", "save_graph",
    "graph_to_node_link", "load_schedule", "save_json",
]

FORMAT_VERSION = 1


class InputError(MemschedError):
    """A user-supplied file is unreadable or malformed. The message names the file."""


def read_text(path: str | Path, expected: str = "a JSON file") -> str:
    """The text of a user-supplied file; an unreadable one raises InputError naming it."""
    p = Path(path)
    try:
        if p.suffix == ".gz":  # gzip-compressed (the shipped corpus)
            import gzip

            try:
                with gzip.open(p, "rt") as f:
                    return f.read()
            except (gzip.BadGzipFile, EOFError) as e:
                raise InputError(f"{p}: not a readable gzip file: {e}") from None
        return p.read_text()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, expected {expected}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{p}: cannot read: {e}") from None


def _read_json(path: str | Path) -> Any:
    p = Path(path)
    text = read_text(p)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{p}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def _need(obj: dict, key: str, where: str):
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise InputError(f"{where}: missing field {key!r}")
    return obj[key]


def _list(obj: dict, key: str, where: str, *, required: bool = True) -> list:
    """A field that must be a JSON list (a string is iterable too, but "ab" is not ["a", "b"])."""
    v = _need(obj, key, where) if required else obj.get(key, [])
    if v is None and not required:
        return []
    if not isinstance(v, list):
        raise InputError(f"{where}: field {key!r} must be a list, got {type(v).__name__} {v!r:.60}")
    return v


# ----------------------------------------------------------------- native
def graph_to_json(g: Graph) -> dict:
    return {
        "format": "memsched-graph",
        "version": FORMAT_VERSION,
        "name": g.name,
        "tensors": [{"name": t.name, "size": t.size} for t in g.tensors],
        "operators": [
            {"name": o.name, "cost": o.cost, "workspace": o.workspace, "inputs": list(o.inputs), "outputs": list(o.outputs)}
            for o in g.ops
        ],
        "pinned": sorted(g.pinned),
        "outputs": list(g.outputs),
        "order": list(g.order),
        "meta": g.meta,
    }


def _native(d: dict, src: str) -> Graph:
    v = d.get("version")
    if v != FORMAT_VERSION:
        raise InputError(f"{src}: unsupported memsched-graph version {v!r} (this memsched reads version {FORMAT_VERSION})")
    tensors = []
    for k, t in enumerate(_list(d, "tensors", src)):
        w = f"{src}: tensors[{k}]"
        tensors.append(Tensor(_need(t, "name", w), _need(t, "size", w)))
    ops = []
    for k, o in enumerate(_list(d, "operators", src)):
        w = f"{src}: operators[{k}]"
        name = _need(o, "name", w)
        ins, outs = o.get("inputs", []), _need(o, "outputs", w)
        if not isinstance(ins, list) or not isinstance(outs, list):
            raise InputError(f"{w} ({name!r}): inputs and outputs must be lists of tensor names")
        ops.append(Operator(name, tuple(ins), tuple(outs), o.get("cost", 1.0), o.get("workspace", 0)))
    pinned, outputs = _list(d, "pinned", src, required=False), _list(d, "outputs", src, required=False)
    order = _list(d, "order", src, required=False)
    name = d.get("name", Path(src).stem)
    if not isinstance(name, str):
        raise InputError(f"{src}: field 'name' must be a string, got {type(name).__name__} {name!r:.60}")
    meta = d.get("meta", {}) or {}
    if not isinstance(meta, dict):
        raise InputError(f"{src}: field 'meta' must be an object, got {type(meta).__name__}")
    return Graph(ops, tensors, pinned=frozenset(pinned), outputs=tuple(outputs), order=tuple(order) if order else None,
                 name=name, meta=meta)


# --------------------------------------------------------------- node-link
def _checkmate(d: dict, src: str) -> Graph:
    import networkx as nx

    nodes = d["nodes"]
    names: dict[Any, str] = {}
    spec = []
    for k, n in enumerate(nodes):
        w = f"{src}: nodes[{k}]"
        nid = _need(n, "id", w)
        nm = str(n.get("name", nid))
        if nm in names.values():
            nm = f"{nm}#{nid}"
        names[nid] = nm
        spec.append((nid, nm, _need(n, "cost_ram", w), _need(n, "cost_cpu", w)))
    edges = []
    for k, e in enumerate(_need(d, "links", src)):
        w = f"{src}: links[{k}]"
        s, t = _need(e, "source", w), _need(e, "target", w)
        for x in (s, t):
            if x not in names:
                raise InputError(f"{w}: refers to unknown node id {x!r}")
        edges.append((s, t))
    nxg = nx.DiGraph()
    nxg.add_nodes_from(nid for nid, *_ in spec)
    nxg.add_edges_from(edges)
    try:
        topo = list(nx.topological_sort(nxg))
    except nx.NetworkXUnfeasible:
        topo = None  # Graph() names the cycle
    order = [names[x] for x in topo] if topo else None
    given = (d.get("graph") or {}).get("order") if isinstance(d.get("graph"), dict) else None
    if given and topo:  # a file's own order (e.g. written by graph_to_node_link) wins
        for x in given:
            if x not in names:
                raise InputError(f"{src}: graph.order refers to unknown node id {x!r}")
        order = [names[x] for x in given]
    return Graph.from_single_output(
        [(nm, ram, cpu) for _, nm, ram, cpu in spec], [(names[s], names[t]) for s, t in edges],
        name=d.get("graph", {}).get("name", Path(src).stem), order=order,
        meta={"source_format": "checkmate-node-link",
              "backward": [nm for (nid, nm, *_), n in zip(spec, nodes) if n.get("backward")]})


def _random_layered(d: dict, src: str) -> Graph:
    gattr = d.get("graph", {})
    spec, ids = [], set()
    for k, n in enumerate(d["nodes"]):
        w = f"{src}: nodes[{k}]"
        nid = _need(n, "name", w)
        ids.add(nid)
        spec.append((str(nid), _need(n, "out_cost", w), _need(n, "duration", w)))
    edges = []
    for k, e in enumerate(_need(d, "links", src)):
        w = f"{src}: links[{k}]"
        s, t = _need(e, "0", w), _need(e, "1", w)
        for x in (s, t):
            if x not in ids:
                raise InputError(f"{w}: refers to unknown node {x!r}")
        edges.append((str(s), str(t)))
    order = [str(x) for x in gattr["order"]] if gattr.get("order") else None
    return Graph.from_single_output(spec, edges, name=gattr.get("name", Path(src).stem), order=order,
                                    meta={"source_format": "random-layered-node-link"})


def graph_to_node_link(g: Graph) -> dict:
    """Export as Checkmate-style node-link JSON (one node per operator; cost_ram is the
    total size of its outputs). Multi-output operators, workspace, pinned inputs and
    required outputs have no place in that format and are dropped."""
    ids = {o.name: k for k, o in enumerate(g.ops)}
    links = []
    for i, o in enumerate(g.ops):
        for p in g.op_pred()[i]:
            links.append({"source": p, "target": i})
    return {
        "directed": True, "multigraph": False, "graph": {"name": g.name, "order": [ids[n] for n in g.order]},
        "nodes": [{"id": i, "name": o.name, "cost_cpu": o.cost, "cost_ram": sum(g.size[j] for j in g.op_out[i]),
                   "backward": False} for i, o in enumerate(g.ops)],
        "links": links,
    }


def graph_from_json(d: Any, src: str = "<json>") -> Graph:
    """Build a graph from parsed JSON of any supported format (detected from content)."""
    try:
        if isinstance(d, dict) and d.get("format") == "memsched-graph":
            return _native(d, src)
        if isinstance(d, dict) and "nodes" in d and "links" in d:
            nodes = d["nodes"]
            if not isinstance(nodes, list):
                raise InputError(f"{src}: 'nodes' must be a list")
            first = nodes[0] if nodes else {}
            if isinstance(first, dict) and "cost_ram" in first:
                return _checkmate(d, src)
            if isinstance(first, dict) and "out_cost" in first:
                return _random_layered(d, src)
            if not nodes:
                raise InputError(f"{src}: node-link graph has no nodes")
            raise InputError(f"{src}: node-link JSON whose nodes carry neither 'cost_ram' (Checkmate) nor 'out_cost' (random layered)")
        if isinstance(d, dict) and d.get("format") == "memsched-schedule":
            raise InputError(f"{src}: this is a schedule file, not a graph")
        raise InputError(f"{src}: not a graph: expected a memsched-graph JSON object or node-link JSON with 'nodes' and 'links'")
    except GraphError as e:
        raise InputError(f"{src}: {e}") from None
    except (TypeError, AttributeError, KeyError) as e:
        raise InputError(f"{src}: malformed graph: {e!r}") from None


def load_graph(path: str | Path) -> Graph:
    """Load a graph file in any supported format."""
    return graph_from_json(_read_json(path), str(path))


def save_json(obj: Any, path: str | Path) -> None:
    if Path(path).suffix == ".gz":  # compact and reproducible (no name or time in the gzip header)
        import gzip

        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write((json.dumps(obj, separators=(",", ":")) + "\n").encode())
        return
    Path(path).write_text(json.dumps(obj, indent=1) + "\n")


def save_graph(g: Graph, path: str | Path, fmt: str = "native") -> None:
    save_json(graph_to_json(g) if fmt == "native" else graph_to_node_link(g), path)


def load_schedule(graph: Graph, path: str | Path) -> Schedule:
    """Load a schedule: ``{"events": [[kind, name], ...]}`` or ``{"order": [op, ...]}``
    (also the ``--json`` output of ``memsched order``/``remat``, or a bare list of names)."""
    d = _read_json(path)
    try:
        if isinstance(d, list):
            return Schedule.from_order_names(graph, d)
        if isinstance(d, dict):
            ev = d.get("events", d.get("schedule"))
            if ev is not None:
                return Schedule.from_names(graph, ev)
            if ("events" in d or "schedule" in d) and not isinstance(d.get("order"), list):
                # a result file of memsched order/remat --json without a schedule ('order' is then
                # remat's order scope, "free" or "given", not a list of operators)
                st = f" (status {d['status']})" if isinstance(d.get("status"), str) else ""
                raise InputError(f"{path}: holds no schedule{st}: 'schedule' is null")
            if "order" in d:
                return Schedule.from_order_names(graph, d["order"])
        raise InputError(f"{path}: not a schedule: expected 'events', 'schedule' or 'order'")
    except ScheduleFormatError as e:
        raise InputError(f"{path}: {e}") from None
