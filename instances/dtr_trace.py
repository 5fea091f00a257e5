"""Parser for DTR prototype logs (uwsampl/dtr-prototype, one JSON object per line).

The record semantics follow simrd's ``parse_file`` (see docs/dtr.md):

* ``ANNOTATE START``: with ``start=True`` every record up to and including the first
  START is dropped; ``ANNOTATE BACKWARD`` (or an op name containing ``backward``) turns
  the backward flag on for all later operators.
* ``CONSTANT x`` + ``MEMORY x m``: an operator named ``constant`` (cost 0) producing one
  tensor of ``m`` bytes; scheduled as compute then pin.
* ``CALL`` (``NAME, ARGS, RESULT, TIME``) followed, per result, by ``MEMORY`` then
  ``ALIAS``; an aliased result shares the storage of ``ARGS[alias]`` and has size 0.
* ``MUTATE`` (``NAME, ARGS, MUTATE, TIME``): a pure operator over all args producing,
  per mutated argument, a new tensor ``<arg>$`` of that argument's storage size; the
  name is rebound and the old tensor released.
* ``COPY dst src``: a new name for the same tensor (external ref + 1).
* ``COPY_FROM dst src``: release the old ``dst`` tensor, rebind ``dst`` to ``src`` (+1).
* ``RELEASE x``: external ref - 1 (unknown names are ignored).
* End of log: every tensor still referenced is pinned (rematerialized if evicted).

Operators get the unique name ``<name>/<k>`` with ``k`` the running operator number,
as simrd does. A malformed line raises :class:`TraceError` naming file and line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .formats import InputError, read_text

__all__ = ["TraceError", "TraceOp", "DTRTrace", "parse_trace", "parse_trace_lines", "COMPUTE", "GET", "PIN",
           "RELEASE", "manifest_has_start"]

# schedule command kinds
COMPUTE, GET, PIN, RELEASE = 0, 1, 2, 3
CONST_NAME = "constant"


class TraceError(InputError):
    """A DTR log is malformed; the message names the file and line."""


@dataclass
class TraceOp:
    name: str  # unique name "<name>/<k>"
    cost: int
    sizes: tuple[int, ...]
    aliases: tuple[int, ...]
    args: tuple[int, ...]  # tensor ids
    results: tuple[int, ...]  # tensor ids
    bwd: bool
    line: int  # 1-based line of the record in the file

    @property
    def is_constant(self) -> bool:
        return self.name.split("/")[0] == CONST_NAME

    @property
    def base_name(self) -> str:
        return self.name.rsplit("/", 1)[0]


@dataclass
class DTRTrace:
    """A parsed trace: operators, tensors (ids in creation order) and the replay schedule
    of ``(kind, index)`` commands: (COMPUTE, op), (GET, tensor), (PIN, tensor), (RELEASE, tensor)."""

    path: str
    ops: list[TraceOp]
    tensor_names: list[str]
    tensor_op: list[int]
    tensor_index: list[int]
    schedule: list[tuple[int, int]]
    has_start: bool = True
    meta: dict = field(default_factory=dict)

    @property
    def n_tensors(self) -> int:
        return len(self.tensor_names)

    def tensor_size(self, t: int) -> int:
        op = self.ops[self.tensor_op[t]]
        return op.sizes[self.tensor_index[t]]

    def is_alias(self, t: int) -> bool:
        return self.ops[self.tensor_op[t]].aliases[self.tensor_index[t]] != -1

    def storage_root(self, t: int) -> int:
        """Tensor id of the root tensor of t's storage (follows alias chains)."""
        while True:
            op = self.ops[self.tensor_op[t]]
            a = op.aliases[self.tensor_index[t]]
            if a == -1:
                return t
            t = op.args[a]

    def summary(self) -> dict:
        const = [op for op in self.ops if op.is_constant]
        return {
            "path": self.path,
            "ops": len(self.ops),
            "constant_ops": len(const),
            "tensors": self.n_tensors,
            "alias_tensors": sum(1 for t in range(self.n_tensors) if self.is_alias(t)),
            "total_cost": sum(op.cost for op in self.ops),
            "constant_bytes": sum(sum(op.sizes) for op in const),
            "schedule_commands": len(self.schedule),
        }


def manifest_has_start(path: str | Path) -> bool | None:
    """``has_start`` of the log in a ``manifest.json`` next to it, or None if absent."""
    p = Path(path)
    man = p.parent / "manifest.json"
    if not man.is_file():
        return None
    try:
        data = json.loads(man.read_text())
        for m in data.get("models", []):
            if m.get("log") == p.name:
                return bool(m.get("has_start", False))
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return None


