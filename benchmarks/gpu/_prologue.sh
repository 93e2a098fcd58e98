# Sourced by the device call scripts that run on the image's own torch (no wheels carried):
# repository root, OUT (default /tmp/out) created, everything after it tee'd to
# $OUT/<name>.log (name: the first argument), t0 set for the scripts' "## ... s" timers and
# unbuffered Python. Wheel-installing calls source _env.sh instead.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/${1:?_prologue.sh needs the log name}.log") 2>&1
t0=$(date +%s)
export PYTHONUNBUFFERED=1
