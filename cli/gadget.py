"""``memsched gadget knapsack|3partition``."""
from __future__ import annotations

import json
from pathlib import Path


def cli_gadget(args) -> int:
    """``memsched gadget knapsack|3partition``: build, print a summary (or JSON),
    and with ``-o FILE`` write the instance and ``FILE.answer.json``."""
    from memsched.instances.gadgets import (GadgetError, knapsack_gadget, load_items, random_knapsack,
                                            random_three_partition, three_partition_gadget)
    from memsched.instances.formats import graph_to_json

    if (args.items is None) == (args.random is None):
        raise GadgetError("gadget: give exactly one of --items FILE or --random N")
    if args.output:
        from memsched.cli.paths import check_output

        check_output(args.output, "-o")
    if args.kind == "knapsack":
        if args.items is not None:
            items, W = load_items(args.items, "knapsack")
            items = [{"size": s, "cost": w} for s, w in items]
        else:
            items, W = random_knapsack(args.random, args.seed)
        g, ans = knapsack_gadget(items, W, args.objective)
    else:
        nums = load_items(args.items, "3partition") if args.items is not None else random_three_partition(args.random, args.seed)
        g, ans = three_partition_gadget(nums, cap=args.cap, objective=args.objective)
    ans = {"graph": g.name, **ans}
    if args.output:
        out = Path(args.output)
        answer = Path(str(out) + ".answer.json")
        written = []
        try:  # both files or neither: an instance without its answer is left behind by no failure
            for path, obj in ((out, graph_to_json(g)), (answer, ans)):
                path.write_text(json.dumps(obj, indent=1) + "\n")
                written.append(path)
        except OSError as e:
            for done in written:
                done.unlink(missing_ok=True)
            raise GadgetError(f"{path}: cannot write: {e}") from None
    if args.json:
        print(json.dumps(ans if args.output else {**ans, "instance": graph_to_json(g)}, default=str))
        return 0
    rows = [("graph", g.name), ("operators", g.n_ops), ("objective", ans["objective"])]
    if ans["kind"] == "knapsack":
        rows += [("items", len(ans["items"])), ("capacity", ans["capacity"]), ("knapsack optimum", ans["knapsack_optimum"])]
        rows += [("budget (bytes)", ans["budget"])] if "budget" in ans else [("extra compute allowed", ans["extra_compute"])]
    else:
        rows += [("numbers", len(ans["numbers"])), ("target T", ans["target"]), ("cap", ans["cap"]),
                 ("answer", ans["answer"]), ("budget (bytes)", ans["budget"])]
        if ans["objective"] == "peak":
            rows.append(("extra compute allowed", ans["extra_compute"]))
    rows.append(("known optimum", "infeasible" if ans["optimum"] is None and ans["objective"] == "compute"
                 else (f"> {ans['budget']}" if ans["optimum"] is None else ans["optimum"])))
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k.ljust(w)}  {v}")
    if args.output:
        print(f"wrote {args.output} and {args.output}.answer.json")
    else:
        print("(use -o FILE to write the instance and FILE.answer.json)")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("gadget", help="generate NP-hardness gadget instances with known optima")
    s.set_defaults(func=cli_gadget, gadget_parser=s)
    s.add_argument("kind", choices=["knapsack", "3partition"],
                   help="source problem: knapsack (remat gadget with a known optimum) or 3partition (a YES/NO instance)")
    s.add_argument("--items", metavar="FILE", help="source problem JSON: knapsack {'items': [{'size':..,'cost':..}], "
                   "'capacity': W}; 3partition {'numbers': [...]}")
    s.add_argument("--random", type=int, metavar="N", help="random source problem with N items (3partition: N numbers, a multiple of 3)")
    s.add_argument("--seed", type=int, default=0, help="seed of --random (default 0)")
    s.add_argument("--objective", choices=["compute", "peak"], default="compute",
                   help="compute: least compute within a peak budget; peak: least peak within an extra-compute allowance")
    s.add_argument("--cap", type=int, default=1, help="recompute cap of the 3-partition gadget (default 1)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the instance (and FILE.answer.json with the known optimum)")
    s.add_argument("--json", action="store_true",
                   help="print the known answer as one JSON object (with the instance itself unless -o is given)")