def parse_trace(path: str | Path, start: bool | None = None) -> DTRTrace:
    """Parse a DTR log. ``start=None`` takes ``has_start`` from the manifest next to the
    log; without a manifest entry, START is honoured when the log contains one."""
    p = Path(path)
    text = read_text(p, expected="a DTR log")
    if start is None:
        start = manifest_has_start(p)
    return parse_trace_lines(text.splitlines(), str(p), start=start)


_REQUIRED = {
    "CONSTANT": ("NAME",), "MEMORY": ("NAME", "MEMORY"), "COPY": ("DST", "SRC"), "RELEASE": ("NAME",),
    "CALL": ("RESULT", "NAME", "ARGS", "TIME"), "MUTATE": ("NAME", "ARGS", "MUTATE", "TIME"),
    "ANNOTATE": ("ANNOTATION",), "COPY_FROM": ("DST", "SRC"), "ALIAS": ("NAME", "ALIAS"),
}


def _int(v, what: str, where: str, *, nonneg: bool = True) -> int:
    try:
        if isinstance(v, bool) or isinstance(v, float) and not v.is_integer():
            raise ValueError
        x = int(v)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: {what} must be an integer, got {v!r}") from None
    if nonneg and x < 0:
        raise TraceError(f"{where}: {what} must be non-negative, got {x}")
    return x


