#!/usr/bin/env bash
# Device call D: the compiled bench families at --full, the Llama programs with 4 layers
# (eager, CUDA graphs; the slope against 2 layers is the per-layer cost), and the float8
# inference shapes call C ran out of time for. Packs $OUT/D.tar.gz.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
D=/tmp/res_D; mkdir -p "$D"
t0=$(date +%s)
timeout -s INT "${COMPILED_S:-150}" python3 -m roofline bench --full --families '*_compiled' \
  -o "$D/bench_h200_compiled_full.jsonl" 2>&1 | grep -v Warning | tail -8
echo "compiled --full: $(( $(date +%s) - t0 )) s"
timeout -s INT "${PROGRAMS_S:-100}" python3 benchmarks/gpu/llama_programs.py --out "$D" \
  --layers 4 --parts eager,graphs 2>&1 | grep '^#' | tail -30
echo "programs L4: $(( $(date +%s) - t0 )) s"
timeout -s INT "${FLOAT8_S:-70}" python3 benchmarks/gpu/float8_inference.py --out "$D" \
  --only 4096,1024 --ms 16,256,4096 2>&1 | grep '^#' | tail -5
echo "call D: $(( $(date +%s) - t0 )) s"
tar -C "$D" -czf "$OUT/D.tar.gz" .
ls -la "$OUT"
