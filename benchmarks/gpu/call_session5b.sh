#!/usr/bin/env bash
# Device call 2 of 2026-11-28: what `import roofline` spends on this host (python -X importtime,
# the 25 slowest modules), trace reading speed, and the float8 sweep per core twice more.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
exec > >(tee "$OUT/session5b.log") 2>&1
t0=$(date +%s)
python3 -X importtime -c "import roofline" 2> /tmp/imp.txt; sort -t'|' -k2 -n /tmp/imp.txt | tail -25
python3 -X importtime -c "import numpy, pandas, rich" 2>&1 | tail -1
echo "## trace_speed"
timeout -s INT 100 python3 benchmarks/trace_speed.py --repeat 2
for core in 5 9; do
  echo "## sweep_speed per core (taskset -c $core)"
  timeout -s INT 90 taskset -c $core python3 benchmarks/sweep_speed.py --points 1000000 | tail -5
done
echo "## total: $(( $(date +%s) - t0 )) s"