def parse_trace_lines(lines, path: str = "<trace>", start: bool | None = True) -> DTRTrace:
    """Parse the lines of a DTR log (see the module docstring)."""
    recs: list[tuple[int, dict]] = []
    for ln, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        where = f"{path}:{ln}"
        try:
            j = json.loads(s)
        except json.JSONDecodeError as e:
            raise TraceError(f"{where}: invalid JSON: {e.msg}") from None
        if not isinstance(j, dict):
            raise TraceError(f"{where}: expected a JSON object, got {type(j).__name__}")
        instr = j.get("INSTRUCTION")
        if instr not in _REQUIRED:
            raise TraceError(f"{where}: unknown INSTRUCTION {instr!r}")
        for k in _REQUIRED[instr]:
            if k not in j:
                raise TraceError(f"{where}: {instr} record misses field {k!r}")
        recs.append((ln, j))
    has_start_record = any(j["INSTRUCTION"] == "ANNOTATE" and j["ANNOTATION"] == "START" for _, j in recs)
    if start is None:
        start = has_start_record
    pos = 0
    if start:
        if not has_start_record:
            raise TraceError(f"{path}: no ANNOTATE START record (has_start is true)")
        while True:
            _, j = recs[pos]
            pos += 1
            if j["INSTRUCTION"] == "ANNOTATE" and j["ANNOTATION"] == "START":
                break

    ops: list[TraceOp] = []
    t_names: list[str] = []
    t_op: list[int] = []
    t_idx: list[int] = []
    t_ref: list[int] = []
    t_ssize: list[int] = []  # storage size of each tensor
    schedule: list[tuple[int, int]] = []
    names: dict[str, int] = {}
    taken: set[str] = set()
    in_bwd = False
    n = len(recs)

    def new_op(base, args, cost, sizes, aliases, res_names, ln, where):
        k = len(ops)
        res = []
        for i, rn in enumerate(res_names):
            if rn in taken:
                raise TraceError(f"{where}: tensor name {rn!r} defined twice")
            taken.add(rn)
            tid = len(t_names)
            t_names.append(rn)
            t_op.append(k)
            t_idx.append(i)
            t_ref.append(1)
            t_ssize.append(sizes[i] if aliases[i] == -1 else t_ssize[args[aliases[i]]])
            res.append(tid)
        ops.append(TraceOp(f"{base}/{k}", cost, tuple(sizes), tuple(aliases), tuple(args), tuple(res), in_bwd, ln))
        schedule.append((COMPUTE, k))
        return res

    def lookup(name, where):
        if not isinstance(name, str):
            raise TraceError(f"{where}: tensor name must be a string, got {name!r}")
        if name not in names:
            raise TraceError(f"{where}: tensor {name!r} is used before it is defined")
        return names[name]

    def str_list(v, what, where):
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise TraceError(f"{where}: {what} must be a list of names, got {v!r}")
        return v

    while pos < n:
        ln, j = recs[pos]
        pos += 1
        where = f"{path}:{ln}"
        instr = j["INSTRUCTION"]
        if instr == "CONSTANT":
            if pos >= n or recs[pos][1]["INSTRUCTION"] != "MEMORY" or recs[pos][1]["NAME"] != j["NAME"]:
                raise TraceError(f"{where}: CONSTANT {j['NAME']!r} must be followed by its MEMORY record")
            mln, m = recs[pos]
            pos += 1
            size = _int(m["MEMORY"], "MEMORY", f"{path}:{mln}")
            name = j["NAME"]
            if not isinstance(name, str):
                raise TraceError(f"{where}: NAME must be a string, got {name!r}")
            (v,) = new_op(CONST_NAME, (), 0, (size,), (-1,), (name,), ln, where)
            schedule.append((PIN, v))
            names[name] = v
        elif instr == "COPY":
            dst = j["DST"]
            if not isinstance(dst, str):
                raise TraceError(f"{where}: DST must be a string, got {dst!r}")
            if dst in names:
                raise TraceError(f"{where}: COPY destination {dst!r} is already defined")
            src = lookup(j["SRC"], where)
            names[dst] = src
            t_ref[src] += 1
            schedule.append((GET, src))
        elif instr == "RELEASE":
            nm = j["NAME"]
            if isinstance(nm, str) and nm in names:
                t = names[nm]
                t_ref[t] -= 1
                schedule.append((RELEASE, t))
        elif instr in ("CALL", "MUTATE"):
            base = j["NAME"]
            if not isinstance(base, str):
                raise TraceError(f"{where}: NAME must be a string, got {base!r}")
            in_bwd = in_bwd or "backward" in base
            cost = _int(j["TIME"], "TIME", where)
            arg_names = str_list(j["ARGS"], "ARGS", where)
            args = tuple(lookup(a, where) for a in arg_names)
            if instr == "CALL":
                results = str_list(j["RESULT"], "RESULT", where)
                sizes, aliases = [], []
                for rn in results:
                    recs_needed = (("MEMORY", "MEMORY"), ("ALIAS", "ALIAS"))
                    vals = []
                    for kind, key in recs_needed:
                        if pos >= n:
                            raise TraceError(f"{where}: CALL {base!r}: log ends before the {kind} record of result {rn!r}")
                        rln, r = recs[pos]
                        pos += 1
                        if r["INSTRUCTION"] != kind or r["NAME"] != rn:
                            raise TraceError(f"{path}:{rln}: expected the {kind} record of result {rn!r} of CALL {base!r} (line {ln})")
                        vals.append((rln, r[key]))
                    (mln, mem), (aln, al) = vals
                    a = _int(al, "ALIAS", f"{path}:{aln}", nonneg=False)
                    if a < -1 or a >= len(args):
                        raise TraceError(f"{path}:{aln}: ALIAS {a} is not -1 or an index into the {len(args)} ARGS of line {ln}")
                    m = _int(mem, "MEMORY", f"{path}:{mln}")
                    aliases.append(a)
                    sizes.append(0 if a != -1 else m)
                new_op(base, args, cost, sizes, aliases, results, ln, where)
                for rn, tid in zip(results, range(len(t_names) - len(results), len(t_names))):
                    names[rn] = tid
            else:
                mut = j["MUTATE"]
                if not isinstance(mut, list):
                    raise TraceError(f"{where}: MUTATE must be a list of argument indices, got {mut!r}")
                mut = [_int(m, "MUTATE index", where) for m in mut]
                for m in mut:
                    if m >= len(args):
                        raise TraceError(f"{where}: MUTATE index {m} is out of range for {len(args)} ARGS")
                sizes = [t_ssize[args[m]] for m in mut]
                res_names = [t_names[args[m]] + "$" for m in mut]
                res = new_op(base, args, cost, sizes, [-1] * len(mut), res_names, ln, where)
                for i, m in enumerate(mut):
                    old = names[arg_names[m]]
                    names[arg_names[m]] = res[i]
                    t_ref[old] -= 1
                    schedule.append((RELEASE, old))
        elif instr == "ANNOTATE":
            if j["ANNOTATION"] == "BACKWARD":
                in_bwd = True
        elif instr == "COPY_FROM":
            dst = j["DST"]
            old = lookup(dst, where)
            src = lookup(j["SRC"], where)
            names[dst] = src
            t_ref[old] -= 1
            t_ref[src] += 1
            schedule.append((RELEASE, old))
            schedule.append((GET, src))
        else:  # MEMORY / ALIAS out of place
            raise TraceError(f"{where}: {instr} record for {j.get('NAME')!r} does not follow a CONSTANT or CALL")
    for name, t in names.items():
        if t_ref[t] > 0:
            schedule.append((PIN, t))
    return DTRTrace(path=path, ops=ops, tensor_names=t_names, tensor_op=t_op, tensor_index=t_idx,
                    schedule=schedule, has_start=bool(start))
