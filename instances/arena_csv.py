"""MiniMalloc's buffer-list CSV format (Moffitt, ASPLOS 2023; google/minimalloc).

A header line ``id,lower,upper,size`` (columns in any order; an optional ``offset``
column is read and ignored, an ``alignment`` column must be 1 when present) and one
buffer per line. A buffer is live on the half-open interval ``[lower, upper)``; two
buffers conflict when their intervals intersect. Sizes are bytes.

This module owns the instance type :class:`Buffer` (a plain record, WHAT is solved);
the planners live in ``memsched.solvers.arena``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memsched.formulations import MemschedError

__all__ = ["Buffer", "ArenaInputError", "read_arena_csv", "parse_arena_csv", "write_arena_csv", "check_buffers"]


class ArenaInputError(MemschedError):
    """A buffer list is malformed; the message names the file and line (or the buffer)."""


@dataclass(frozen=True)
class Buffer:
    """One allocation: ``size`` bytes live on the half-open time interval ``[lower, upper)``."""

    id: str
    lower: int
    upper: int
    size: int

    def overlaps(self, other: "Buffer") -> bool:
        return self.lower < other.upper and other.lower < self.upper


def check_buffers(buffers, where: str = "buffers") -> list[Buffer]:
    """Validate a buffer list (ints, lower < upper, size >= 0, unique ids); return it as a list."""
    out = list(buffers)
    seen: set[str] = set()
    for k, b in enumerate(out):
        if not isinstance(b, Buffer):
            raise ArenaInputError(f"{where}: item #{k} is not a Buffer")
        for name in ("lower", "upper", "size"):
            v = getattr(b, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ArenaInputError(f"{where}: buffer {b.id!r}: {name} must be an integer, got {v!r}")
        if b.size < 0:
            raise ArenaInputError(f"{where}: buffer {b.id!r}: size must be >= 0, got {b.size}")
        if b.lower >= b.upper:
            raise ArenaInputError(f"{where}: buffer {b.id!r}: lower {b.lower} must be < upper {b.upper}")
        if b.id in seen:
            raise ArenaInputError(f"{where}: buffer id {b.id!r} appears twice")
        seen.add(b.id)
    return out


def _int(text: str, col: str, where: str) -> int:
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        raise ArenaInputError(f"{where}: column {col!r} must be an integer, got {t!r}") from None


def parse_arena_csv(text: str, source: str = "<csv>") -> list[Buffer]:
    """Parse MiniMalloc CSV text. Errors name ``source`` and the line number."""
    lines = text.splitlines()
    k0 = 0
    while k0 < len(lines) and not lines[k0].strip():
        k0 += 1
    if k0 == len(lines):
        raise ArenaInputError(f"{source}: empty file, expected a header line 'id,lower,upper,size'")
    header = [h.strip().lower() for h in lines[k0].split(",")]
    for need in ("id", "lower", "upper", "size"):
        if need not in header:
            raise ArenaInputError(f"{source}:{k0 + 1}: header lacks column {need!r} "
                                  f"(expected 'id,lower,upper,size', got {lines[k0].strip()!r})")
    if len(set(header)) != len(header):
        raise ArenaInputError(f"{source}:{k0 + 1}: header repeats a column")
    col = {h: i for i, h in enumerate(header)}
    out: list[Buffer] = []
    seen: dict[str, int] = {}
    for k in range(k0 + 1, len(lines)):
        line = lines[k]
        if not line.strip():
            continue
        where = f"{source}:{k + 1}"
        cells = line.split(",")
        if len(cells) != len(header):
            raise ArenaInputError(f"{where}: expected {len(header)} fields, got {len(cells)}")
        bid = cells[col["id"]].strip()
        if not bid:
            raise ArenaInputError(f"{where}: empty buffer id")
        lo = _int(cells[col["lower"]], "lower", where)
        up = _int(cells[col["upper"]], "upper", where)
        size = _int(cells[col["size"]], "size", where)
        if "alignment" in col and cells[col["alignment"]].strip() not in ("", "1"):
            raise ArenaInputError(f"{where}: alignment other than 1 is not supported")
        if size < 0:
            raise ArenaInputError(f"{where}: size must be >= 0, got {size}")
        if lo >= up:
            raise ArenaInputError(f"{where}: lower {lo} must be < upper {up} (lifetimes are half-open [lower, upper))")
        if bid in seen:
            raise ArenaInputError(f"{where}: buffer id {bid!r} already defined on line {seen[bid]}")
        seen[bid] = k + 1
        out.append(Buffer(bid, lo, up, size))
    return out


def read_arena_csv(path: str | Path) -> list[Buffer]:
    """Read a MiniMalloc CSV file; any problem raises :class:`ArenaInputError` naming the file and line."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ArenaInputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ArenaInputError(f"{p}: is a directory, expected a CSV buffer list") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ArenaInputError(f"{p}: cannot read: {e}") from None
    return parse_arena_csv(text, str(p))


def write_arena_csv(buffers, path: str | Path, offsets=None) -> None:
    """Write buffers (and, when given, an ``offset`` column) in MiniMalloc's CSV format."""
    rows = ["id,lower,upper,size" + (",offset" if offsets is not None else "")]
    for k, b in enumerate(buffers):
        r = f"{b.id},{b.lower},{b.upper},{b.size}"
        if offsets is not None:
            r += f",{offsets[k]}"
        rows.append(r)
    Path(path).write_text("\n".join(rows) + "\n")
