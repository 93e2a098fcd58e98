#!/usr/bin/env bash
# Device calls B and C (#26 items 2 and 3): real programs (llama_programs.py parts),
# recheck_rows.py, float8_inference.py. Usage: call_programs.sh B|C. Packs $OUT/<call>.tar.gz.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
D=/tmp/res_$1; mkdir -p "$D"
t0=$(date +%s)
if [ "$1" = B ]; then
  timeout -s INT "${PROGRAMS_S:-300}" python3 benchmarks/gpu/llama_programs.py --out "$D" \
    --parts eager,graphs,moe 2>&1 | grep -v '^{' | tail -60
  echo "programs B: $(( $(date +%s) - t0 )) s"
  TORCH_LOGS=output_code TORCH_LOGS_OUT="$D/compile.log" timeout -s INT "${RECHECK_S:-150}" \
    python3 benchmarks/gpu/recheck_rows.py --out "$D" 2>&1 | grep -v '^{' | tail -30
else
  timeout -s INT "${PROGRAMS_S:-300}" python3 benchmarks/gpu/llama_programs.py --out "$D" \
    --parts compiled,float8 2>&1 | grep -v '^{' | tail -60
  echo "programs C: $(( $(date +%s) - t0 )) s"
  timeout -s INT "${FLOAT8_S:-200}" python3 benchmarks/gpu/float8_inference.py --out "$D" \
    2>&1 | grep -v '^{' | tail -40
fi
echo "call $1: $(( $(date +%s) - t0 )) s"
[ -f "$D/compile.log" ] && gzip -9 "$D/compile.log"
tar -C "$D" -czf "$OUT/$1.tar.gz" .
ls -la "$OUT"; grep -h '"error"' "$D"/*.jsonl | cut -c1-300
