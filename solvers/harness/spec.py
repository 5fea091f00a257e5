"""The sweep spec: which instances, which solvers (with parameters, budgets, time
limits), and its expansion into runs.

A spec is TOML (read with :mod:`tomllib`) or YAML (``.yaml``/``.yml``, needs PyYAML)
with the same structure (docs/harness.md)::

    name = "smoke"
    time_limit = 10          # default solver time limit per run, seconds
    hard_limit = 30          # default executor kill limit (default 1.5 x time_limit + 5)

    [[instances]]
    files = ["shipped:*.json", "graphs/*.json"]   # globs, relative to the spec's folder

    [[instances]]
    generator = "random_dag"                      # a function of instances.generators
    params = { edge_prob = 0.3 }
    grid = { n = [10, 20] }                       # cartesian product
    seeds = [0, 1, 2]                             # or a count: seeds = 3

    [[solvers]]
    solver = "order"
    grid = { method = ["dfs", "lpmf"] }
    label = "order-{method}"

    [[solvers]]
    solver = "remat"
    params = { method = "cp" }
    budgets = [0.9, 0.8]
    time_limit = 20

Every instance is loaded once in the driver and identified by the sha256 of its
canonical native JSON (:func:`graph_hash`); a run is identified by its :attr:`Run.key`
(instance hash, solver, label, parameters, budget, time limit, seed), which is what
``--resume`` skips.
"""
from __future__ import annotations

import glob
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from memsched.formulations import Graph, MemschedError

__all__ = ["SpecError", "Instance", "SolverEntry", "Run", "Spec", "load_spec", "parse_spec", "graph_hash",
           "canonical_json", "load_source", "expand_runs"]


class SpecError(MemschedError):
    """The sweep spec is malformed; the message names the file and the key."""


# ------------------------------------------------------------ instances
def canonical_json(g: Graph) -> str:
    """The canonical native JSON text of a graph: ``graph_to_json`` with sorted keys
    and no whitespace. Its sha256 is the instance hash."""
    from memsched.instances.formats import graph_to_json

    return json.dumps(graph_to_json(g), sort_keys=True, separators=(",", ":"))


