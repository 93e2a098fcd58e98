#!/usr/bin/env bash
# Device call H: float8 inference per-call times with no profiler in the process (two weight
# shapes, a few batch sizes). Writes $OUT/float8_inference_untraced.jsonl.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
D=/tmp/res_H; mkdir -p "$D"
timeout -s INT 150 python3 benchmarks/gpu/float8_inference.py --out "$D" --no-trace \
  --name float8_inference_untraced --only 4096,14336 --ms 1,16,256,1024,4096 2>&1 | grep '^#'
timeout -s INT 80 python3 benchmarks/gpu/float8_inference.py --out "$D" --no-trace \
  --name float8_inference_untraced --only 14336,4096 --ms 1,256 2>&1 | grep '^#'
cp "$D/float8_inference_untraced.jsonl" "$OUT/"
