"""Property tests (Hypothesis) over the public estimators: gemm, elementwise, float8.linear.

For any valid input: outputs are finite and positive; time never decreases when a dimension
grows; time is at least each roofline term and, under the default and torchao presets, at
least the 2 us kernel floor; the datasheet ("peak") roofline is never slower than the
default model; an array call equals the scalar calls element by element.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofline as rl


@pytest.fixture(autouse=True)
def _constant_default_model() -> Iterator[None]:
    """These tests derive numbers by hand for the constant model (78 % / 92 % / 2 µs, exact
    bytes), so they pin ``efficiency="default"`` to it; the calibrated default model is
    checked in tests/test_validation.py and tests/test_calibrated.py."""
    rl.set_default_efficiency("constant")
    yield
    rl.set_default_efficiency(None)


FLOOR = 2e-6
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

#: Dimensions: mostly realistic, sometimes tiny or enormous (the increments below stay exact).
dims = st.one_of(
    st.integers(1, 64),
    st.integers(1, 32768),
    st.integers(1, 2**40),
    st.sampled_from([2**p for p in range(0, 41)]),
)
steps = st.integers(1, 4096)
presets = st.sampled_from(["default", "peak", "torchao"])

#: (dtype, hardware) pairs whose peak exists in the database.
gemm_formats = st.sampled_from([
    ("bf16", "H100 SXM"), ("fp16", "A100 SXM 80GB"), ("fp32", "H100 SXM"),
    ("tf32", "H100 SXM"), ("fp8", "H100 SXM"), ("e5m2", "MI300X"), ("int8", "A100 SXM 80GB"),
    ("mxfp8", "B200"), ("mxfp4", "B200"), ("nvfp4", "B200"), ("fp8_block_1x128", "H100 SXM"),
    ("fp8_block_128x128", "H100 SXM"),
])
elementwise_dtypes = st.sampled_from(["bf16", "fp32", "fp8", "fp4", "mxfp8", "nvfp4"])
#: Recipes with both modes under the default and peak presets (torchao refuses some).
recipes = st.sampled_from(["tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8_cublas",
                           "mxfp8_32x32_weight", "nvfp4", "mxfp4_cutlass", "blockwise"])
modes = st.sampled_from(["training", "inference"])

FIELDS = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")


def finite_positive(*values: Any) -> bool:
    return all(np.isfinite(v) and v > 0 for v in values)


# ----------------------------------------------------------------------------- gemm


@SETTINGS
@given(m=dims, k=dims, n=dims, batch=st.integers(1, 1024), fmt=gemm_formats, preset=presets)
def test_gemm_is_finite_positive_and_above_its_terms(m: int, k: int, n: int, batch: int,
                                                     fmt: tuple[str, str], preset: str) -> None:
    dtype, hw = fmt
    e = rl.gemm(m, k, n, dtype, hw, batch=batch, efficiency=preset)
    assert finite_positive(e.time_s, e.compute_s, e.memory_s, e.flops, e.bytes, e.intensity)
    assert e.overhead_s >= 0 and np.isfinite(e.overhead_s)
    assert e.flops == 2.0 * batch * m * k * n
    assert e.time_s >= max(e.compute_s, e.memory_s)
    assert e.time_s == pytest.approx(max(e.compute_s, e.memory_s) + e.overhead_s, rel=1e-12)
    if preset != "peak":
        assert e.time_s >= FLOOR
    else:
        assert e.overhead_s == 0
    assert e.bound in ("compute", "memory", "overhead")


@SETTINGS
@given(m=dims, k=dims, n=dims, batch=st.integers(1, 64), fmt=gemm_formats, preset=presets,
       which=st.sampled_from(["m", "k", "n", "batch"]), step=steps)
def test_gemm_time_is_monotone_in_every_dimension(m: int, k: int, n: int, batch: int,
                                                  fmt: tuple[str, str], preset: str,
                                                  which: str, step: int) -> None:
    dtype, hw = fmt
    args = {"m": m, "k": k, "n": n, "batch": batch}
    small = rl.gemm(args["m"], args["k"], args["n"], dtype, hw, batch=args["batch"],
                    efficiency=preset)
    args[which] += step
    big = rl.gemm(args["m"], args["k"], args["n"], dtype, hw, batch=args["batch"],
                  efficiency=preset)
    assert big.time_s >= small.time_s
    assert big.flops >= small.flops and big.bytes >= small.bytes
    assert big.compute_s >= small.compute_s and big.memory_s >= small.memory_s


@SETTINGS
@given(m=dims, k=dims, n=dims, batch=st.integers(1, 64), fmt=gemm_formats)
def test_gemm_peak_is_never_slower_than_default(m: int, k: int, n: int, batch: int,
                                                fmt: tuple[str, str]) -> None:
    dtype, hw = fmt
    peak = rl.gemm(m, k, n, dtype, hw, batch=batch, efficiency="peak")
    default = rl.gemm(m, k, n, dtype, hw, batch=batch)
    assert peak.time_s <= default.time_s
    assert peak.bytes == default.bytes and peak.flops == default.flops


@SETTINGS
@given(shapes=st.lists(st.tuples(dims, dims, dims, st.integers(1, 16)), min_size=1,
                       max_size=8),
       fmt=gemm_formats, preset=presets)
def test_gemm_array_equals_scalar_calls(shapes: list[tuple[int, int, int, int]],
                                        fmt: tuple[str, str], preset: str) -> None:
    dtype, hw = fmt
    m, k, n, b = (np.array(c, dtype=np.int64) for c in zip(*shapes, strict=True))
    arr = rl.gemm(m, k, n, dtype, hw, batch=b, efficiency=preset)
    assert arr.shape == (len(shapes),)
    for i, (mi, ki, ni, bi) in enumerate(shapes):
        one = rl.gemm(mi, ki, ni, dtype, hw, batch=bi, efficiency=preset)
        for f in FIELDS:
            assert getattr(arr, f)[i] == getattr(one, f), f
        assert arr.bound[i] == one.bound


# ---------------------------------------------------------------------- elementwise

counts = st.integers(0, 8)


@SETTINGS
@given(numel=dims, reads=counts, writes=counts, fpe=st.floats(0, 1e4), dtype=elementwise_dtypes,
       preset=presets)
def test_elementwise_is_finite_positive_and_above_its_terms(numel: int, reads: int, writes: int,
                                                            fpe: float, dtype: str,
                                                            preset: str) -> None:
    if reads + writes == 0:
        writes = 1
    e = rl.elementwise(numel, reads, writes, fpe, dtype, "H100 SXM", efficiency=preset)
    assert finite_positive(e.time_s, e.memory_s, e.bytes)
    assert np.isfinite(e.compute_s) and e.compute_s >= 0
    assert e.time_s >= max(e.compute_s, e.memory_s)
    if preset != "peak":
        assert e.time_s >= FLOOR


@SETTINGS
@given(numel=dims, reads=counts, writes=counts, fpe=st.floats(0, 1e4), dtype=elementwise_dtypes,
       preset=presets, which=st.sampled_from(["numel", "reads", "writes", "fpe"]), step=steps)
def test_elementwise_time_is_monotone(numel: int, reads: int, writes: int, fpe: float,
                                      dtype: str, preset: str, which: str, step: int) -> None:
    if reads + writes == 0:
        reads = 1
    args: dict[str, Any] = {"numel": numel, "reads": reads, "writes": writes, "fpe": fpe}
    small = rl.elementwise(args["numel"], args["reads"], args["writes"], args["fpe"], dtype,
                           "H100 SXM", efficiency=preset)
    args[which] += step
    big = rl.elementwise(args["numel"], args["reads"], args["writes"], args["fpe"], dtype,
                         "H100 SXM", efficiency=preset)
    assert big.time_s >= small.time_s


@SETTINGS
@given(numel=dims, reads=counts, writes=st.integers(1, 8), dtype=elementwise_dtypes)
def test_elementwise_peak_is_never_slower(numel: int, reads: int, writes: int,
                                          dtype: str) -> None:
    p = rl.elementwise(numel, reads, writes, 1.0, dtype, "B200", efficiency="peak")
    d = rl.elementwise(numel, reads, writes, 1.0, dtype, "B200")
    assert p.time_s <= d.time_s


@SETTINGS
@given(rows=st.lists(st.tuples(dims, counts, st.integers(1, 8)), min_size=1, max_size=8),
       dtype=elementwise_dtypes, preset=presets)
def test_elementwise_array_equals_scalar_calls(rows: list[tuple[int, int, int]], dtype: str,
                                               preset: str) -> None:
    numel, reads, writes = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
    arr = rl.elementwise(numel, reads, writes, 2.0, dtype, "H100 SXM", efficiency=preset)
    for i, (ne, r, w) in enumerate(rows):
        one = rl.elementwise(ne, r, w, 2.0, dtype, "H100 SXM", efficiency=preset)
        for f in FIELDS:
            assert getattr(arr, f)[i] == getattr(one, f), f


# -------------------------------------------------------------------- float8.linear

linear_presets = st.sampled_from(["default", "peak"])


def parts(r: Any) -> tuple[float, float, float]:
    return float(r.bf16_s), float(r.fp8_gemm_s), float(r.fp8_overhead_s)


@SETTINGS
@given(m=dims, k=dims, n=dims, recipe=recipes, mode=modes, fuse=st.booleans(),
       preset=linear_presets)
def test_linear_is_finite_positive(m: int, k: int, n: int, recipe: str, mode: str, fuse: bool,
                                   preset: str) -> None:
    r = rl.float8.linear(m, k, n, recipe, "B200", mode, fuse, efficiency=preset)
    assert finite_positive(*parts(r), r.fp8_s, r.speedup)
    assert r.gpu_speedup == r.bf16_s / (r.fp8_gemm_s + r.fp8_overhead_s)
    if preset == "default":
        gemms = 3 if mode == "training" else 1
        assert r.bf16_s >= gemms * FLOOR
        assert r.fp8_gemm_s >= gemms * FLOOR
        assert r.fp8_overhead_s >= FLOOR


@SETTINGS
@given(m=dims, k=dims, n=dims, recipe=recipes, mode=modes, fuse=st.booleans(),
       preset=linear_presets, which=st.sampled_from(["m", "k", "n"]), step=steps)
def test_linear_times_are_monotone(m: int, k: int, n: int, recipe: str, mode: str, fuse: bool,
                                   preset: str, which: str, step: int) -> None:
    args = {"m": m, "k": k, "n": n}
    small = rl.float8.linear(args["m"], args["k"], args["n"], recipe, "B200", mode, fuse,
                             efficiency=preset)
    args[which] += step
    big = rl.float8.linear(args["m"], args["k"], args["n"], recipe, "B200", mode, fuse,
                           efficiency=preset)
    for s, b in zip(parts(small), parts(big), strict=True):
        assert b >= s


@SETTINGS
@given(m=dims, k=dims, n=dims, recipe=st.sampled_from(["tensorwise", "rowwise",
                                                       "mxfp8_cublas"]),
       mode=modes, which=st.sampled_from(["m", "k", "n"]), step=steps)
def test_linear_times_are_monotone_under_torchao(m: int, k: int, n: int, recipe: str,
                                                 mode: str, which: str, step: int) -> None:
    args = {"m": m, "k": k, "n": n}
    small = rl.float8.linear(args["m"], args["k"], args["n"], recipe, "B200", mode,
                             efficiency="torchao")
    args[which] += step
    big = rl.float8.linear(args["m"], args["k"], args["n"], recipe, "B200", mode,
                           efficiency="torchao")
    for s, b in zip(parts(small), parts(big), strict=True):
        assert b >= s
    assert finite_positive(*parts(big), big.speedup)
    assert min(parts(big)) >= FLOOR


@SETTINGS
@given(m=dims, k=dims, n=dims, recipe=recipes, mode=modes, fuse=st.booleans())
def test_linear_peak_is_never_slower_than_default(m: int, k: int, n: int, recipe: str,
                                                  mode: str, fuse: bool) -> None:
    p = rl.float8.linear(m, k, n, recipe, "B200", mode, fuse, efficiency="peak")
    d = rl.float8.linear(m, k, n, recipe, "B200", mode, fuse)
    for a, b in zip(parts(p), parts(d), strict=True):
        assert a <= b


@SETTINGS
@given(shapes=st.lists(st.tuples(dims, dims, dims), min_size=1, max_size=6), recipe=recipes,
       mode=modes, fuse=st.booleans())
def test_linear_array_equals_scalar_calls(shapes: list[tuple[int, int, int]], recipe: str,
                                          mode: str, fuse: bool) -> None:
    m, k, n = (np.array(c, dtype=np.int64) for c in zip(*shapes, strict=True))
    arr = rl.float8.linear(m, k, n, recipe, "B200", mode, fuse)
    for i, (mi, ki, ni) in enumerate(shapes):
        one = rl.float8.linear(mi, ki, ni, recipe, "B200", mode, fuse)
        assert (arr.bf16_s[i], arr.fp8_gemm_s[i], arr.fp8_overhead_s[i]) == parts(one)
    df = rl.float8.sweep(shapes, recipe, "B200", mode, fuse)
    np.testing.assert_array_equal(df["speedup"].to_numpy(), arr.speedup)


# ----------------------------------------------------------------------- threading


def test_multithreaded_sweeps_equal_single_threaded() -> None:
    """Sweeps above 32k points split across threads; the split must not change any value."""
    rng = np.random.default_rng(0)
    size = 3 * 2**15 + 7  # uneven chunks
    m, k, n = (rng.integers(1, 2**16, size) for _ in range(3))
    before = rl.get_num_threads()
    try:
        results = []
        for threads in (1, 3, 0):
            rl.set_num_threads(threads)
            g = rl.gemm(m, k, n, "mxfp8", "B200")
            w = rl.elementwise(m, 2, 1, 3.0, "bf16", "B200")
            f = rl.float8.linear(m, k, n, "rowwise", "B200")
            results.append((g.time_s, g.bytes, w.time_s, f.bf16_s, f.fp8_gemm_s,
                            f.fp8_overhead_s))
    finally:
        rl.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    # and element 12345 equals its scalar call
    i = 12345
    one = rl.float8.linear(int(m[i]), int(k[i]), int(n[i]), "rowwise", "B200")
    assert results[0][4][i] == one.fp8_gemm_s
