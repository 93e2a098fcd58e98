#!/usr/bin/env bash
# Developer build without pip: compiles the C++ core into build/dev and copies the extension
# next to the Python sources, so `PYTHONPATH=python python ...` runs this checkout (each git
# worktree builds its own). Usage: scripts/dev_build.sh  (from any directory of the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/dev/CMakeCache.txt ]; then
  cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v python)" >/dev/null
fi
cmake --build build/dev -j "$(nproc)"
cp build/dev/_core*.so python/roofline/
