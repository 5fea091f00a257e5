"""Regenerate the instance files shipped in instances/shipped/ (deterministic).

Run from the project root:  .venv/bin/python -m instances.make_shipped
Every file is native memsched-graph JSON v1 (docs/format.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

from memsched.instances.formats import save_graph
from memsched.instances.generators import chain, random_layered, random_multi_output, tree, unet

HERE = Path(__file__).resolve().parent / "shipped"


def shipped_graphs() -> dict:
    """file name -> Graph, exactly as shipped."""
    return {
        "unet_small.json": unet(depth=3, width=1, base=1024, halving=False, name="unet_small"),
        "chain_12.json": chain(12, size=100, name="chain_12"),
        "tree_15.json": tree(15, seed=1, name="tree_15"),
        "random_layered_n30.json": random_layered(30, seed=0, name="random_layered_n30"),
        "random_layered_n100.json": random_layered(100, seed=0, name="random_layered_n100"),
        "multi_output_12.json": random_multi_output(12, seed=3, name="multi_output_12"),
    }


def main(argv=None) -> int:
    out = Path(argv[0]) if argv else HERE
    out.mkdir(parents=True, exist_ok=True)
    for fname, g in shipped_graphs().items():
        save_graph(g, out / fname)
        print(f"{out / fname}: {g.n_ops} operators, {g.n_tensors} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