def graph_hash(g: Graph) -> str:
    """sha256 (hex) of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(g).encode()).hexdigest()


@dataclass
class Instance:
    name: str
    family: str
    source: dict  # {"file": path} or {"generator": name, "params": {...}}
    hash: str
    n_ops: int
    text: str  # canonical native JSON

    def describe(self) -> str:
        return describe_source(self.source)


def describe_source(src: dict) -> str:
    if "file" in src:
        return src["file"]
    args = ",".join(f"{k}={v}" for k, v in sorted(src.get("params", {}).items()))
    return f"{src['generator']}({args})"


def _generator(name: str, where: str):
    from memsched.instances import generators

    fn = getattr(generators, name, None)
    if name.startswith("_") or not callable(fn) or name not in getattr(generators, "__all__", [name]):
        avail = ", ".join(getattr(generators, "__all__", []))
        raise SpecError(f"{where}: unknown generator {name!r} (available: {avail})")
    return fn


def load_source(src: dict, base: Path | None = None) -> Graph:
    """Re-create a graph from a row's ``source`` (a file path is tried relative to the
    current folder, then to ``base`` and its parents)."""
    if "file" in src:
        from memsched.instances import SHIPPED, load_graph

        p = Path(src["file"])
        cands = [p]
        if not p.is_absolute():
            if src["file"].startswith("shipped:"):
                cands = [SHIPPED / src["file"][len("shipped:"):]]
            elif base is not None:
                cands += [b / p for b in [base, *base.parents]]
        for c in cands:
            if c.is_file():
                return load_graph(c)
        return load_graph(p)  # raises InputError naming the file
    fn = _generator(src["generator"], "source")
    return fn(**src.get("params", {}))


def _family_of(name: str) -> str:
    """``random_layered_n100`` -> ``random_layered``, ``chain_12`` -> ``chain``: the
    name without its trailing tokens that carry digits."""
    toks = re.split(r"[_\-.]", name)
    while len(toks) > 1 and re.search(r"\d", toks[-1]):
        toks.pop()
    fam = "_".join(toks)
    m = re.match(r"[A-Za-z_]*[A-Za-z]", fam)
    return (m.group(0) if m else fam).lower() or name


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p.resolve())


# -------------------------------------------------------------- solvers
@dataclass
class SolverEntry:
    label: str
    solver: str
    params: dict
    budget: float | None
    time_limit: float
    hard_limit: float
    seed: int


@dataclass
class Run:
    instance: Instance
    entry: SolverEntry
    key: str = ""

    def __post_init__(self):
        if not self.key:
            self.key = run_key(self.instance.hash, self.entry)


def run_key(instance_hash: str, e: SolverEntry) -> str:
    blob = json.dumps({"instance": instance_hash, "solver": e.solver, "label": e.label, "params": e.params,
                       "budget": e.budget, "time_limit": e.time_limit, "seed": e.seed},
                      sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


@dataclass
class Spec:
    name: str
    path: Path | None
    instances: list[Instance]
    solvers: list[SolverEntry]
    keep_schedules: bool = True
    output: str | None = None
    jobs: int | None = None
    order: str = "largest-first"
    raw: dict = field(default_factory=dict)

    def runs(self) -> list[Run]:
        return expand_runs(self)


_FAST = ("given", "order", "debug.raise", "debug.crash")


def expand_runs(spec: Spec) -> list[Run]:
    """Instances x solver entries. With ``order = "largest-first"`` (the default) the
    likely-long runs go first, so that no worker slot idles at the end of a sweep
    while another finishes a long run: search solvers (anything but ``given`` and
    ``order`` heuristics) before heuristics, larger instances first, then spec order.
    ``order = "spec"`` keeps instance-major spec order."""
    runs, seen = [], set()
    for inst in spec.instances:
        for e in spec.solvers:
            r = Run(inst, e)
            if r.key not in seen:
                seen.add(r.key)
                runs.append(r)
    if spec.order == "largest-first":
        idx = {id(r): k for k, r in enumerate(runs)}
        fast = lambda r: r.entry.solver in _FAST and not r.entry.params.get("exact")  # noqa: E731
        runs.sort(key=lambda r: (fast(r), -r.instance.n_ops, -r.entry.time_limit, idx[id(r)]))
    return runs


# -------------------------------------------------------------- parsing
_TOP = {"name", "description", "time_limit", "hard_limit", "seed", "keep_schedules", "output", "jobs", "order",
        "instances", "solvers"}
_INST = {"files", "generator", "params", "grid", "seeds", "family", "name"}
_SOLV = {"solver", "label", "params", "grid", "budgets", "budget", "time_limit", "hard_limit", "seed", "seeds"}


def _check_keys(d, allowed, where):
    if not isinstance(d, dict):
        raise SpecError(f"{where}: expected a table, got {type(d).__name__}")
    bad = sorted(set(d) - allowed)
    if bad:
        raise SpecError(f"{where}: unknown key {bad[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _num(v, where, positive=True):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (positive and not v > 0):
        raise SpecError(f"{where}: expected a positive number, got {v!r}")
    return float(v)


def _grid(d: dict, where: str) -> list[dict]:
    params = d.get("params", {}) or {}
    grid = d.get("grid", {}) or {}
    if not isinstance(params, dict):
        raise SpecError(f"{where}.params: expected a table")
    if not isinstance(grid, dict):
        raise SpecError(f"{where}.grid: expected a table of lists")
    keys = sorted(grid)
    for k in keys:
        if not isinstance(grid[k], list) or not grid[k]:
            raise SpecError(f"{where}.grid.{k}: expected a non-empty list")
    out = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        p = dict(params)
        p.update(zip(keys, combo))
        out.append(p)
    return out


def _seeds(d: dict, where: str, key="seeds") -> list | None:
    if key not in d:
        return None
    s = d[key]
    if isinstance(s, int) and not isinstance(s, bool) and s > 0:
        return list(range(s))
    if isinstance(s, list) and s and all(isinstance(x, int) and not isinstance(x, bool) for x in s):
        return list(s)
    raise SpecError(f"{where}.{key}: expected a positive count or a list of integers, got {s!r}")


def _read(path: Path) -> dict:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read: {e}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise SpecError(f"{path}: YAML specs need PyYAML (pip install pyyaml), or write the spec in TOML") from None
        try:
            d = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SpecError(f"{path}: invalid YAML: {str(e).splitlines()[0]}") from None
    else:
        import tomllib

        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SpecError(f"{path}: invalid TOML: {e}") from None
    if not isinstance(d, dict):
        raise SpecError(f"{path}: expected a table at the top level")
    return d


def load_spec(path: str | Path) -> Spec:
    path = Path(path)
    return parse_spec(_read(path), path)


def parse_spec(d: dict, path: Path | None = None) -> Spec:
    src = str(path) if path else "<spec>"
    base = path.resolve().parent if path else Path.cwd()
    _check_keys(d, _TOP, src)
    name = str(d.get("name", path.stem if path else "sweep"))
    tl = _num(d.get("time_limit", 60.0), f"{src}: time_limit")
    hl = _num(d["hard_limit"], f"{src}: hard_limit") if "hard_limit" in d else None
    seed = d.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SpecError(f"{src}: seed: expected an integer, got {seed!r}")
    keep = d.get("keep_schedules", True)
    if not isinstance(keep, bool):
        raise SpecError(f"{src}: keep_schedules: expected true or false")
    jobs = d.get("jobs")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise SpecError(f"{src}: jobs: expected a positive integer")
    for key in ("output", "description"):
        if key in d and not isinstance(d[key], str):
            raise SpecError(f"{src}: {key}: expected a string, got {d[key]!r}")
    if "name" in d and (not isinstance(d["name"], str) or not d["name"]):
        raise SpecError(f"{src}: name: expected a non-empty string, got {d['name']!r}")
    order = d.get("order", "largest-first")
    if order not in ("largest-first", "spec"):
        raise SpecError(f"{src}: order: expected 'largest-first' or 'spec', got {order!r}")
    if not d.get("instances"):
        raise SpecError(f"{src}: no [[instances]] given")
    if not d.get("solvers"):
        raise SpecError(f"{src}: no [[solvers]] given")
    if not isinstance(d["instances"], list) or not isinstance(d["solvers"], list):
        raise SpecError(f"{src}: 'instances' and 'solvers' must be arrays of tables ([[instances]], [[solvers]])")
    instances = _instances(d["instances"], src, base)
    solvers = _solvers(d["solvers"], src, tl, hl, seed)
    return Spec(name=name, path=path, instances=instances, solvers=solvers, keep_schedules=keep,
                output=d.get("output"), jobs=jobs, order=order, raw=d)


def _instances(items: list, src: str, base: Path) -> list[Instance]:
    from memsched.instances import SHIPPED, load_graph

    out: list[Instance] = []
    by_hash: dict[str, Instance] = {}
    names: dict[str, int] = {}

    def add(g: Graph, source: dict, fallback_name: str, family: str | None):
        text = canonical_json(g)
        h = hashlib.sha256(text.encode()).hexdigest()
        if h in by_hash:
            return
        nm = fallback_name
        if nm in names:
            names[nm] += 1
            nm = f"{nm}#{names[nm]}"
        else:
            names[nm] = 1
        fam = family or str(g.meta.get("family", "")) or _family_of(nm)
        inst = Instance(nm, fam, source, h, g.n_ops, text)
        by_hash[h] = inst
        out.append(inst)

    for k, item in enumerate(items):
        where = f"{src}: instances[{k}]"
        _check_keys(item, _INST, where)
        fam = item.get("family")
        if ("files" in item) == ("generator" in item):
            raise SpecError(f"{where}: give exactly one of 'files' or 'generator'")
        if "files" in item:
            for key in ("params", "grid", "seeds"):
                if key in item:
                    raise SpecError(f"{where}: {key!r} applies to generators only")
            pats = item["files"]
            pats = [pats] if isinstance(pats, str) else pats
            if not isinstance(pats, list) or not all(isinstance(p, str) for p in pats):
                raise SpecError(f"{where}.files: expected a glob or a list of globs")
            for pat in pats:
                if pat.startswith("shipped:"):
                    root, rel_pat, shipped = SHIPPED, pat[len("shipped:"):], True
                else:
                    root, rel_pat, shipped = base, pat, False
                full = rel_pat if Path(rel_pat).is_absolute() else str(root / rel_pat)
                matches = sorted(glob.glob(full, recursive=True))
                matches = [m for m in matches if Path(m).is_file()]
                if not matches:
                    raise SpecError(f"{where}.files: {pat!r} matches no file (relative to {root})")
                for m in matches:
                    g = load_graph(m)
                    source = {"file": "shipped:" + str(Path(m).relative_to(SHIPPED)) if shipped else _rel(Path(m))}
                    add(g, source, item.get("name") or Path(m).stem, fam)
        else:
            gname = item["generator"]
            if not isinstance(gname, str):
                raise SpecError(f"{where}.generator: expected a name")
            fn = _generator(gname, where)
            seeds = _seeds(item, where)
            for p in _grid(item, where):
                for s in (seeds if seeds is not None else [None]):
                    params = dict(p)
                    if s is not None:
                        params["seed"] = s
                    try:
                        g = fn(**params)
                    except MemschedError as e:
                        raise SpecError(f"{where}: {gname}({params}) fails: {e}") from None
                    except TypeError as e:
                        raise SpecError(f"{where}: {gname}: bad parameters {params}: {e}") from None
                    nm = g.name
                    if item.get("name"):
                        try:
                            nm = str(item["name"]).format(**params)
                        except (KeyError, IndexError, ValueError):
                            nm = str(item["name"])
                    add(g, {"generator": gname, "params": params}, nm, fam or gname)
    return out


def _label(template: str | None, solver: str, params: dict, seed: int = 0) -> str:
    if template:
        try:
            return template.format(**{"seed": seed, **params})
        except (KeyError, IndexError, ValueError):
            return template
    if not params:
        return solver
    return solver + ":" + ",".join(f"{k}={params[k]}" for k in sorted(params))


def _solvers(items: list, src: str, tl: float, hl: float | None, seed: int) -> list[SolverEntry]:
    out = _solver_entries(items, src, tl, hl, seed)
    seen: dict = {}
    for e in out:  # one report column per label: a label names one setting at each budget
        what = (e.solver, json.dumps(e.params, sort_keys=True, default=str), e.time_limit, e.hard_limit, e.seed)
        prev = seen.setdefault((e.label, e.budget), what)
        if prev != what:
            raise SpecError(f"{src}: solvers: label {e.label!r} names two different settings "
                            f"({prev[0]} {prev[1]} and {what[0]} {what[1]}); give each its own label, "
                            "e.g. label = \"{method}\"")
    return out


def _solver_entries(items: list, src: str, tl: float, hl: float | None, seed: int) -> list[SolverEntry]:
    out: list[SolverEntry] = []
    for k, item in enumerate(items):
        where = f"{src}: solvers[{k}]"
        _check_keys(item, _SOLV, where)
        name = item.get("solver")
        if not isinstance(name, str) or not name:
            raise SpecError(f"{where}: missing 'solver' (a registry name, see docs/harness.md)")
        from .registry import check_budgets, check_name

        msg = check_name(name) or check_budgets(name, "budgets" in item or "budget" in item)
        if msg:
            raise SpecError(f"{where}: {msg}")
        if "label" in item and (not isinstance(item["label"], str) or not item["label"]):
            raise SpecError(f"{where}.label: expected a non-empty string, got {item['label']!r}")
        budgets = item.get("budgets", [item["budget"]] if "budget" in item else [None])
        if isinstance(budgets, dict):  # budgets = { from = 0.5, to = 1.0, step = 0.05 }
            if set(budgets) != {"from", "to", "step"}:
                raise SpecError(f"{where}.budgets: a range needs exactly 'from', 'to' and 'step'")
            lo, hi, step = (_num(budgets[k], f"{where}.budgets.{k}") for k in ("from", "to", "step"))
            n = int(math.floor((hi - lo) / step + 1e-9)) + 1
            budgets = [round(lo + k * step, 10) for k in range(max(0, n))]
        if not isinstance(budgets, list) or not budgets:
            raise SpecError(f"{where}.budgets: expected a non-empty list of ratios (<= 1) or byte counts")
        for b in budgets:
            if b is not None:
                _num(b, f"{where}.budgets")
                if isinstance(b, int) and not isinstance(b, bool) and b == 1:
                    raise SpecError(f"{where}.budgets: 1 is ambiguous: write 1.0 for a ratio (the whole given-order "
                                    "peak); a byte budget is at least 2 bytes (the rule of the command line)")
                if b > 1 and b != int(b):
                    raise SpecError(f"{where}.budgets: {b!r}: a ratio is at most 1 and bytes are a whole number "
                                    "(write 0.75 for 75 % of the given order's peak, or an integer byte count)")
        e_tl = _num(item.get("time_limit", tl), f"{where}.time_limit")
        e_hl = _num(item["hard_limit"], f"{where}.hard_limit") if "hard_limit" in item else (
            hl if hl is not None and "time_limit" not in item else 1.5 * e_tl + 5.0)
        if e_hl < e_tl:
            raise SpecError(f"{where}: hard_limit {e_hl} is below time_limit {e_tl}")
        seeds = _seeds(item, where) or [item.get("seed", seed)]
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
            raise SpecError(f"{where}.seed: expected an integer, got {item.get('seed')!r}")
        for p in _grid(item, where):
            for b in budgets:
                for s in seeds:
                    label = _label(item.get("label"), name, p, s)
                    if len(seeds) > 1 and "{seed}" not in (item.get("label") or ""):
                        label += f"@s{s}"
                    out.append(SolverEntry(label, name, p, float(b) if b is not None else None, e_tl, e_hl, int(s)))
    return out
