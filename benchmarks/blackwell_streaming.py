"""HBM3e streaming on Blackwell against Little's law and the model's streaming rate (issue #24,
task gptoss14): ``data/published/blackwell_streaming.jsonl``.

The file holds SemiAnalysis's B200 microbenchmarks (SemiAnalysisAI/microbench-blackwell
@bd204d8, 2026-03-06; Nsight Compute with the clocks as run): HBM read bandwidth against the
bytes each SM keeps in flight, for TMA 2D loads and for ``cp.async`` (LDGSTS) loads, and the
latency of one ``cp.async`` round trip. Nothing here is fitted or fed to the model.

What it prints:

1. the curve: bytes in flight per SM, read bandwidth, and the loaded latency Little's law
   gives (``latency = SMs x bytes in flight / bandwidth``, 148 SMs);
2. per GPU entry, the model's streaming rate (``rl.elementwise`` of 2^31 bf16 elements, read
   and written) and the bytes each SM must keep in flight to reach it at the B200's loaded
   latency measured at 32 KiB (Hopper's lower rate per SM needs far less);
3. the bytes of loads aten's ``vectorized_elementwise_kernel`` keeps in flight per SM at
   full occupancy (2048 threads, 8 elements per thread for two- or more-byte I/O, 16 for
   one-byte: ``CUDALoops.cuh`` ``elems_per_thread``), per dtype and number of inputs, and the
   read rate the B200 curve gives for it (linear between the measured points, TMA and
   LDGSTS pooled, the best at each size);
4. for GPT-OSS-120B rows (``benchmarks/gptoss_kernel_budget.py``), the milliseconds per
   micro-batch the streaming rows would add if each ran no faster than the curve's rate at
   32 KiB and at 16 KiB per SM (scaled by SMs to the row's GPU): the most that kernels
   keeping that little in flight could explain of the rows' gap.

Run: ``PYTHONPATH=python python benchmarks/blackwell_streaming.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import roofline as rl

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "blackwell_streaming.jsonl"

#: SMs of the B200 the curve was measured on.
B200_SMS = 148

#: Threads aten's vectorized elementwise kernel keeps resident per SM (128-thread blocks,
#: 16 of them: the SM's 2048-thread limit on sm90 / sm100).
ATEN_THREADS_PER_SM = 2048

#: GPT-OSS rows the bound is printed for.
GPTOSS_ROWS = ("mbridge2511_gb200_gptoss120b_bf16", "mbridge2511_b200_gptoss120b_bf16",
               "mbridge2511_gb300_gptoss120b_bf16")


def read(path: Path = DATA) -> list[dict[str, Any]]:
    """The published rows."""
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def curve(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(bytes in flight per SM, best read bytes/s measured at it) over TMA and LDGSTS rows,
    increasing in bytes in flight, each point no lower than the one before (more in flight
    never reads slower than the best measured with less)."""
    best: dict[float, float] = {}
    for r in rows:
        if r["kind"] == "hbm_read_vs_bytes_in_flight":
            b = float(r["config"]["bytes_in_flight_per_sm"])
            best[b] = max(best.get(b, 0.0), float(r["measured_bytes_per_s"]))
    out: list[tuple[float, float]] = []
    for b in sorted(best):
        out.append((b, max(best[b], out[-1][1] if out else 0.0)))
    return out


def rate_at(points: list[tuple[float, float]], bytes_in_flight: float) -> float:
    """Read bytes/s of the B200 curve at ``bytes_in_flight`` per SM: linear between measured
    points, proportional below the first (Little's law at its latency), flat past the last."""
    if bytes_in_flight <= 0:
        raise ValueError(f"bytes_in_flight must be > 0, got {bytes_in_flight!r}")
    b0, r0 = points[0]
    if bytes_in_flight <= b0:
        return r0 * bytes_in_flight / b0
    for (b1, r1), (b2, r2) in zip(points, points[1:], strict=False):
        if bytes_in_flight <= b2:
            return r1 + (r2 - r1) * (bytes_in_flight - b1) / (b2 - b1)
    return points[-1][1]


def little_latency_s(bytes_in_flight: float, read_bytes_per_s: float,
                     sms: float = B200_SMS) -> float:
    """Loaded latency (s) Little's law gives for a read rate: SMs x bytes in flight / rate."""
    return sms * bytes_in_flight / read_bytes_per_s


def model_stream_rate(hardware: str) -> float:
    """The model's streaming rate (bytes/s) on ``hardware``: a 2^31-element bf16 copy."""
    e = rl.elementwise(2**31, reads=1, writes=1, dtype="bf16", hardware=hardware)
    return float(e.bytes) / float(e.memory_s)


def aten_bytes_in_flight(input_bytes: int, inputs: int, output_bytes: int) -> float:
    """Bytes of loads aten's vectorized elementwise kernel keeps in flight per SM at full
    occupancy: 2048 threads x elements per thread (16 when the inputs' and output's element
    sizes sum to 1 byte... i.e. ``io_size`` 1, else 8) x the bytes each element loads."""
    io_size = input_bytes * inputs + output_bytes
    per_thread = 16 if io_size == 1 else 8
    return float(ATEN_THREADS_PER_SM * per_thread * input_bytes * inputs)


def _kernel_rows() -> list[dict[str, Any]]:
    """The rows of ``data/published/blackwell_kernels.jsonl``."""
    with (DATA.parent / "blackwell_kernels.jsonl").open() as f:
        return [json.loads(line) for line in f if line.strip()]


