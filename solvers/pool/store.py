"""Results as JSON lines: one row per run, appended and flushed as each run ends,
so a killed sweep loses only the runs in flight, and ``--resume`` skips every key
already present."""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["ResultStore", "read_rows"]


def read_rows(path: str | Path, *, errors: list | None = None, complete_only: bool = False) -> list[dict]:
    """All complete rows of a results file (a torn last line, from a driver killed
    mid-write, is skipped; so is any line that is not a JSON object, noted in
    ``errors``). With ``complete_only`` a last line without its newline is skipped
    even when it parses: the writer appends the row and its newline in one write,
    so a missing newline means the write was cut (and ``ResultStore.open`` drops that
    line on resume, so it must not count as done)."""
    from memsched.instances.formats import InputError

    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e}") from None
    rows = []
    lines = data.split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if complete_only and n == len(lines):  # no newline after it: a torn write
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            row = None
        if not isinstance(row, dict) or "key" not in row:
            if n == len(lines):  # torn tail (no newline after it)
                continue
            if errors is not None:
                errors.append(f"{p}:{n}: not a result row, skipped")
            continue
        rows.append(row)
    return rows


class ResultStore:
    def __init__(self, path: str | Path, fsync: bool = False):
        self.path = Path(path)
        self.fsync = fsync
        self._f = None

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def rows(self) -> list[dict]:
        return read_rows(self.path) if self.path.is_file() else []

    def complete_rows(self) -> list[dict]:
        """The rows that survive :meth:`open` with resume (a torn last line does not)."""
        return read_rows(self.path, complete_only=True) if self.path.is_file() else []

    def done_keys(self) -> set[str]:
        return {r["key"] for r in self.complete_rows()}

    def open(self, resume: bool) -> None:
        parent = self.path.parent
        if not parent.is_dir():  # one rule everywhere: never create missing directories
            from memsched.instances.formats import InputError

            raise InputError(f"{self.path}: directory {parent} does not exist (memsched does not create directories)")
        if resume and self.path.is_file():
            # drop a torn last line so the next row starts on a fresh line
            with open(self.path, "rb+") as f:
                data = f.read()
                cut = data.rfind(b"\n") + 1
                if cut != len(data):
                    f.truncate(cut)
        try:
            self._f = open(self.path, "a" if resume else "w", encoding="utf-8")
        except OSError as e:
            from memsched.instances.formats import InputError

            raise InputError(f"{self.path}: cannot write: {e.strerror or e}") from None

    def append(self, row: dict) -> None:
        self._f.write(json.dumps(row, separators=(",", ":"), default=str) + "\n")  # row + newline in one write
        self._f.flush()
        if self.fsync:
            os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
