"""The power limiter's clock as a function of a GEMM's length and of the load around it, and
whether the expert grouped GEMM's forward depends on its weights' scale (issues #23, #24).

Why: the GEMM terms price a lone kernel's clock as ``f + (1 - f) tau / (tau + t)`` (``f``, ``tau``
fitted on H100 do_bench rows: 0.87, 2 ms). The H200 droop log (``data/programs/h200/clock/``)
shows do_bench-like back-to-back calls of a 2.4 ms GEMM settle at 0.83 of the cold kernel
rate within ~100 ms, and the H200 bench's long GEMMs come out 10-20 % slower than the model
(H100: bf16 4-11 %, fp8 about 2 %). This script measures the law directly, per dtype:

- ``cold``: after ``--idle`` seconds idle, the first 4 calls of each GEMM, one CUDA event
  between calls (the boost-clock kernel time);
- ``settled``: 1 s of back-to-back calls, the median over its last 300 ms;
- ``duty``: 1 s of calls each followed by an idle gap of ``g`` x the kernel time
  (``torch.cuda._sleep``; g = 0.25, 1, 4), the median kernel time over the last 300 ms: the
  clock at load ``L = 1 / (1 + g)``;
- ``do_bench``: ``triton.testing.do_bench`` (L2 flushed between calls, median), as every
  calibration row was timed.

GEMMs (bf16 ``x @ w`` and fp8 tensorwise ``torch._scaled_mm``): M x 4096 x 4096 for M = 512,
2048, 8192 and 16384 x 4096 x 14336 (about 25 us to 2.5 ms on an H100/H200). Then
``grouped``: ``torch._grouped_mm`` forward at the session-8 expert shapes (GPT-OSS fc1
2 x 4096 tokens x 2880 -> 5760; Qwen3-30B fc1 8 x 1024 x 2048 -> 1536) with weights of
standard deviation 1 and 0.02, kernel time by the profiler (does the data change the
clock?). nvidia-smi's SM clock and power are sampled beside it when ``--smi`` is given.

Rows: ``DIR/clock_law.jsonl``. Run: ``python3 benchmarks/gpu/clock_law.py --out DIR``
(about 80 s on one GPU with ``--idle 3``). Evidence only; nothing is fitted to it here.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import Out, do_bench, kernel_time, script_parser  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
SMOKE = DEV == "cpu"
SHAPES = ((512, 4096, 4096), (2048, 4096, 4096), (8192, 4096, 4096), (16384, 4096, 14336))
GAPS = (0.25, 1.0, 4.0)
GROUPED = (("gpt_oss_fc1", 4096, 2, 2880, 5760), ("qwen3_30b_fc1", 1024, 8, 2048, 1536))


def _events(fn: Callable[[], Any], n: int, gap_cycles: int = 0) -> list[float]:
    """Seconds of each of ``n`` calls (an event before and after each; an idle
    ``torch.cuda._sleep(gap_cycles)`` after each call, outside its events)."""
    if SMOKE:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out
    start = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        start[i].record()
        fn()
        end[i].record()
        if gap_cycles:
            torch.cuda._sleep(gap_cycles)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e-3 for s, e in zip(start, end, strict=True)]


def _tail_median(times: list[float], tail_s: float = 0.3, per_call_s: float = 0.0) -> float:
    """Median kernel time of the calls in the last ``tail_s`` seconds of the run (each call
    spans its kernel time plus ``per_call_s`` of idle gap)."""
    acc, kept = 0.0, []
    for t in reversed(times):
        kept.append(t)
        acc += t + per_call_s
        if acc >= tail_s:
            break
    return statistics.median(kept)


def _cycles_per_s() -> float:
    """GPU clock ticks per second of ``torch.cuda._sleep`` (measured: it spins on the SM
    clock counter, so it is timed rather than assumed)."""
    if SMOKE:
        return 1e9
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    t = _events(lambda: torch.cuda._sleep(10_000_000), 3)
    return 10_000_000 / statistics.median(t)


def gemms(out: Out, idle_s: float) -> None:
    """The cold, settled, duty-cycle and do_bench times of each GEMM, bf16 and fp8."""
    hz = _cycles_per_s()
    out.row(name="sleep_clock", what="torch.cuda._sleep ticks per second", value=hz)
    for m, k, n in SHAPES:
        if SMOKE:
            m, k, n = m // 64, k // 64, n // 64
        x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
        calls: dict[str, Callable[[], Any]] = {"bf16": lambda x=x, w=w: x @ w}
        if not SMOKE:
            a = x.to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=DEV).to(torch.float8_e4m3fn).t()
            one = torch.tensor(1.0, device=DEV)
            calls["fp8"] = lambda a=a, b=b, one=one: torch._scaled_mm(
                a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True)
        for dtype, fn in calls.items():
            fn()
            if not SMOKE:
                torch.cuda.synchronize()
            time.sleep(idle_s)
            cold = _events(fn, 4)
            per = max(min(cold), 1e-6)
            settled = _events(fn, max(8, int(1.0 / per)))
            row: dict[str, Any] = {"cold_s": cold, "settled_s": _tail_median(settled)}
            for g in GAPS:
                ticks = int(g * per * hz)
                ts = _events(fn, max(8, int(1.0 / (per * (1 + g)))), ticks)
                row[f"duty_{g:g}_s"] = _tail_median(ts, per_call_s=g * per)
            row["do_bench_s"] = do_bench(fn)
            out.row(name=f"gemm_{dtype}_{m}x{k}x{n}", what="clock law",
                    args={"m": m, "k": k, "n": n, "dtype": dtype}, **row)


def grouped(out: Out) -> None:
    """Forward kernel time of ``torch._grouped_mm`` with unit-variance and 0.02-scaled
    weights (same shapes, same layout as session 8)."""
    for name, m, g, k, n in GROUPED:
        if SMOKE:
            m, k, n = m // 64, k // 8, n // 8
        offs = torch.arange(1, g + 1, device=DEV, dtype=torch.int32) * m
        x = torch.randn(g * m, k, device=DEV, dtype=torch.bfloat16)
        for scale in (1.0, 0.02):
            w = (torch.randn(g, n, k, device=DEV, dtype=torch.bfloat16) * scale)
            wt = w.transpose(-2, -1)
            if SMOKE:
                t, launches, kernels = 0.0, 0.0, []
            else:
                t, launches, kernels = kernel_time(
                    lambda x=x, wt=wt, offs=offs: torch._grouped_mm(x, wt, offs=offs),
                    calls=20)
            out.row(name=f"grouped_{name}_w{scale:g}", what="grouped_mm forward",
                    args={"m_per_group": m, "groups": g, "k": k, "n": n,
                          "weight_std": scale}, fwd_kernel_s=t, fwd_launches=launches,
                    fwd_kernels=kernels[:3])


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--idle", type=float, default=3.0, help="seconds idle before each cold run")
    ap.add_argument("--smi", action="store_true", help="sample nvidia-smi beside the run")
    args = ap.parse_args()
    out = Out(args.out, "clock_law")
    smi = None
    if args.smi and not SMOKE:
        with open(os.path.join(args.out, "clock_law_smi.csv"), "w") as fh:
            smi = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,"
                 "clocks_event_reasons.sw_power_cap", "--format=csv", "-lms", "50"],
                stdout=fh, stderr=subprocess.DEVNULL)
    try:
        t0 = time.perf_counter()
        out.guarded("gemms", lambda: gemms(out, 0.0 if SMOKE else args.idle))
        print(f"## gemms: {time.perf_counter() - t0:.1f} s", flush=True)
        t0 = time.perf_counter()
        out.guarded("grouped", lambda: grouped(out))
        print(f"## grouped: {time.perf_counter() - t0:.1f} s", flush=True)
    finally:
        if smi is not None:
            smi.terminate()


if __name__ == "__main__":
    main()
