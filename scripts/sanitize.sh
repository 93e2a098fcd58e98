#!/usr/bin/env bash
# Builds the C++ core with AddressSanitizer + UndefinedBehaviorSanitizer into build/asan and runs
# the C++-facing tests against it (ASan preloaded, and libstdc++ with it: otherwise the first C++
# exception that crosses into Python aborts). Usage: scripts/sanitize.sh [pytest args]
# Exits non-zero on any sanitizer report (halt_on_error) or test failure.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f build/asan/CMakeCache.txt ]; then
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DPython_EXECUTABLE="$(command -v python)" >/dev/null
fi
cmake --build build/asan -j "$(nproc)"
rm -rf build/asan/pkg && mkdir -p build/asan/pkg
cp -r python/roofline build/asan/pkg/roofline
rm -f build/asan/pkg/roofline/_core*.so
cp build/asan/_core*.so build/asan/pkg/roofline/
asan="$(g++ -print-file-name=libasan.so)"
ubsan="$(g++ -print-file-name=libubsan.so)"
stdcxx="$(g++ -print-file-name=libstdc++.so)"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(tests/test_properties.py tests/test_bad_input.py tests/test_hostile_inputs.py
         tests/test_attention.py tests/test_attention_backends.py tests/test_gemm.py
         tests/test_grouped_gemm.py tests/test_float8.py tests/test_norms.py
         tests/test_fast_paths.py tests/test_trace_scan.py tests/test_trace_tree.py)
fi
# Python's allocator leaks by design: leak checking off; any other report stops the run.
LD_PRELOAD="$asan $ubsan $stdcxx" \
ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1" \
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
ROOFLINE_SANITIZE=0 PYTHONPATH=build/asan/pkg \
  python -m pytest -q -x -p no:cacheprovider "${tests[@]}"
