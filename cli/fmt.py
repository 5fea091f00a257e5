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
