#!/usr/bin/env bash
# Device call A (#26 item 1): roofline bench --full (every non-compiled family), the compiled
# families at --quick, and `roofline calibrate` measuring this GPU. Rows and logs to $OUT.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
nvidia-smi > "$OUT/nvidia_smi.txt" 2>&1
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE >> "$OUT/nvidia_smi.txt" 2>&1
fams=$(python3 -m roofline bench --list | grep -v _compiled | tr '\n' ' ')
t0=$(date +%s)
timeout -s INT "${BENCH_S:-330}" python3 -m roofline bench --full --families $fams \
  -o "$OUT/bench_h200.jsonl" 2>&1 | tail -40
echo "bench --full: $(( $(date +%s) - t0 )) s, $(wc -l < "$OUT/bench_h200.jsonl") rows"
t0=$(date +%s)
timeout -s INT "${COMPILED_S:-90}" python3 -m roofline bench --quick --families '*_compiled' \
  -o "$OUT/bench_h200.jsonl" --append 2>&1 | tail -20
echo "compiled --quick: $(( $(date +%s) - t0 )) s, $(wc -l < "$OUT/bench_h200.jsonl") rows"
t0=$(date +%s)
timeout "${CALIBRATE_S:-45}" python3 -m roofline calibrate --device cuda \
  -o "$OUT/profile_measured.json" > "$OUT/calibrate_cuda.txt" 2>&1
echo "calibrate --device cuda: rc $? in $(( $(date +%s) - t0 )) s"; tail -30 "$OUT/calibrate_cuda.txt"
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE >> "$OUT/nvidia_smi.txt" 2>&1
