"""The house plan: layers never point up (import-linter contracts in .importlinter),
and every package folder is installed under the memsched namespace."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("cli", "formulations", "instances", "solvers")


def _namespace_tree(tmp: Path) -> Path:
    """memsched/ as it is installed (the four layer folders inside it), made of links."""
    pkg = tmp / "memsched"
    pkg.mkdir()
    shutil.copy(ROOT / "memsched" / "__init__.py", pkg / "__init__.py")
    for d in LAYERS:
        os.symlink(ROOT / d, pkg / d)
    return tmp


def test_import_contracts_hold(tmp_path):
    tree = _namespace_tree(tmp_path)
    exe = Path(sys.executable).with_name("lint-imports")
    assert exe.exists(), "import-linter is part of the test extra: pip install -e '.[test]'"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    r = subprocess.run([str(exe), str(ROOT / ".importlinter")], cwd=tree, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_every_package_folder_is_installed():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = {"memsched"}
    for d in LAYERS:
        for init in (ROOT / d).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("memsched",) + rel))
    assert found == listed, f"packages in pyproject.toml differ from the folders: {sorted(found ^ listed)}"
    assert conf["package-dir"] == {"memsched": "memsched", **{f"memsched.{d}": d for d in LAYERS}}


def test_memsched_namespace_entry_points():
    import memsched

    g = memsched.load_graph(ROOT / "instances" / "shipped" / "chain_12.json")
    res = memsched.solve_order(g, method="best")
    assert memsched.evaluate(g, res.schedule).peak == res.peak
    assert callable(memsched.solve_remat) and callable(memsched.crosscheck)
