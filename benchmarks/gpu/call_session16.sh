#!/usr/bin/env bash
# Prepared device call (written in session 15, 2026-11-29, when no device was lent; issue #24,
# hardware-notes §55): first moe_layer.py (one Qwen3-30B-A3B MoE layer as NeMo AutoModel runs
# it, fwd+bwd on one H100/H200, bf16: six cases, EP-8-equivalent 16 local experts and EP 1
# with 128, micro-batch 4 and 1 x 4096, experts looped over 4 streams or torch._grouped_mm,
# fake-balanced or top-k router; ~2 s clock settling + CUDA-event timing + one profiler step
# each, measured beside estimate(modules="automodel"); ~60-120 s, capped at 240 s), then, if
# time remains, clock_law.py (~80 s). torch + transformers (the image's; no TE / DeepEP).
# Writes $OUT/moe_layer.jsonl (one row per case: measured_us and priced_us per kernel group,
# measured_by_launcher_us, priced_rows), $OUT/moe_layer_kernels.jsonl (every kernel of the
# profiled step: case, name, us, stream, group, forward label / autograd node),
# $OUT/session16.log, and clock_law's $OUT/clock_law{.jsonl,_smi.csv,.log}. Total <= ~6 min.
set -uo pipefail
# shellcheck source=benchmarks/gpu/_prologue.sh
source "$(dirname "$0")/_prologue.sh" session16
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv
timeout -s INT 240 python3 benchmarks/gpu/moe_layer.py --out "$OUT" 2>&1 | grep -v Warn | cut -c1-600
echo "## moe_layer: $(( $(date +%s) - t0 )) s"
if (( $(date +%s) - t0 < 300 )); then
  timeout -s INT 150 python3 benchmarks/gpu/clock_law.py --out "$OUT" --smi 2>&1 | cut -c1-600
fi
echo "## total: $(( $(date +%s) - t0 )) s"
rm -rf "$OUT/traces"
