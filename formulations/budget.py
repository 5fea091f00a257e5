"""The one rounding rule for a memory budget given as a ratio.

A ratio ``r`` of a reference memory ``P`` (the given order's peak for a graph,
the baseline memory for a DTR trace) means the budget ``B = floor(r x P)`` bytes:
the largest whole number of bytes that does not exceed ``r x P``. The product is
taken on the decimal value of ``r`` as written (``0.29`` is 29/100, not the
nearest binary float), so ``0.29 x 100`` is 29 bytes, never 28. This is simrd's
``int(ratio x baseline)`` except at those binary-rounding boundaries.

Used by remat (``resolve_budget``), DTR replay (``budget_for``) and every
command that turns a ratio into bytes.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .errors import MemschedError

__all__ = ["ratio_budget"]


def ratio_budget(ratio, reference: int) -> int:
    """``floor(ratio x reference)`` with ``ratio`` taken as the decimal it prints as."""
    if isinstance(ratio, bool):
        raise MemschedError(f"budget ratio must be a number, got {ratio!r}")
    if isinstance(ratio, Fraction):
        r = ratio
    elif isinstance(ratio, int):
        r = Fraction(ratio)
    else:
        try:
            x = float(ratio)
        except (TypeError, ValueError):
            raise MemschedError(f"budget ratio must be a number, got {ratio!r}") from None
        if not math.isfinite(x):
            raise MemschedError(f"budget ratio must be finite, got {ratio!r}")
        r = Fraction(repr(x)) if not isinstance(ratio, str) else Fraction(ratio.strip())
    if r <= 0:
        raise MemschedError(f"budget ratio must be positive, got {ratio!r}")
    return int(math.floor(r * int(reference)))
