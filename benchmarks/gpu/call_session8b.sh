#!/usr/bin/env bash
# Second device call of session 8 (2026-11-28): held-out torch.topk grid (slices x length x k,
# fp32/bf16, sorted or not) and stable argsorts, to test the top-k model built on the first
# call's router rows. torch only. Writes $OUT/session8b.{jsonl,log}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/session8b.log") 2>&1
t0=$(date +%s)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv
for part in topk:150 sorts:40; do
  timeout -s INT "${part#*:}" python3 benchmarks/gpu/session8.py --out "$OUT" --name session8b \
    --part "${part%%:*}" 2>&1 | grep -v Warn | cut -c1-300
  echo "## ${part%%:*}: $(( $(date +%s) - t0 )) s"
done
rm -rf "$OUT/traces"
