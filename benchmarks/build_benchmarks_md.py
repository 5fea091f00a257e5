"""Regenerate BENCHMARKS.md from committed files, with no measurement.

    .venv/bin/python benchmarks/build_benchmarks_md.py [--date YYYY-MM-DD]

1. renders the harness section, benchmarks/sections/80-harness.md, from the
   committed result files in benchmarks/results/ (harness_overhead.json,
   harness_sweep.jsonl; figures to benchmarks/results/figures/);
2. writes BENCHMARKS.md: a header (machine, date, commands) followed by every
   benchmarks/sections/*.md in name order.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MACHINE = "2 cores / 24 GiB RAM (x86-64 Linux, Python 3.11); shared by the whole team while measuring, see each section's load figures"


def header(date: str, scripts: list[str]) -> str:
    rows = [("make venv", ".venv with memsched[test,dask]")]
    rows += [(f".venv/bin/python {s}", "measure, rewrite its section") for s in scripts]
    rows += [(".venv/bin/python benchmarks/build_benchmarks_md.py", "rebuild this file from the committed files")]
    w = max(len(c) for c, _ in rows) + 2
    cmds = [f"{c:<{w}}# {why}" for c, why in rows]
    return "\n".join([
        "# memsched benchmarks", "",
        f"* Machine: {MACHINE}.",
        f"* Date: {date} (this file's generation; each section states when its numbers were measured).",
        "* Every number below was measured on that machine by the scripts in benchmarks/; ratios are measured "
        "side by side in one run.", "",
        "Commands:", "", "```", *cmds, "```", ""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default=str(ROOT / "benchmarks" / "sections"))
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--date", default=None, help="date to state (default: today, UTC)")
    ap.add_argument("--no-harness", action="store_true", help="do not re-render 80-harness.md")
    args = ap.parse_args(argv)
    sections, results = Path(args.sections), Path(args.results)
    if not args.no_harness and results.is_dir():
        from memsched.solvers.harness.section import harness_section

        text = harness_section(results, results / "figures", repo_root=ROOT)
        if text:
            sections.mkdir(parents=True, exist_ok=True)
            (sections / "80-harness.md").write_text(text)
    date = args.date or datetime.now(timezone.utc).strftime("%Y-%m-%d")
    scripts = sorted(f"benchmarks/{p.name}" for p in (ROOT / "benchmarks").glob("bench_*.py"))
    parts = [header(date, scripts)]
    files = sorted(sections.glob("*.md")) if sections.is_dir() else []
    for p in files:
        parts.append(p.read_text().rstrip() + "\n")
    Path(args.out).write_text("\n".join(parts))
    print(f"{args.out}: header + {len(files)} section(s): {', '.join(p.name for p in files) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
