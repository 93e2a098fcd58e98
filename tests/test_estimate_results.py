"""Estimate results in the ecosystem: pandas with inputs, bounded sums, mixed hardware."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import roofline as rl

HW = "H100 SXM"


def test_to_pandas_has_the_inputs() -> None:
    df = rl.gemm(np.array([128, 1024]), 4096, 2048, dtype="fp8", hardware=HW).to_pandas()
    assert list(df.columns[:6]) == ["m", "k", "n", "batch", "dtype", "hardware"]
    assert list(df["m"]) == [128, 1024] and list(df["n"]) == [2048, 2048]
    assert set(df["dtype"]) == {"fp8_e4m3"} and set(df["hardware"]) == {HW}
    one = rl.rmsnorm(4096, 8192, hardware=HW).to_pandas()
    assert (one["rows"].iloc[0], one["cols"].iloc[0]) == (4096, 8192)
    ew = rl.elementwise(2**20, reads=2, hardware=HW).to_pandas()
    assert (ew["numel"].iloc[0], ew["reads"].iloc[0], ew["writes"].iloc[0]) == (2**20, 2, 1)
    g = rl.grouped_gemm(256, 7168, 4096, groups=8, dtype="fp8", hardware=HW).to_pandas()
    assert g["groups"].iloc[0] == 8
    c = rl.float8.cast(8192, 4096, granularity="rowwise", hardware=HW).to_pandas()
    assert c["granularity"].iloc[0] == "rowwise"


def test_sum_of_10000_estimates_has_a_short_repr() -> None:
    e = rl.gemm(4096, 4096, 4096, hardware=HW)
    start = time.perf_counter()
    total = sum([e] * 10_000)
    assert time.perf_counter() - start < 10
    assert total.time_s == pytest.approx(10_000 * e.time_s)
    text = repr(total)
    assert len(text) < 250 and "(10000 ops)" in text
    assert "(3 ops)" not in repr(e + e + e) and len(repr(e + e + e)) < 250


def test_adding_different_hardware_warns() -> None:
    a = rl.gemm(4096, 4096, 4096, hardware=HW)
    b = rl.gemm(4096, 4096, 4096, hardware="B200")
    with pytest.warns(rl.HardwareMismatchWarning, match="H100 SXM and B200"):
        s = a + b
    assert s.hardware == "H100 SXM+B200"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (a + a).hardware == HW and (a + 2 * a).hardware == HW
