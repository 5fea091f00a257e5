#!/usr/bin/env bash
# Re-run the README's command list from a fresh clone and write docs/readme-transcript.md.
#   bash docs/readme-transcript.sh            (from the repository root; takes a few minutes)
# The clone is installed editable in a new virtual environment whose dependencies come from
# the project venv (.venv); traces are read from ../shared/data/dtr-traces.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TRACES=$ROOT/../shared/data/dtr-traces
A=$TRACES/resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log
B=$TRACES/treelstm-6-8000000000.0-2020-10-1-12-54-1-default.log
T=$(mktemp -d /tmp/memsched-transcript.XXXXXX)
git clone -q "$ROOT" "$T/clone"
"$ROOT/.venv/bin/python" -m venv --without-pip "$T/venv"
SP=$("$T/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$ROOT/.venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > "$SP/project_deps.pth"
(cd "$T/clone" && "$T/venv/bin/python" -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1)
export PATH="$T/venv/bin:$PATH"
cd "$T/clone"
cp "$A" "$B" .
A=$(basename "$A"); B=$(basename "$B")
G=instances/shipped/random_layered_n30.json
memsched order $G --method best --json > s.json 2>/dev/null
OUT=$ROOT/docs/readme-transcript.md
n=0; bad=0
run() {
    n=$((n + 1))
    echo "\$ $*" >> "$OUT"
    "$@" > out.txt 2> err.txt
    rc=$?
    [ "$rc" = 0 ] || bad=$((bad + 1))
    head -c 900 out.txt > cut.txt
    cat cut.txt >> "$OUT"
    if [ -s cut.txt ] && [ "$(tail -c1 cut.txt | wc -l)" = 0 ]; then echo " [... cut]" >> "$OUT"; fi
    echo "[exit $rc; stderr: $(wc -l < err.txt) lines, $(grep -c Traceback err.txt) tracebacks]" >> "$OUT"
    echo >> "$OUT"
}
{
    echo "# README command list, re-run from a fresh clone"
    echo
    echo "Every command of the README's command list, run by \`bash docs/readme-transcript.sh\` from a fresh"
    echo "\`git clone\` of the repository (commit below) installed editable in a new virtual environment"
    echo "(the dependencies from the project venv), on the 2-core development machine. GRAPH ="
    echo "\`$G\`, TRACE/A/B = two DTR traces of ../shared/data/dtr-traces; the sweep uses a"
    echo "coarse grid to keep it short. Each command's stdout is shown cut at 900 characters, then its exit"
    echo "status and how many stderr lines (progress, solver logs) and tracebacks it wrote."
    echo
    echo '```'
    echo "fresh clone of $(git log --oneline -1)"
} > "$OUT"
run memsched info $G
run memsched order $G --method best
run memsched order $G --exact --time-limit 60
run memsched bound $G
run memsched eval $G s.json
run memsched remat $G --budget 0.8 --method cp --cap 1 --order free
run memsched remat $G --budget 0.8 --method cp --cap 1 --order given
run memsched pareto $G --budgets 1.0 0.9 0.8 --plot front.png
run memsched gadget knapsack --random 8 --seed 1 -o g.json
run memsched dtr replay "$A" --ratio 0.5 --heuristic dtr
run memsched dtr sweep "$A" "$B" --heuristic dtr,msps --results r.jsonl --hi 0.5 --step 0.1 --resolution 0.02 --repeats 1 -q
run memsched run $G --method best --backend numpy
run memsched arena $G --method best --plot arena.png
run memsched bench benchmarks/specs/smoke.toml -o results.jsonl -q
run memsched report results.jsonl
run memsched crosscheck $G --budget 0.8 --plot timelines.png
{
    echo '```'
    echo
    echo "$n commands, $bad with a non-zero exit status."
} >> "$OUT"
rm -rf "$T"
echo "wrote $OUT: $n commands, $bad failed"
