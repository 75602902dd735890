#!/usr/bin/env bash
# Instructions (valgrind cachegrind's Ir) of a one-worker batch of N throughput episodes
# (`benchmarks/throughput.py`'s spec: two agents, 20 turns, judged) against the fake server;
# the embedded Redis is another process and is not counted. The worker's instructions per
# episode are (Ir(60) - Ir(10)) / 50: the start-up cancels out. Counts, not time, so two
# versions compare on a busy machine (spread between runs of one version: about 1 %).
#
# usage: bash benchmarks/instructions.sh N [TAG [PORT]]
#   run from the code to measure (PYTHONPATH set to it for another checkout), after
#   `python -m compileall -q sotopia_are benchmarks` (else each run pays the compiling), with
#   `python benchmarks/fake_openai_server.py --latency 0.05 --port PORT --answers sotopia`
#   running (PORT default 47111). Needs valgrind (apt-get install valgrind).
set -euo pipefail
N=$1
TAG=${2:-run}
PORT=${3:-47111}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
python -c "import sys, pathlib; sys.path.insert(0, '$here'); import throughput; \
throughput.write_specs(pathlib.Path('$work/specs.jsonl'), 20)"
LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no \
    --cachegrind-out-file="$work/cg.out" python -m sotopia_are batch "$work/specs.jsonl" \
    -n "$N" -w 1 --model openai/bench-model --api-base "http://127.0.0.1:$PORT/v1" \
    --data-dir "$work/store" --tag ir > /dev/null 2>&1
echo "$TAG N=$N $(grep summary "$work/cg.out")"
