"""Shared test setup: tests/ on sys.path (for ``strategies``), the shared-data path,
and a hypothesis profile without deadlines (tests set max_examples themselves)."""
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

ROOT = TESTS.parent
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()

settings.register_profile("memsched", deadline=None)
# CI runs a fixed, reproducible set of examples (the same ones each run, so a red CI is
# always reproducible locally with CI=true); developers' runs explore new random ones.
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "memsched")


@pytest.fixture
def shared_data() -> Path:
    """../shared/data relative to the project root; skips the test when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


@pytest.fixture
def cp_phases(monkeypatch):
    """The CP driver without its exhaustive search of small graphs (cp.EXHAUSTIVE_SHARE = 0),
    which decides the tiny test graphs before any later phase: for the tests of those phases."""
    from memsched.solvers.remat import cp

    monkeypatch.setattr(cp, "EXHAUSTIVE_SHARE", 0.0)
