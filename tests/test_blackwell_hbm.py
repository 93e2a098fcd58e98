"""Blackwell HBM peaks as the silicon runs them (data/hardware.csv, hardware-notes §41), and
Blackwell's mxfp8_quantize_fraction re-derived over the B200's streaming rate by its own
procedure (benchmarks/fit_mxfp8_quantize.py: the median of nine published B200 kernels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _benchmarks import load_benchmark

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
MHZ = 1e6


def peak(bus_bits: int, memory_clock_hz: float) -> float:
    """HBM peak (B/s): bus bits / 8 x the memory clock x 2 transfers a clock (as CUDA's
    memoryBusWidth and memoryClockRate give it, and torchao's roofline computes it)."""
    return bus_bits / 8 * memory_clock_hz * 2


def test_b200_and_b300_run_a_7680_bit_bus_at_3996_mhz() -> None:
    # torchao PR #4002 (NVIDIA B200: memoryBusWidth 7680, nvidia-smi clocks.max.memory
    # 3996 MHz) and ademeure/QuickRunCUDA (NVIDIA B300 SXM6 AC: memoryBusWidth 7680,
    # memoryClockRate 3996000 kHz): 960 B x 7.992e9 = 7.67232e12 B/s.
    assert peak(7680, 3996 * MHZ) == 7.67232e12
    for name in ("B200", "B300", "NVIDIA B300 SXM6 AC"):
        assert rl.hardware(name).mem_bytes_per_s == peak(7680, 3996 * MHZ), name


def test_gb200_runs_a_7936_bit_bus_at_3996_mhz() -> None:
    # torchao benchmarks/prototype/nvfp4_training/README.md: "NVIDIA GB200 ... Peak memory
    # bandwidth from CUDA device properties: 7928.1 GB/s"; 7936 bits x 3996 MHz is the bus x
    # clock that gives it (992 B x 7.992e9 = 7928.064 GB/s).
    assert peak(7936, 3996 * MHZ) / 1e9 == pytest.approx(7928.1, abs=0.05)
    assert rl.hardware("GB200").mem_bytes_per_s == peak(7936, 3996 * MHZ) == 7.928064e12


def test_enabled_channels_match_the_usable_capacity() -> None:
    # 8 HBM3e stacks, 16 512-bit controllers (8192 bits, 192 GiB on B200 / GB200, 288 GiB
    # on B300 / GB300): the labels "180 / 186 / 288 GB" count 15 / 16 and 31 / 32 of them in
    # GiB (180 = 192 x 15/16, 186 = 192 x 31/32), the same fractions as the buses. What CUDA
    # reports (hardware-notes "GPU memory capacities as the devices report them") is that
    # enabled share less the 0.86-0.91 % the driver keeps: B200 182642 / 184320 MiB, GB200
    # 188733 / 190464, B300 274113 / 276480 (15/16 of 288 GiB), GB300 283136 / 285696 (31/32).
    gib = 2**30
    for name, physical_gib, enabled in (("B200", 192, 7680 / 8192), ("GB200", 192, 7936 / 8192),
                                        ("B300", 288, 7680 / 8192), ("GB300", 288, 31 / 32)):
        share = rl.hardware(name).mem_capacity_bytes / (physical_gib * gib * enabled)
        assert 0.99 < share < 0.9915, name
    assert 180 == 192 * 7680 / 8192 and 186 == 192 * 7936 / 8192


def test_gb300_keeps_the_vendor_peak() -> None:
    # No GB300 bus width or memory clock is published (hardware-notes §41, open).
    assert rl.hardware("GB300").mem_bytes_per_s == 8e12


def test_mxfp8_quantize_fraction_rederived() -> None:
    fit = load_benchmark("fit_mxfp8_quantize")
    doc = json.loads((ROOT / "python/roofline/data/terms/cast.json").read_text())
    stored = doc["per_architecture"]["blackwell"]["mxfp8_quantize_fraction"]
    assert len(fit.kernels()) == 9
    # the stored term is the median over the B200's packaged peak, 3 decimals
    assert fit.streaming_rate() == pytest.approx(7.67232e12 * 0.88, rel=1e-12)
    assert round(fit.fit(), 3) == stored == 0.806
    # the same procedure over the vendor's 8.0 TB/s gives the term it replaced (0.773 -> 0.77)
    assert round(fit.fit(8e12), 3) == 0.773
    assert fit.fit(8e12) / fit.fit() == pytest.approx(7.67232 / 8.0, rel=1e-12)
    # hand check of one kernel: TE quantize_mxfp8 rowwise, 8192 x 8192 bf16 in 34.84 us moves
    # 8192^2 x (2 + 1 + 1/32) = 203423744 B: 5.839 TB/s, 0.865 of 6.752 TB/s
    rows = {name: f for name, _, f in fit.fractions()}
    te = 8192 * 8192 * (2 + 1 + 1 / 32) / 34.84e-6 / (7.67232e12 * 0.88)
    assert rows["TE quantize_mxfp8 rowwise"] == pytest.approx(te, rel=1e-9)
    assert te == pytest.approx(0.8647, abs=1e-4)
    # residuals against the median: -7.5 % (torchao's 3-D weight cast) to +10.8 % (dim1 A)
    resid = sorted(f / fit.fit() - 1 for f in rows.values())
    assert resid[0] == pytest.approx(-0.075, abs=0.002)
    assert resid[-1] == pytest.approx(0.108, abs=0.002)
