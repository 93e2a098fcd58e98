"""The three "done" figures of issue #13 §1, in one printout.

1. ``roofline float8`` wall time with ROOFLINE_HARDWARE set (fresh interpreter, median / min).
2. ``rl.gemm(4096, 4096, 4096, hardware=hw)`` per call, in µs (best / median of repeats),
   beside ``rl.float8.linear`` and ``rl.attention``.
3. The default shape-aware model sweeping training float8 linears (tensorwise, H100 SXM,
   random shapes in [256, 65536]^3), in M linears/s, all threads and one thread.

Run: ``PYTHONPATH=python python benchmarks/speed_figures.py``. Timings vary with the load of
the (shared, 2-core) machine: the minimum is the cost, the median what one waits.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]


def cli_float8(repeat: int = 7) -> tuple[float, float]:
    env = {**os.environ, "ROOFLINE_HARDWARE": "H100 SXM",
           "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "roofline", "float8"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def per_call_us(stmt: str, env: dict[str, object], number: int = 5000) -> tuple[float, float]:
    runs = [t / number * 1e6 for t in timeit.repeat(stmt, globals=env, number=number, repeat=7)]
    return min(runs), statistics.median(runs)


def sweep_rate(points: int, threads: int) -> float:
    rng = np.random.default_rng(0)
    s = np.exp(rng.uniform(np.log(256), np.log(65536), size=(points, 3))).round()
    m, k, n = (np.ascontiguousarray(s[:, i]) for i in range(3))
    hw = rl.hardware("H100 SXM")
    rl.set_num_threads(threads)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        rl.float8.linear(m, k, n, "tensorwise", hw)
        best = min(best, time.perf_counter() - t0)
    rl.set_num_threads(0)
    return points / best / 1e6


def main() -> None:
    med, best = cli_float8()
    print(f"1. roofline float8, ROOFLINE_HARDWARE set: median {med:.3f} s, min {best:.3f} s "
          "(target < 0.5 s)")
    env: dict[str, object] = {"rl": rl, "hw": rl.hardware("H100 SXM")}
    for stmt in ("rl.gemm(4096, 4096, 4096, hardware=hw)",
                 "rl.float8.linear(4096, 4096, 4096, hardware=hw)",
                 "rl.attention(8, 32, 4096, 4096, 128, hardware=hw)"):
        lo, mid = per_call_us(stmt, env, 2000 if "attention" in stmt else 5000)
        print(f"2. {stmt:<52} best {lo:7.2f} µs, median {mid:7.2f} µs")
    print("   (target for rl.gemm: <= 5 µs)")
    for threads in (0, 1):
        rate = sweep_rate(1_000_000, threads)
        which = f"all {os.cpu_count()} threads" if threads == 0 else "1 thread"
        print(f"3. default-model training float8 linears, {which}: {rate:.2f} M/s "
              "(target >= 10 M/s on 2 cores)")


if __name__ == "__main__":
    main()