def block_lifetime_s(time_s: float, numel: float, per_thread: float,
                     sms: float = B200_SMS) -> float:
    """Seconds one wave of aten's resident blocks takes, read from a measured vectorized
    elementwise kernel of ``numel`` elements at ``per_thread`` elements per thread: the kernel
    runs numel / (SMs x 2048 x per_thread) waves back to back."""
    if time_s <= 0 or numel <= 0 or per_thread <= 0:
        raise ValueError(f"time_s, numel, per_thread must be > 0: {time_s!r}, {numel!r}, "
                         f"{per_thread!r}")
    return time_s / (numel / (sms * ATEN_THREADS_PER_SM * per_thread))


def gptoss_bound(rid: str, points: list[tuple[float, float]]) -> dict[str, float]:
    """ms per micro-batch of a GPT-OSS row's streaming rows (not GEMMs, attention or
    collectives) and what capping each at the curve's 32 / 16 KiB rate would add."""
    from gptoss_kernel_budget import budget

    b = budget(rid)
    sms = float(rl.hardware(b["row"]["hardware"]).sms or B200_SMS)
    caps = {kib: rate_at(points, kib * 1024.0) / B200_SMS * sms for kib in (32, 16)}
    out = {"priced_ms": b["total_ms"], "implied_ms": b["implied_ms"], "streaming_ms": 0.0,
           "plus_32k_ms": 0.0, "plus_16k_ms": 0.0}
    for _gkind, name, kind, _t, rate, ms in b["rows"]:
        if kind in ("gemm", "linear", "attention") or "all_to_all" in name or "GB/s" not in rate:
            continue
        r = float(rate.split()[0]) * 1e9
        out["streaming_ms"] += ms
        for kib, cap in caps.items():
            if r > cap:
                out[f"plus_{kib}k_ms"] += ms * (r / cap - 1.0)
    return out


def main() -> None:
    rows = read()
    pts = curve(rows)
    print("B200 HBM read bandwidth against bytes in flight per SM (best of TMA / LDGSTS)")
    print(f"{'KiB/SM':>7s} {'TB/s':>6s} {'latency':>9s}")
    for b, r in pts:
        print(f"{b / 1024:7.1f} {r / 1e12:6.2f} {little_latency_s(b, r) * 1e9:7.0f}ns")
    lat = [r for r in rows if r["kind"] == "dram_load_latency"]
    lows = sorted(float(r["measured_s"]) for r in lat)
    print(f"cp.async round trip, lightly loaded: median of {len(lat)} configs "
          f"{lows[len(lows) // 2] * 1e9:.0f} ns (min {lows[0] * 1e9:.0f} ns)")
    l32 = little_latency_s(32768.0, rate_at(pts, 32768.0))
    print()
    print(f"bytes in flight per SM the model's streaming rate needs at the B200's loaded "
          f"latency at 32 KiB ({l32 * 1e9:.0f} ns)")
    for hw in ("H100 SXM", "H200", "B200", "GB200", "B300", "GB300"):
        h = rl.hardware(hw)
        rate = model_stream_rate(hw)
        need = rate * l32 / float(h.sms or 1)
        print(f"  {hw:9s} {rate / 1e12:5.2f} TB/s over {h.sms} SMs: {need / 1024:5.1f} KiB/SM")
    print()
    print("aten vectorized_elementwise_kernel at full occupancy: loads in flight per SM and the "
          "B200 curve's read rate (+ its writes)")
    for name, ib, n, ob in (("bf16 unary", 2, 1, 2), ("bf16 binary", 2, 2, 2),
                            ("fp32 unary", 4, 1, 4), ("bf16 -> fp32 cast", 2, 1, 4),
                            ("int8 unary", 1, 1, 1)):
        bif = aten_bytes_in_flight(ib, n, ob)
        read_rate = rate_at(pts, bif)
        total = read_rate * (ib * n + ob) / (ib * n)
        model = model_stream_rate("B200")
        print(f"  {name:18s} {bif / 1024:5.0f} KiB/SM: read {read_rate / 1e12:5.2f} TB/s, "
              f"read + write {total / 1e12:5.2f} TB/s (model {model / 1e12:.2f})")
    k = [r for r in _kernel_rows() if r["id"] == "aten_add_scalar_int8_b200_128mb"][0]
    life = block_lifetime_s(float(k["measured_s"]), float(k["config"]["numel"]), 8.0)
    print(f"  published aten int8 add_scalar on a B200 (PyTorch #174553): "
          f"{k['measured_s'] * 1e6:.1f} us for 2^27 elements = one wave of 16 blocks per SM "
          f"every {life * 1e6:.2f} us; at that block lifetime:")
    for name, ib, n, ob in (("bf16 unary", 2, 1, 2), ("bf16 binary", 2, 2, 2),
                            ("fp32 unary", 4, 1, 4)):
        total = B200_SMS * ATEN_THREADS_PER_SM * 8 * (ib * n + ob) / life
        print(f"    {name:16s} read + write {total / 1e12:5.2f} TB/s against the model's "
              f"{model_stream_rate('B200') / 1e12:.2f} (the lower one binds)")
    print()
    print("GPT-OSS-120B streaming rows per micro-batch, and what a 32 / 16 KiB-per-SM ceiling adds")
    for rid in GPTOSS_ROWS:
        g = gptoss_bound(rid, pts)
        print(f"  {rid:38s} priced {g['priced_ms']:6.0f} ms, implied {g['implied_ms']:6.0f}; "
              f"streaming {g['streaming_ms']:5.1f} ms: +{g['plus_32k_ms']:.1f} (32 KiB), "
              f"+{g['plus_16k_ms']:.1f} (16 KiB)")


if __name__ == "__main__":
    main()
