"""B200 HBM read bandwidth against bytes in flight per SM (data/published/
blackwell_streaming.jsonl, SemiAnalysis microbench-blackwell) and what Little's law says of the
model's Blackwell streaming rate (benchmarks/blackwell_streaming.py, hardware-notes §35).
Nothing here is fitted: the assertions are hand-derived from the published figures."""

from __future__ import annotations

from types import ModuleType

import pytest
from _benchmarks import load_benchmark


def _bench() -> ModuleType:
    return load_benchmark("blackwell_streaming", keep_path=True)


def test_rows_cite_their_source() -> None:
    rows = _bench().read()
    assert len(rows) == 188
    assert len({r["id"] for r in rows}) == len(rows)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"hbm_read_vs_bytes_in_flight", "dram_load_latency"}
    for r in rows:
        assert r["hardware"] == "B200", r["id"]
        assert r["source"].startswith("https://github.com/SemiAnalysisAI/"), r["id"]
        assert r["commit"] and r["date"] and r["software"], r["id"]


def test_curve_and_littles_law() -> None:
    b = _bench()
    pts = b.curve(b.read())
    assert all(r2 >= r1 for (_, r1), (_, r2) in zip(pts, pts[1:], strict=False))
    # TMA 2D, 1 CTA x 4 stages of 128 x 32 fp32 tiles = 64 KiB in flight: 7.223 TB/s read;
    # the best 32 KiB point is LDGSTS 4 CTAs x 2 stages x 256 threads x 16 B, 6.553 TB/s.
    assert b.rate_at(pts, 65536.0) == pytest.approx(7.2227e12, rel=1e-3)
    assert b.rate_at(pts, 32768.0) == pytest.approx(6.5529e12, rel=1e-3)
    # Little's law: 148 SMs x 32 KiB / 6.553 TB/s = 740 ns loaded, against a ~0.6 us
    # lightly loaded cp.async round trip.
    assert b.little_latency_s(32768.0, 6.5529e12) == pytest.approx(148 * 32768 / 6.5529e12)
    assert 0.70e-6 < b.little_latency_s(32768.0, b.rate_at(pts, 32768.0)) < 0.78e-6
    with pytest.raises(ValueError, match="bytes_in_flight"):
        b.rate_at(pts, 0.0)


def test_aten_vectorized_kernel_bytes_in_flight() -> None:
    b = _bench()
    # CUDALoops.cuh: 2048 resident threads x 8 elements (16 for one-byte I/O) per thread.
    assert b.aten_bytes_in_flight(2, 1, 2) == 2048 * 8 * 2
    assert b.aten_bytes_in_flight(2, 2, 2) == 2048 * 8 * 4
    assert b.aten_bytes_in_flight(1, 1, 1) == 2048 * 8 * 1  # io_size 2: still 8 per thread
    # The int8 add_scalar row: 2^27 elements in 87.67 us = 55.35 waves of 148 x 2048 x 8.
    life = b.block_lifetime_s(87.67e-6, 2.0**27, 8.0)
    assert life == pytest.approx(87.67e-6 * 148 * 2048 * 8 / 2**27)
    assert 1.55e-6 < life < 1.61e-6


def test_gptoss_streaming_bound_is_small_at_aten_occupancy() -> None:
    # GB200 GPT-OSS-120B: the streaming rows run at >= 32 KiB per SM in flight (bf16 / fp32
    # aten kernels at full occupancy); capping every one at the curve's 32 KiB rate adds under
    # 1 % of the ~128 ms the measurement implies is missing, at 16 KiB about a quarter.
    b = _bench()
    g = b.gptoss_bound("mbridge2511_gb200_gptoss120b_bf16", b.curve(b.read()))
    gap = g["implied_ms"] - g["priced_ms"]
    assert 100.0 < gap < 160.0
    assert g["plus_32k_ms"] < 0.01 * gap
    assert 0.15 * gap < g["plus_16k_ms"] < 0.35 * gap
