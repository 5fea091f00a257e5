"""numba's ``njit`` where numba can be used, a no-op decorator otherwise, for the compiled
kernels (solvers/ordering/downset_jit.py, solvers/dtr/eqscan.py, solvers/arena/kernel.py).

Each kernel names an environment variable and the value that forces its interpreted engine
(so that the tests can run both); :func:`load_njit` tells whether the compiled one is used.
"""
from __future__ import annotations

import os

__all__ = ["load_njit"]


def _identity_njit(*a, **k):
    def wrap(f):
        return f
    return wrap


def load_njit(env_var: str, forced: str):
    """``(True, numba.njit)``, or ``(False, a decorator that returns its function)`` when
    numba is not importable or ``os.environ[env_var]`` is ``forced`` (case-insensitive)."""
    if os.environ.get(env_var, "").lower() == forced:
        return False, _identity_njit
    try:  # pragma: no cover - depends on the environment
        from numba import njit
    except ImportError:  # pragma: no cover
        return False, _identity_njit
    return True, njit
