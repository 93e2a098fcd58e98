#!/usr/bin/env bash
# Prepared device call (written in session 9, 2026-11-29, when no device was lent): first
# session8c.py (DynamicCache cat vectorized or generic; HF decode grown vs cropped, ~90 s),
# then clock_law.py (the power limiter's clock vs GEMM length and load, bf16 and fp8; the
# grouped_mm forward with unit-variance vs 0.02-scaled weights, ~80 s). torch + transformers
# (the image's). Writes $OUT/session8c.{jsonl,log}, $OUT/clock_law{.jsonl,_smi.csv,.log}.
set -uo pipefail
# shellcheck source=benchmarks/gpu/_prologue.sh
source "$(dirname "$0")/_prologue.sh" session9
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv
timeout -s INT 200 python3 benchmarks/gpu/session8c.py --out "$OUT" 2>&1 | grep -v Warn | cut -c1-400
echo "## session8c: $(( $(date +%s) - t0 )) s"
timeout -s INT 200 python3 benchmarks/gpu/clock_law.py --out "$OUT" --smi 2>&1 | cut -c1-600
echo "## total: $(( $(date +%s) - t0 )) s"
rm -rf "$OUT/traces"
