"""How fast the power limiter drops the SM clock under GEMM load, and how fast it recovers
(issue #23: do short profiled windows run at the boost clock?).

One fp8 tensorwise ``torch._scaled_mm`` (16384 x 4096 x 14336, e4m3, fast accumulation) and one
bf16 matmul of the same shape, each: 8 s idle, then 3 s of back-to-back calls with a CUDA event
between calls (kernel time per call, averaged over windows of time since the load started);
then, five times, 2 s of load, an idle gap (2 ms, 20 ms, 200 ms, 1 s, 3 s) and 8 calls (does
the gap restore the boost clock?). Run it beside ``nvidia-smi --query-gpu=timestamp,clocks.sm,
power.draw,temperature.gpu,clocks_event_reasons.sw_power_cap --format=csv -lms 50``.

Prints one line per phase (µs per call). Evidence only; nothing is fitted to it.
Run (on the GPU machine): ``python3 benchmarks/gpu/clock_droop.py``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import torch

WINDOWS_MS = ((0, 3), (3, 10), (10, 20), (20, 50), (50, 100), (100, 200), (200, 500),
              (500, 1000), (1000, 2000), (2000, 3000))
GAPS_S = (0.002, 0.02, 0.2, 1.0, 3.0)


def burst(fn: Callable[[], Any], n: int) -> list[float]:
    """Milliseconds per call of ``n`` back-to-back calls (an event between calls)."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        fn()
        ev[i + 1].record()
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) for i in range(n)]


def windows(ms: list[float]) -> str:
    """Mean µs per call in each window of time since the burst began."""
    ends = list(itertools.accumulate(ms))
    out = []
    for a, b in WINDOWS_MS:
        xs = [v for v, t in zip(ms, ends, strict=True) if a <= t < b]
        out.append(f"{a}-{b}:{1e3 * sum(xs) / len(xs):.0f}" if xs else f"{a}-{b}:-")
    return " ".join(out)


def main() -> None:
    dev = "cuda"
    a = torch.randn(16384, 4096, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(14336, 4096, device=dev).to(torch.float8_e4m3fn).t()
    s = torch.tensor(1.0, device=dev)
    x = torch.randn(16384, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, 14336, device=dev, dtype=torch.bfloat16)

    def fp8() -> Any:
        return torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16, use_fast_accum=True)

    def bf16() -> Any:
        return x @ w

    for fn, tag, ms_per_call in ((fp8, "fp8", 1.3), (bf16, "bf16", 2.4)):
        fn()
        torch.cuda.synchronize()
        time.sleep(8.0)
        print(tag, "cold (us per kernel, window ms)",
              windows(burst(fn, int(3000 / ms_per_call))), flush=True)
        for gap in GAPS_S:
            burst(fn, int(2000 / ms_per_call))
            time.sleep(gap)
            first = burst(fn, 8)
            print(tag, "after 2s load idle", gap, "s first kernels us",
                  [round(v * 1e3) for v in first], flush=True)


if __name__ == "__main__":
    main()
