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
as simrd does. A malformed line raises :class:`TraceError` naming file and line; so does
an operator without results and the record at which the trace's total TIME or total
MEMORY reaches 2**63 (the runtime's int64 tables).
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
# the runtime keeps storage compute, region weights and sizes in int64 tables: the sums of
# all TIME and of all MEMORY values of a trace must stay below 2**63
INT64_TOTAL = 2 ** 63


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
    try:
        text = read_text(p, expected="a DTR log")
    except InputError:
        _raise_if_not_utf8(p)
        raise
    if start is None:
        start = manifest_has_start(p)
    return parse_trace_lines(text.splitlines(), str(p), start=start)


def _raise_if_not_utf8(p: Path) -> None:
    """A log that is not UTF-8 text: TraceError naming the line of the first bad byte."""
    if p.suffix == ".gz" or not p.is_file():
        return
    try:
        data = p.read_bytes()
        data.decode()
    except UnicodeDecodeError as e:
        ln = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise TraceError(f"{p}:{ln}: not UTF-8 text (byte 0x{data[e.start]:02x} at column {col})") from None
    except OSError:
        return


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


def _read_records(lines, path: str) -> list[tuple[int, dict]]:
    """(line number, record) for every non-blank line; each checked for its required fields."""
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
    return recs


def _is_start(j: dict) -> bool:
    return j["INSTRUCTION"] == "ANNOTATE" and j["ANNOTATION"] == "START"


class _TraceBuilder:
    """Builds a :class:`DTRTrace` from the records after START, one method per INSTRUCTION."""

    def __init__(self, recs: list[tuple[int, dict]], pos: int, path: str):
        self.recs, self.pos, self.path = recs, pos, path
        self.ops: list[TraceOp] = []
        self.t_names: list[str] = []
        self.t_op: list[int] = []
        self.t_idx: list[int] = []
        self.t_ref: list[int] = []
        self.t_ssize: list[int] = []  # storage size of each tensor
        self.schedule: list[tuple[int, int]] = []
        self.names: dict[str, int] = {}
        self.taken: set[str] = set()
        self.in_bwd = False
        self.total_cost = 0
        self.total_bytes = 0

    # ---------------------------------------------------------- helpers
    def new_op(self, base, args, cost, sizes, aliases, res_names, ln, where) -> list[int]:
        k = len(self.ops)
        self.total_cost += cost
        self.total_bytes += sum(sizes)
        for what, total in (("TIME", self.total_cost), ("MEMORY", self.total_bytes)):
            if total >= INT64_TOTAL:
                raise TraceError(f"{where}: the trace's total {what} reaches {total}, past 2**63 - 1 "
                                 f"(the replay's int64 tables)")
        res = []
        for i, rn in enumerate(res_names):
            if rn in self.taken:
                raise TraceError(f"{where}: tensor name {rn!r} defined twice")
            self.taken.add(rn)
            tid = len(self.t_names)
            self.t_names.append(rn)
            self.t_op.append(k)
            self.t_idx.append(i)
            self.t_ref.append(1)
            self.t_ssize.append(sizes[i] if aliases[i] == -1 else self.t_ssize[args[aliases[i]]])
            res.append(tid)
        self.ops.append(TraceOp(f"{base}/{k}", cost, tuple(sizes), tuple(aliases), tuple(args), tuple(res),
                                self.in_bwd, ln))
        self.schedule.append((COMPUTE, k))
        return res

    def lookup(self, name, where) -> int:
        if not isinstance(name, str):
            raise TraceError(f"{where}: tensor name must be a string, got {name!r}")
        if name not in self.names:
            raise TraceError(f"{where}: tensor {name!r} is used before it is defined")
        return self.names[name]

    @staticmethod
    def str_list(v, what, where) -> list[str]:
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise TraceError(f"{where}: {what} must be a list of names, got {v!r}")
        return v

    @staticmethod
    def string(v, what, where) -> str:
        if not isinstance(v, str):
            raise TraceError(f"{where}: {what} must be a string, got {v!r}")
        return v

    def next_record(self, kind: str, name: str, where_missing: str, owner: str, ln: int) -> tuple[int, dict]:
        """The record after the current one, which must be ``kind`` for ``name``."""
        if self.pos >= len(self.recs):
            raise TraceError(where_missing)
        rln, r = self.recs[self.pos]
        self.pos += 1
        if r["INSTRUCTION"] != kind or r["NAME"] != name:
            raise TraceError(f"{self.path}:{rln}: expected the {kind} record of {owner} (line {ln})")
        return rln, r

    # ------------------------------------------------------ instructions
    def constant(self, ln, j, where):
        name = j["NAME"]
        if self.pos >= len(self.recs) or self.recs[self.pos][1]["INSTRUCTION"] != "MEMORY" \
                or self.recs[self.pos][1]["NAME"] != name:
            raise TraceError(f"{where}: CONSTANT {name!r} must be followed by its MEMORY record")
        mln, m = self.recs[self.pos]
        self.pos += 1
        size = _int(m["MEMORY"], "MEMORY", f"{self.path}:{mln}")
        self.string(name, "NAME", where)
        (v,) = self.new_op(CONST_NAME, (), 0, (size,), (-1,), (name,), ln, where)
        self.schedule.append((PIN, v))
        self.names[name] = v

    def copy(self, ln, j, where):
        dst = self.string(j["DST"], "DST", where)
        if dst in self.names:
            raise TraceError(f"{where}: COPY destination {dst!r} is already defined")
        src = self.lookup(j["SRC"], where)
        self.names[dst] = src
        self.t_ref[src] += 1
        self.schedule.append((GET, src))

    def release(self, ln, j, where):
        nm = j["NAME"]
        if isinstance(nm, str) and nm in self.names:
            t = self.names[nm]
            self.t_ref[t] -= 1
            self.schedule.append((RELEASE, t))

    def call(self, ln, j, where, base, args, cost):
        results = self.str_list(j["RESULT"], "RESULT", where)
        if not results:  # nothing to materialize: simrd's compute reads output 0
            raise TraceError(f"{where}: CALL {base!r} has no result (RESULT is empty)")
        sizes, aliases = [], []
        for rn in results:
            owner = f"result {rn!r} of CALL {base!r}"
            mln, m = self.next_record("MEMORY", rn, f"{where}: CALL {base!r}: log ends before the MEMORY record of result {rn!r}", owner, ln)
            aln, al = self.next_record("ALIAS", rn, f"{where}: CALL {base!r}: log ends before the ALIAS record of result {rn!r}", owner, ln)
            a = _int(al["ALIAS"], "ALIAS", f"{self.path}:{aln}", nonneg=False)
            if a < -1 or a >= len(args):
                raise TraceError(f"{self.path}:{aln}: ALIAS {a} is not -1 or an index into the {len(args)} ARGS of line {ln}")
            size = _int(m["MEMORY"], "MEMORY", f"{self.path}:{mln}")
            aliases.append(a)
            sizes.append(0 if a != -1 else size)
        res = self.new_op(base, args, cost, sizes, aliases, results, ln, where)
        for rn, tid in zip(results, res):
            self.names[rn] = tid

    def mutate(self, ln, j, where, base, args, cost, arg_names):
        mut = j["MUTATE"]
        if not isinstance(mut, list):
            raise TraceError(f"{where}: MUTATE must be a list of argument indices, got {mut!r}")
        mut = [_int(m, "MUTATE index", where) for m in mut]
        if not mut:  # the operator would have no result to materialize
            raise TraceError(f"{where}: MUTATE {base!r} has no result (its MUTATE list is empty)")
        for m in mut:
            if m >= len(args):
                raise TraceError(f"{where}: MUTATE index {m} is out of range for {len(args)} ARGS")
        sizes = [self.t_ssize[args[m]] for m in mut]
        res_names = [self.t_names[args[m]] + "$" for m in mut]
        res = self.new_op(base, args, cost, sizes, [-1] * len(mut), res_names, ln, where)
        for i, m in enumerate(mut):
            old = self.names[arg_names[m]]
            self.names[arg_names[m]] = res[i]
            self.t_ref[old] -= 1
            self.schedule.append((RELEASE, old))

    def call_or_mutate(self, ln, j, where):
        base = self.string(j["NAME"], "NAME", where)
        self.in_bwd = self.in_bwd or "backward" in base
        cost = _int(j["TIME"], "TIME", where)
        arg_names = self.str_list(j["ARGS"], "ARGS", where)
        args = tuple(self.lookup(a, where) for a in arg_names)
        if j["INSTRUCTION"] == "CALL":
            self.call(ln, j, where, base, args, cost)
        else:
            self.mutate(ln, j, where, base, args, cost, arg_names)

    def annotate(self, ln, j, where):
        if j["ANNOTATION"] == "BACKWARD":
            self.in_bwd = True

    def copy_from(self, ln, j, where):
        dst = j["DST"]
        old = self.lookup(dst, where)
        src = self.lookup(j["SRC"], where)
        self.names[dst] = src
        self.t_ref[old] -= 1
        self.t_ref[src] += 1
        self.schedule.append((RELEASE, old))
        self.schedule.append((GET, src))

    def build(self, has_start: bool) -> DTRTrace:
        handlers = {"CONSTANT": self.constant, "COPY": self.copy, "RELEASE": self.release, "CALL": self.call_or_mutate,
                    "MUTATE": self.call_or_mutate, "ANNOTATE": self.annotate, "COPY_FROM": self.copy_from}
        while self.pos < len(self.recs):
            ln, j = self.recs[self.pos]
            self.pos += 1
            where = f"{self.path}:{ln}"
            handler = handlers.get(j["INSTRUCTION"])
            if handler is None:  # MEMORY / ALIAS out of place
                raise TraceError(f"{where}: {j['INSTRUCTION']} record for {j.get('NAME')!r} does not follow a CONSTANT or CALL")
            handler(ln, j, where)
        for t in self.names.values():
            if self.t_ref[t] > 0:
                self.schedule.append((PIN, t))
        return DTRTrace(path=self.path, ops=self.ops, tensor_names=self.t_names, tensor_op=self.t_op,
                        tensor_index=self.t_idx, schedule=self.schedule, has_start=has_start)


def parse_trace_lines(lines, path: str = "<trace>", start: bool | None = True) -> DTRTrace:
    """Parse the lines of a DTR log (see the module docstring).

    ``start``: True = replay from the ANNOTATE START record (required), False = from the
    first record, None = from START if the log has one. Raises :class:`TraceError` naming
    the file and line of the first bad record. O(records)."""
    recs = _read_records(lines, path)
    has_start_record = any(_is_start(j) for _, j in recs)
    if start is None:
        start = has_start_record
    pos = 0
    if start:
        if not has_start_record:
            raise TraceError(f"{path}: no ANNOTATE START record (has_start is true)")
        pos = next(k for k, (_, j) in enumerate(recs) if _is_start(j)) + 1
    return _TraceBuilder(recs, pos, path).build(bool(start))
