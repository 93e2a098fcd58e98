#!/usr/bin/env bash
# Developer build without pip: compiles the C++ core into build/dev and copies the extension
# next to the Python sources, so `PYTHONPATH=python python ...` runs this checkout (each git
# worktree builds its own). Usage: scripts/dev_build.sh  (from any directory of the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache, when installed, shares objects between worktrees (paths are made relative to the
# checkout's parent folder, so every worktree's objects hash alike).
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f build/dev/CMakeCache.txt ]; then
  cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DPython_EXECUTABLE="$(command -v python)" >/dev/null
fi
cmake --build build/dev -j "$(nproc)"
cp build/dev/_core*.so python/roofline/
