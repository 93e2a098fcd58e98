#!/usr/bin/env bash
# Device call of session 6 (2026-11-28): session6.py (GQA backward vs KV heads, compiled norms
# over rows and columns, torchao float8 training speedups on the H200). Needs .whl/ (torchao);
# the roofline core is not built (torch and torchao only). Writes $OUT/session6.{jsonl,log}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/session6${PART:+_$PART}.log") 2>&1
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/torchao-*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nproc; nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv
python3 -c "import torch, torchao; print(torch.__version__, torchao.__version__)"
PART=${PART:-all}
if [ "$PART" = f8host ]; then
  timeout -s INT 200 python3 benchmarks/gpu/session6.py --out "$OUT" --part f8host 2>&1 | grep -v Warn
  echo "## total: $(( $(date +%s) - t0 )) s"; exit 0
fi
timeout -s INT 70 python3 benchmarks/gpu/session6.py --out "$OUT" --part gqa 2>&1 | grep -v Warn
echo "## gqa: $(( $(date +%s) - t0 )) s"
timeout -s INT 80 python3 benchmarks/gpu/session6.py --out "$OUT" --part norms 2>&1 | grep -v Warn
echo "## norms: $(( $(date +%s) - t0 )) s"
timeout -s INT 200 python3 benchmarks/gpu/session6.py --out "$OUT" --part f8train 2>&1 | grep -v Warn
echo "## total: $(( $(date +%s) - t0 )) s"
