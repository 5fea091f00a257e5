#!/usr/bin/env bash
# Prepare .venv on a machine that cannot reach the package index but whose python3 already
# holds torch with CUDA and memsched's runtime needs for the GPU check (numpy, numba): a venv
# over the system site-packages, memsched importable from this checkout (pip's editable
# install when it works offline, else a path finder written here), .venv/bin/memsched
# touched so that `make gpu-check` uses this venv as it is. Used for the device run of
# `make gpu-check` (docs/executors.md, "GPU check"); never needed where `make venv` works.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
python3 -m venv --system-site-packages .venv
# python3 may itself be a venv (its packages are then not the base's system site-packages)
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
python3 -c 'import site, sysconfig; print("\n".join(dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])))' > "$site/host-python.pth"
if ! .venv/bin/python -m pip install -q --no-deps --no-index --no-build-isolation -e . 2>/dev/null; then
  cat > "$site/memsched_checkout.py" <<PY
"""memsched's subpackages from the checkout at $root (pyproject.toml's package-dir)."""
import importlib.abc, importlib.util, os, sys
ROOT = "$root"
DIRS = {"memsched." + d: os.path.join(ROOT, d) for d in ("cli", "formulations", "instances", "solvers")}
class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        d = DIRS.get(name)
        if d is None:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(d, "__init__.py"),
                                                      submodule_search_locations=[d])
sys.meta_path.append(_Finder())
PY
  printf '%s\nimport memsched_checkout\n' "$root" > "$site/memsched_checkout.pth"
fi
touch .venv/bin/memsched
(cd / && "$root/.venv/bin/python" -c "import memsched.solvers.executors, memsched.solvers.remat.dtr_greedy, memsched.solvers.ordering.heuristics")
echo "setup_venv: .venv ready ($("$root/.venv/bin/python" --version))"
