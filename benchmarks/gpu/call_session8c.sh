#!/usr/bin/env bash
# Third device call of session 8 (2026-11-28): session8c.py (DynamicCache cat: vectorized or
# generic; HF decode steps grown as generate does vs cropped). torch + transformers (the
# image's). Writes $OUT/session8c.{jsonl,log}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/session8c.log") 2>&1
t0=$(date +%s)
export PYTHONUNBUFFERED=1
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
timeout -s INT 200 python3 benchmarks/gpu/session8c.py --out "$OUT" 2>&1 | grep -v Warn | cut -c1-400
echo "## total: $(( $(date +%s) - t0 )) s"
rm -rf "$OUT/traces"
