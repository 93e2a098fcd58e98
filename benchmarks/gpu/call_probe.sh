#!/usr/bin/env bash
# Device call E: benchmarks/gpu/probe.py (host scaling of HF decode in one process, softmax
# kernel edges, GQA attention per backend, compiled-call host floor). Packs $OUT/E.tar.gz.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
D=/tmp/res_E; mkdir -p "$D"
t0=$(date +%s)
timeout -s INT "${PROBE_S:-300}" python3 benchmarks/gpu/probe.py --out "$D" 2>&1 | tail -80
echo "call E: $(( $(date +%s) - t0 )) s"
tar -C "$D" -czf "$OUT/E.tar.gz" .
