# Sourced by the device call scripts: repository root, carried wheels installed and the core
# built (device_setup.sh, once per machine), PYTHONPATH and OUT set.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
bash benchmarks/gpu/device_setup.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
