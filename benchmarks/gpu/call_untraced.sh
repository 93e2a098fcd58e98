#!/usr/bin/env bash
# Device call G: the HF Llama eager / CUDA-graph programs again, timings only (no profiler
# session in the process: profiler_effect.py showed one leaves host-bound calls ~2x slower),
# 2 and 4 layers in separate processes. Writes $OUT/programs_untraced.jsonl.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
D=/tmp/res_G; mkdir -p "$D"
for L in 2 4; do
  timeout -s INT 150 python3 benchmarks/gpu/llama_programs.py --out "$D" --layers $L \
    --parts eager,graphs --no-trace --name programs_untraced 2>&1 | grep '^#' | tail -20
done
cp "$D/programs_untraced.jsonl" "$OUT/"
