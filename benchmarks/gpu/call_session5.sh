#!/usr/bin/env bash
# Device call of 2026-11-28 (session 5): small attention / compiled-norm kernel times
# (small_kernels.py), then the speed figures of issue #25 on a quiet 16-core host (import,
# CLI, trace reading, torch.estimate of a Llama-3-70B, float8 sweep per core). Needs .whl/
# (torchao, cmeel-eigen, cmeel, platformdirs, msgspec). Writes $OUT/session5.log and
# $OUT/small_kernels.jsonl.
set -uo pipefail
. "$(dirname "$0")/_env.sh"
exec > >(tee "$OUT/session5.log") 2>&1
t0=$(date +%s)
nproc; python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"
timeout -s INT 150 python3 benchmarks/gpu/small_kernels.py --out "$OUT" 2>&1 | grep -v Warning
echo "## kernels: $(( $(date +%s) - t0 )) s"
echo "## import roofline (python -X importtime, cumulative us), 5 runs"
for i in 1 2 3 4 5; do python3 -X importtime -c "import roofline" 2>&1 | tail -1; done
for i in 1 2 3; do /usr/bin/time -f "import numpy %e s" python3 -c "import numpy"; done
echo "## cli_speed"
timeout -s INT 60 python3 benchmarks/cli_speed.py --repeat 5
echo "## trace_speed"
timeout -s INT 90 python3 benchmarks/trace_speed.py --repeat 2
echo "## torch_estimate_speed"
timeout -s INT 60 python3 benchmarks/torch_estimate_speed.py --repeat 2
echo "## sweep_speed per core (taskset -c 3)"
timeout -s INT 120 taskset -c 3 python3 benchmarks/sweep_speed.py --points 1000000
echo "## total: $(( $(date +%s) - t0 )) s"
