#!/usr/bin/env bash
# Device call of session 8 (2026-11-28): session8.py (MoE expert grouped GEMMs, GQA attention
# with head dim 64 and sliding windows, routing kernels, small reductions and AdamW). torch
# only: no wheels, no roofline core. Writes $OUT/session8.{jsonl,log}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/session8.log") 2>&1
t0=$(date +%s)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv
for part in experts:90 attn:45 routing:30 small:45 flex:120; do
  timeout -s INT "${part#*:}" python3 benchmarks/gpu/session8.py --out "$OUT" --part "${part%%:*}" 2>&1 \
    | grep -v Warn | cut -c1-400
  echo "## ${part%%:*}: $(( $(date +%s) - t0 )) s"
done
rm -rf "$OUT/traces"
