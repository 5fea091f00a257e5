"""Output paths and budgets, checked before any work starts.

One rule for every file the command line writes (``-o``, ``--keep``, ``--plot``,
``--results``, ``report -o DIR``):

* the directory the file goes into must already exist: memsched never creates
  missing parent directories (a typo such as ``/nonexistent/d/r.jsonl`` is refused,
  not turned into new folders at the root);
* the path must not be an existing directory, and the directory must be writable;
* a plot path must end in a format matplotlib writes (``.png``, ``.pdf``, ``.svg``,
  ...): ``--plot pdir`` or ``--plot front.txt`` is refused instead of silently
  writing ``pdir.png`` or failing after the solve.

Every check raises :class:`PathError` (a ``MemschedError``: one line, exit status 2).

Budgets (``--budget``, ``--budgets``) follow one rule, :func:`parse_budget`.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from memsched.formulations import MemschedError

__all__ = ["PathError", "check_output", "check_plot", "check_output_dir", "write_text", "save_figure",
           "PLOT_FORMATS", "Budget", "parse_budget", "BUDGET_HELP"]

# the formats matplotlib's Agg/PDF/SVG/PS backends write
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


class PathError(MemschedError):
    """An output path that cannot be written."""


def _parent_ok(p: Path, option: str) -> None:
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise PathError(f"{option} {p}: directory {parent} does not exist (memsched does not create directories)")
    if not parent.is_dir():
        raise PathError(f"{option} {p}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PathError(f"{option} {p}: directory {parent} is not writable")


def check_output(path, option: str = "-o", *, suffixes: tuple[str, ...] | None = None) -> Path:
    """Check that ``path`` can be written as a file (see the module rule); returns it as a Path.
    ``suffixes``: allowed file name endings (without dot), or None for any."""
    if path is None or str(path) == "":
        raise PathError(f"{option}: empty path")
    p = Path(path)
    if p.is_dir():
        raise PathError(f"{option} {p}: is a directory; give a file name")
    if suffixes is not None:
        ext = p.suffix.lower().lstrip(".")
        if ext not in suffixes:
            allowed = ", ".join("." + s for s in suffixes)
            if suffixes == PLOT_FORMATS:
                allowed = ".png, .pdf or .svg (also .eps, .ps, .jpg, .tif, .webp)"
            got = f"'.{ext}'" if ext else "no extension"
            raise PathError(f"{option} {p}: unsupported file type ({got}); use one of {allowed}")
    _parent_ok(p, option)
    if p.exists() and not os.access(p, os.W_OK):
        raise PathError(f"{option} {p}: file is not writable")
    return p


def check_plot(path, option: str = "--plot") -> Path:
    """A plot file: :func:`check_output` plus a format matplotlib can write (from the extension)."""
    return check_output(path, option, suffixes=PLOT_FORMATS)


def check_output_dir(path, option: str = "-o") -> Path:
    """A directory to write files into: it may exist (as a directory) or be created,
    but only inside an existing parent directory."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise PathError(f"{option} {p}: exists and is not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise PathError(f"{option} {p}: directory is not writable")
        return p
    _parent_ok(p, option)
    return p


def write_text(path, text: str, option: str = "-o") -> None:
    """Write a text file; any OS error is one line (PathError)."""
    try:
        Path(path).write_text(text)
    except OSError as e:
        raise PathError(f"{option} {path}: cannot write: {e.strerror or e}") from None


def save_figure(fig, path, option: str = "--plot", **kw) -> None:
    """``fig.savefig`` with a checked path; closes the figure; errors are one line."""
    import matplotlib.pyplot as plt

    check_plot(path, option)
    try:
        fig.savefig(path, **kw)
    except (OSError, ValueError) as e:
        raise PathError(f"{option} {path}: cannot write the plot: {getattr(e, 'strerror', None) or e}") from None
    finally:
        plt.close(fig)


# ----------------------------------------------------------------- budgets
BUDGET_HELP = ("memory budget: a number with a decimal point is a ratio of the given order's peak, "
               "0 < r <= 1 (0.8, 1.0); a whole number >= 2 or a number with a unit is bytes "
               "(37056, 37056B, 36KiB, 1.5MiB, 2GB); ratios become floor(r x peak) bytes")

_UNITS = {"b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class Budget:
    """A parsed ``--budget``: exactly one of ``ratio`` (of the given order's peak) or ``bytes``."""

    text: str
    ratio: float | None = None
    bytes: int | None = None

    def value(self):
        """What the library's ``budget`` arguments take: a ratio <= 1 (float) or bytes >= 2 (int)."""
        return self.ratio if self.ratio is not None else self.bytes

    def __str__(self) -> str:
        return self.text


def parse_budget(text: str, option: str = "--budget") -> Budget:
    """The one budget rule of the command line (see :data:`BUDGET_HELP`).

    * ``0.8``, ``1.0``, ``.5``, ``8e-1``: a ratio r of the given order's peak P, 0 < r <= 1;
      the library turns it into ``floor(r x P)`` bytes
      (:func:`memsched.formulations.ratio_budget`);
    * ``37056``: an integer >= 2 is bytes; ``37056B``, ``36KiB``, ``1.5MiB``, ``2GB``: bytes
      with a unit (KiB = 1024, KB = 1000; fractions of a byte rounded down);
    * refused, with the reason: ``2.0`` (a ratio above 1: write ``2`` or ``2B`` for bytes),
      ``1`` (write ``1.0`` for the whole peak), ``inf``/``nan``, zero, negative numbers,
      unknown units."""
    s = str(text).strip()
    low = s.lower()
    if low in ("inf", "+inf", "infinity", "nan", "-inf"):
        raise MemschedError(f"{option} {text}: a budget must be a finite ratio or byte count; "
                            "to solve without a memory limit use --objective peak or memsched order")
    if low.startswith("-"):
        raise MemschedError(f"{option} {text}: a budget must be positive")
    m = _RE.match(s)
    if not m:
        raise MemschedError(f"{option} {text}: expected a ratio (0.8) or bytes (37056, 37056B, 36KiB, 1.5GiB)")
    num, unit = m.group(1), m.group(2).lower()
    x = float(num)
    if not math.isfinite(x) or x <= 0:
        raise MemschedError(f"{option} {text}: a budget must be positive")
    if unit:
        if unit not in _UNITS:
            raise MemschedError(f"{option} {text}: unknown unit {m.group(2)!r} (use B, KB, MB, GB, KiB, MiB, GiB)")
        from fractions import Fraction

        b = math.floor(Fraction(num) * _UNITS[unit])
        if b < 2:
            raise MemschedError(f"{option} {text}: a byte budget must be at least 2 bytes")
        return Budget(s, bytes=int(b))
    is_integer = re.fullmatch(r"[0-9]+", num) is not None
    if is_integer:
        b = int(num)
        if b == 1:
            raise MemschedError(f"{option} 1: ambiguous; write 1.0 for a ratio (the whole given-order peak); "
                                "a byte budget is at least 2 bytes")
        return Budget(s, bytes=b)
    if x > 1:
        whole = int(x) if x == int(x) else None
        hint = f"; for {whole} bytes write {whole} or {whole}B" if whole else "; bytes are whole numbers (or carry a unit)"
        raise MemschedError(f"{option} {text}: a ratio must be at most 1 (a fraction of the given order's peak){hint}")
    return Budget(s, ratio=x)
