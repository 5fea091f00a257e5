"""Text output shared by every command: byte counts with units, aligned tables, JSON."""
from __future__ import annotations

import json
import math


def fmt_bytes(n) -> str:
    """Exact integer bytes plus a human unit: ``46319 (45.2 KiB)``."""
    if n is None:
        return "-"
    n = int(n)
    x, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            break
        x /= 1024
    return str(n) if unit == "B" else f"{n} ({x:.1f} {unit})"


def fmt_num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return f"{x:.6g}"
    return str(x)


def table(rows: list[list], headers: list[str]) -> str:
    """Plain aligned text table; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [[fmt_num(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]
    numeric = [all(not isinstance(r[k], str) or r[k] in ("-",) for r in rows) for k in range(len(headers))]
    out = []
    for n, r in enumerate(cells):
        out.append("  ".join(c.rjust(w) if numeric[k] and n else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def emit_json(obj) -> None:
    print(json.dumps(obj, indent=None if isinstance(obj, dict) and len(json.dumps(obj)) > 2000 else 1, default=str))


class solver_output_to_stderr:
    """While solvers run, everything they print goes to stderr, so that stdout holds only
    the result (``--json`` stays parseable with ``--progress``): file descriptor 1 is
    pointed at stderr, which catches Python prints and native ones (HiGHS, CP-SAT logs).
    ``sys.stdout`` itself is left alone: Pyomo's tee of the HiGHS log deadlocks when
    ``sys.stdout`` and ``sys.stderr`` are the same object. When stdout is not file
    descriptor 1 (captured by a test), nothing is redirected."""

    def __init__(self):
        self.saved_fd = None

    def __enter__(self):
        import os
        import sys

        try:
            real = sys.stdout.fileno() == 1
        except (AttributeError, OSError, ValueError):
            real = False
        if real:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
                self.saved_fd = os.dup(1)
                os.dup2(2, 1)
            except OSError:
                self.saved_fd = None
        return self

    def __exit__(self, *exc):
        import os
        import sys

        if self.saved_fd is not None:
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except (OSError, ValueError):
                    pass
            _flush_c_stdio()
            os.dup2(self.saved_fd, 1)
            os.close(self.saved_fd)
            self.saved_fd = None
        return False


def _flush_c_stdio() -> None:
    """fflush(NULL): push what native code buffered in C stdio to the fd it was meant for
    (stderr, while redirected) before fd 1 is restored."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:
        pass


def byte_unit(max_bytes) -> tuple[float, str]:
    """(divisor, unit) for a bytes axis: the one implementation,
    :func:`memsched.solvers.harness.plots.byte_unit` (loaded when a plot is drawn)."""
    from memsched.solvers.harness.plots import byte_unit as unit

    return unit(max_bytes)


def distinct_colors(n: int) -> list:
    """``n`` distinct colours: :func:`memsched.solvers.harness.plots.distinct_colors`."""
    from memsched.solvers.harness.plots import distinct_colors as colors

    return colors(n)
