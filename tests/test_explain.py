"""rl.explain and ``roofline explain``: measured kernel times against the roofline and model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import roofline as rl
from roofline.cli import main

H100 = "H100 SXM"  # bf16 989.5 TFLOP/s dense, 3.35 TB/s (hardware.json)


def test_gemm_by_hand() -> None:
    e = rl.gemm(4096, 4096, 4096, dtype="bf16", hardware=H100)
    x = rl.explain(e, 200e-6)
    flops = 2 * 4096**3  # 137,438,953,472
    nbytes = 3 * 4096 * 4096 * 2  # A, B read once, C written once: 100,663,296 B
    assert x.flops == flops and x.bytes == nbytes
    assert x.achieved_flops_per_s == pytest.approx(flops / 200e-6)  # 687.2 TFLOP/s
    assert x.pct_of_peak_flops == pytest.approx(100 * flops / 200e-6 / 989.5e12)  # 69.45 %
    assert x.achieved_bytes_per_s == pytest.approx(nbytes / 200e-6)  # 503.3 GB/s
    assert x.pct_of_peak_bandwidth == pytest.approx(100 * nbytes / 200e-6 / 3.35e12)  # 15.0 %
    assert x.pct_of_model == pytest.approx(100 * e.time_s / 200e-6)
    assert x.roofline_s == pytest.approx(flops / 989.5e12)  # 138.9 µs: compute side
    assert x.pct_of_roofline == pytest.approx(100 * flops / 989.5e12 / 200e-6)
    assert x.model_pct_of_peak_flops == pytest.approx(100 * flops / e.time_s / 989.5e12)
    assert x.peak_class == "bf16" and x.peak_flops_per_s == 989.5e12
    assert x.mem_bytes_per_s == 3.35e12 and x.hardware == H100
    assert x.bound == "compute" == e.bound
    assert isinstance(x.reading, str) and x.reading.startswith("compute-bound")


def test_peak_class_follows_the_dtype() -> None:
    fp8 = rl.explain(rl.gemm(4096, 4096, 4096, dtype="fp8", hardware=H100), 1e-4)
    assert fp8.peak_class == "fp8"
    assert fp8.peak_flops_per_s == rl.hardware(H100).fp8_flops_per_s
    ew = rl.explain(rl.elementwise(1 << 20, hardware=H100), 1e-5)  # vector math: fp32 peak
    assert ew.peak_class == "fp32" and ew.peak_flops_per_s == 67e12
    att = rl.explain(rl.attention(1, 8, 128, 128, 64, hardware=H100), 1e-5)
    assert att.peak_class == "bf16"


def test_at_the_prediction_reads_as_expected() -> None:
    e = rl.gemm(8192, 8192, 8192, hardware=H100)
    x = rl.explain(e, float(e.time_s))
    assert x.pct_of_model == pytest.approx(100.0)
    assert "as fast as expected" in x.reading


@pytest.mark.parametrize(
    ("factor", "phrase"),
    [(0.95, "as fast as expected"), (0.7, "look for"), (0.3, "only"), (1.3, "faster than modeled")],
)
def test_reading_bands(factor: float, phrase: str) -> None:
    e = rl.gemm(8192, 8192, 8192, hardware=H100)  # compute-bound, roofline 1.11 ms
    x = rl.explain(e, float(e.time_s) / factor)
    assert phrase in x.reading
    assert x.pct_of_model == pytest.approx(100 * factor)


def test_memory_bound_reading_names_bandwidth() -> None:
    e = rl.gemm(256, 7168, 4096, dtype="fp8", out_dtype="fp32", batch=2, hardware="H800")
    x = rl.explain(e, 78e-6)
    assert x.bound == "memory"
    assert x.reading.startswith("memory-bound; reaches 27% of the memory bandwidth")
    assert "DRAM latency" in x.reading


def test_overhead_and_faster_than_roofline() -> None:
    small = rl.elementwise(1000, hardware=H100)  # 4 kB: the 6.25 µs latency dominates
    assert "launch/latency-bound" in rl.explain(small, 8e-6).reading
    big = rl.elementwise(1 << 28, hardware=H100)  # 1.07 GB: roofline 320 µs
    x = rl.explain(big, 100e-6)
    assert x.pct_of_roofline > 100 and "faster than the datasheet roofline" in x.reading


def test_arrays_broadcast() -> None:
    e = rl.gemm(np.array([64, 1024, 8192]), 4096, 4096, hardware=H100)
    x = rl.explain(e, 1e-4)
    assert np.shape(x.pct_of_model) == (3,) and np.shape(x.reading) == (3,)
    np.testing.assert_allclose(x.pct_of_model, 100 * np.asarray(e.time_s) / 1e-4)
    y = rl.explain(e, np.array([[1e-5], [1e-3]]))
    assert np.shape(y.achieved_flops_per_s) == (2, 3) and np.shape(y.bound) == (2, 3)
    for i, m in enumerate((64, 1024, 8192)):  # each element equals a scalar call
        one = rl.explain(rl.gemm(m, 4096, 4096, hardware=H100), 1e-3)
        assert y.pct_of_model[1, i] == pytest.approx(one.pct_of_model)
        assert y.reading[1, i] == one.reading
    assert "shape (2, 3)" in repr(y)
    with pytest.raises(ValueError, match="broadcast"):
        rl.explain(e, np.ones(2) * 1e-4)


def test_sums_need_a_dtype_and_hardware_overrides() -> None:
    a = rl.gemm(4096, 4096, 4096, hardware=H100)
    b = rl.gemm(1024, 4096, 4096, hardware=H100)
    with pytest.raises(ValueError, match="dtype="):
        rl.explain(a + b, 1e-3)
    x = rl.explain(a + b, 1e-3, dtype="bf16")
    assert x.flops == 2 * 4096**3 + 2 * 1024 * 4096**2
    slow = rl.hardware(H100).replace(mem_bytes_per_s=1e12)
    y = rl.explain(a, 1e-3, hardware=slow)
    assert y.mem_bytes_per_s == 1e12
    assert y.pct_of_peak_bandwidth == pytest.approx(100 * 3 * 4096**2 * 2 / 1e-3 / 1e12)
    # A variant passed to the op is remembered through Estimate.meta.
    z = rl.explain(rl.gemm(4096, 4096, 4096, hardware=slow), 1e-3)
    assert z.mem_bytes_per_s == 1e12


@pytest.mark.parametrize("bad", [0, -1e-6, math.nan, math.inf, [1e-6, 0.0], np.array([])])
def test_bad_measured_values(bad: object) -> None:
    e = rl.gemm(128, 128, 128, hardware=H100)
    with pytest.raises(ValueError, match="explain: measured_s"):
        rl.explain(e, bad)


@pytest.mark.parametrize("bad", ["1e-3", True, None, 1j, b"1", object(), ["a"]])
def test_bad_measured_types(bad: object) -> None:
    e = rl.gemm(128, 128, 128, hardware=H100)
    with pytest.raises(TypeError, match="explain: measured_s"):
        rl.explain(e, bad)


def test_bad_estimate_and_hardware() -> None:
    with pytest.raises(TypeError, match="explain: estimate"):
        rl.explain(1.0, 1e-3)  # type: ignore[arg-type]
    e = rl.gemm(128, 128, 128, hardware=H100)
    with pytest.raises(KeyError):
        rl.explain(e, 1e-3, hardware="no such gpu")
    with pytest.raises(KeyError):
        rl.explain(e, 1e-3, dtype="fp7")


def test_to_dict_and_repr() -> None:
    x = rl.explain(rl.gemm(4096, 4096, 4096, hardware=H100), 2e-4)
    d = x.to_dict()
    for key in ("achieved_flops_per_s", "achieved_bytes_per_s", "pct_of_peak_flops",
                "pct_of_peak_bandwidth", "pct_of_model", "bound", "reading"):
        assert key in d
    json.dumps(d)  # plain floats and strings
    r = repr(x)
    assert r.startswith("Explanation(gemm 4096x4096x4096 bf16 on H100 SXM: measured 200 µs")
    assert "% of model" in r


# ------------------------------------------------------------------------- CLI


def test_cli_gemm_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["explain", "gemm", "256", "7168", "4096", "--batch", "2", "--dtype", "fp8",
               "--out-dtype", "fp32", "--measured-us", "78", "--hardware", "H800",
               "--format", "json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    e = rl.gemm(256, 7168, 4096, dtype="fp8", out_dtype="fp32", batch=2, hardware="H800")
    x = rl.explain(e, 78e-6)
    assert doc["pct_of_model"] == pytest.approx(x.pct_of_model)
    assert doc["achieved_bytes_per_s"] == pytest.approx(70_778_880 / 78e-6)
    assert doc["bound"] == "memory" and doc["hardware"] == "H800"


def test_cli_attention_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["explain", "attention", "64", "128", "1", "4096", "576", "--kv-heads", "1",
               "--v-head-dim", "512", "--shared-kv", "--measured-us", "240",
               "--hardware", "H800"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "73.01 GFLOP" in out and "319.8 MB" in out and "240 µs" in out
    # At the ridge: which bound the model names depends on its attention terms.
    assert "memory-bound" in out or "compute-bound" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "gemm", "1", "2", "3", "--measured-us", "0", "--hardware", "H800"],
        ["explain", "gemm", "1", "2", "3", "--measured-us", "-5", "--hardware", "H800"],
        ["explain", "gemm", "0", "2", "3", "--measured-us", "5", "--hardware", "H800"],
        ["explain", "gemm", "1", "2", "3", "--hardware", "H800"],
        ["explain", "attention", "1", "8", "1", "16", "64", "--kv-heads", "3",
         "--measured-us", "5", "--hardware", "H800"],
        ["explain", "conv", "1"],
    ],
)
def test_cli_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
