#!/usr/bin/env bash
# On the lent GPU machine (offline): install the carried wheels (.whl/: torchao, transformers,
# cmeel-eigen, platformdirs) into /tmp/site and build the C++ core for its python3, once per
# machine. Then: export PYTHONPATH=/tmp/site:$PWD/python
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  touch /tmp/site/.done
fi
export PYTHONPATH=/tmp/site
if ! ls python/roofline/_core*.so >/dev/null 2>&1; then
  t0=$(date +%s)
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
  cmake --build build/gpu -j "$(nproc)" >/dev/null
  cp build/gpu/_core*.so python/roofline/
  echo "built the core in $(( $(date +%s) - t0 )) s"
fi
