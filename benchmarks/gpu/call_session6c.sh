#!/usr/bin/env bash
# Device call 3 of session 6 (2026-11-28): the #25 speed figures on the lease's quiet host
# after the session's merges (the trace pricer now derives each GEMM's clock from the
# trace's load): trace reading speed and memory, import time, and the float8 sweep per core.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
exec > >(tee "$OUT/session6c.log") 2>&1
t0=$(date +%s)
echo "## import roofline (python -X importtime, cumulative us), 3 runs"
for i in 1 2 3; do python3 -X importtime -c "import roofline" 2>&1 | tail -1; done
echo "## trace_speed"
timeout -s INT 100 python3 benchmarks/trace_speed.py --repeat 2
echo "## sweep_speed per core (taskset -c 5)"
timeout -s INT 90 taskset -c 5 python3 benchmarks/sweep_speed.py --points 1000000 | tail -5
echo "## total: $(( $(date +%s) - t0 )) s"
