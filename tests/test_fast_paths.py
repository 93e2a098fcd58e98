"""Scalar fast paths and the pruned GEMM search give exactly the results of the array path
and of the exhaustive search (bit for bit), and scalar calls still validate their input."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline._dtypes import DTYPES, default_out
from roofline._params.resolve import resolve

PRESETS = ["default", "constant", "peak", "torchao", rl.Efficiency(0.7, 0.8, 1e-6)]
HARDWARE = ["H100 SXM", "H800", "B200", "A100 SXM 80GB", "MI300X", "L4", "RTX 4090"]
FIELDS = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")


def _shapes(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.exp(rng.uniform(0, np.log(70000), size=(n, 4))).round().astype(np.int64) + 1


@pytest.mark.parametrize("efficiency", PRESETS, ids=str)
@pytest.mark.parametrize("dtype", ["bf16", "fp8", "fp32", "int8", "mxfp8", "nvfp4"])
def test_scalar_gemm_equals_array_path(efficiency: object, dtype: str) -> None:
    rng = np.random.default_rng(7)
    for name in HARDWARE:
        hw = rl.hardware(name)
        if not getattr(hw, f"{rl._core.peak_class(DTYPES[dtype]).name}_flops_per_s"):
            continue
        for m, k, n, b in _shapes(rng, 25):
            batch = int(b) if b < 9 else 1
            scalar = rl.gemm(int(m), int(k), int(n), dtype, hw, batch=batch,
                             efficiency=efficiency)
            array = rl.gemm(np.array([m]), k, n, dtype, hw, batch=batch, efficiency=efficiency)
            for f in FIELDS:
                assert getattr(scalar, f) == getattr(array, f)[0], (name, m, k, n, f)
                assert type(getattr(scalar, f)) is float
            assert scalar.meta == rl.gemm(float(m), k, n, dtype, hw, batch=batch,
                                          efficiency=efficiency).meta
            assert scalar.label == rl.gemm(np.int64(m), k, n, dtype, hw, batch=batch,
                                           efficiency=efficiency).label


@pytest.mark.parametrize("efficiency", PRESETS, ids=str)
@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise", "mxfp8_cublas", "blockwise",
                                    "nvfp4"])
@pytest.mark.parametrize("mode", ["training", "inference"])
def test_scalar_float8_linear_equals_array_path(efficiency: object, recipe: str,
                                                mode: str) -> None:
    rng = np.random.default_rng(11)
    hw = rl.hardware("B200")
    for m, k, n, _ in _shapes(rng, 20):
        try:
            a = rl.float8.linear(np.array([m]), k, n, recipe, hw, mode, efficiency=efficiency)
        except ValueError as exc:
            with pytest.raises(ValueError, match=str(exc)[:30]):
                rl.float8.linear(int(m), int(k), int(n), recipe, hw, mode, efficiency=efficiency)
            continue
        s = rl.float8.linear(int(m), int(k), int(n), recipe, hw, mode, efficiency=efficiency)
        assert (s.bf16_s, s.fp8_gemm_s, s.fp8_overhead_s) == (a.bf16_s[0], a.fp8_gemm_s[0],
                                                              a.fp8_overhead_s[0])
        ref = rl.float8.linear(float(m), k, n, recipe, hw, mode, efficiency=efficiency)
        for f in ("m", "k", "n", "recipe", "mode", "fuse_with_prev", "hardware", "bf16_s",
                  "fp8_gemm_s", "fp8_overhead_s"):
            assert getattr(s, f) == getattr(ref, f) and type(getattr(s, f)) is type(
                getattr(ref, f)), f
        assert repr(s) == repr(ref) and s.wall_s == ref.wall_s


@pytest.mark.parametrize("bad, error", [
    ((0, 1, 1), ValueError), ((-3, 1, 1), ValueError), ((2**53 + 1, 1, 1), ValueError),
    ((True, 1, 1), TypeError), ((1.5, 1, 1), ValueError), (("8", 1, 1), TypeError),
])
def test_scalar_calls_still_validate(bad: tuple, error: type) -> None:
    hw = rl.hardware("H100 SXM")
    with pytest.raises(error, match="m must be"):
        rl.gemm(*bad, hardware=hw)
    with pytest.raises(error, match="m must be"):
        rl.float8.linear(*bad, hardware=hw)


def test_scalar_calls_still_check_names_and_peaks() -> None:
    hw = rl.hardware("H100 SXM")
    with pytest.raises(KeyError, match="dtype"):
        rl.gemm(8, 8, 8, "fp9", hw)
    with pytest.raises(KeyError, match="efficiency"):
        rl.gemm(8, 8, 8, "bf16", hw, efficiency="fast")
    with pytest.raises(ValueError, match="no fp8 peak"):
        rl.gemm(8, 8, 8, "fp8", "A100 SXM 80GB")
    with pytest.raises(KeyError, match="recipe"):
        rl.float8.linear(8, 8, 8, "tensorwize", hw)
    with pytest.raises(ValueError, match="fused inference"):
        rl.float8.linear(8, 8, 8, "tensorwise", hw, "inference", True, efficiency="torchao")


def test_cached_resolution_follows_the_default_efficiency() -> None:
    hw = rl.hardware("H100 SXM")
    before = rl.gemm(4096, 4096, 4096, hardware=hw).time_s
    rl.set_default_efficiency("peak")
    try:
        assert rl.gemm(4096, 4096, 4096, hardware=hw).time_s == rl.gemm(
            4096, 4096, 4096, hardware=hw, efficiency="peak").time_s
    finally:
        rl.set_default_efficiency(None)
    assert rl.gemm(4096, 4096, 4096, hardware=hw).time_s == before


@pytest.mark.parametrize("name", HARDWARE + ["H200", "GB200", "MI355X", "V100"])
@pytest.mark.parametrize("efficiency", ["default", "peak", "torchao"])
def test_pruned_gemm_search_equals_exhaustive(name: str, efficiency: str) -> None:
    rng = np.random.default_rng(3)
    shapes = _shapes(rng, 3000).astype(np.float64)
    small = np.exp(rng.uniform(0, np.log(600), size=(3000, 4))).round() + 1  # split-K cases
    shapes = np.concatenate([shapes, small])
    m, k, n = (np.ascontiguousarray(shapes[:, i]) for i in range(3))
    batch = np.where(shapes[:, 3] < 5, shapes[:, 3], 1.0)
    hw, chw, ceff = resolve(name, efficiency)
    for dtype in ("bf16", "fp16", "fp8", "fp32", "int8", "mxfp8", "nvfp4"):
        dt = DTYPES[dtype]
        if not getattr(hw, f"{_core.peak_class(dt).name}_flops_per_s"):
            continue
        for scaling in (_core.Scaling.none, _core.Scaling.tensorwise, _core.Scaling.rowwise):
            if scaling != _core.Scaling.none and dtype != "fp8":
                continue
            args = (m, k, n, batch, dt, dt, default_out(dt), False, chw, ceff)
            fast = _core.gemm_sweep(*args, 1, scaling)
            ref = _core.gemm_sweep_exhaustive(*args, scaling)
            for f, a, b in zip(FIELDS, fast, ref, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} {dtype} {f}")


@pytest.mark.parametrize("variant", ["capped", "p3", "p0"])
def test_pruned_gemm_search_equals_exhaustive_off_default(variant: str) -> None:
    # The branches the packaged data does not reach: a per-SM bandwidth cap, another p-norm
    # exponent, max(); and non-integral dimensions (MoE tokens per expert can be fractional).
    rng = np.random.default_rng(11)
    large = np.exp(rng.uniform(0, np.log(70000), size=(2000, 4))) + 0.5
    small = np.exp(rng.uniform(0, np.log(600), size=(2000, 4))).round() + 1
    shapes = np.concatenate([large, small, large.round()])
    m, k, n = (np.ascontiguousarray(shapes[:, i]) for i in range(3))
    batch = np.where(shapes[:, 3] < 5, np.ceil(shapes[:, 3]), 1.0)
    for name in ("H100 SXM", "MI300X", "L4"):
        hw, chw, ceff = resolve(name, "default")
        eff = _core.Efficiency(
            ceff.compute_fraction, ceff.memory_fraction, ceff.kernel_floor_s, False, True,
            ceff.gemm_latency_s, ceff.memory_latency_s,
            {"capped": 4.0, "p3": 3.0, "p0": 0.0}[variant],
            3e10 if variant == "capped" else 0.0,  # 30 GB/s per SM: small grids are capped
        )
        bare = eff.gemm
        # Without and with the library terms (rowwise: no stream-K, narrowest tile), the
        # latter on the capped branch too.
        for terms, scalings in ((bare, (_core.Scaling.none,)),
                                (ceff.gemm, (_core.Scaling.none, _core.Scaling.rowwise))):
            eff.gemm = terms
            for dtype in ("bf16", "fp8"):
                dt = DTYPES[dtype]
                args = (m, k, n, batch, dt, dt, default_out(dt), False, chw, eff)
                for scaling in scalings:
                    if scaling != _core.Scaling.none and dtype != "fp8":
                        continue
                    fast = _core.gemm_sweep(*args, 1, scaling)
                    ref = _core.gemm_sweep_exhaustive(*args, scaling)
                    for f, x, y in zip(FIELDS, fast, ref, strict=True):
                        np.testing.assert_array_equal(
                            x, y, err_msg=f"{name} {variant} {dtype} {scaling} {f}")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("recipe, scaling", [("tensorwise", "tensorwise"),
                                             ("rowwise", "rowwise")])
def test_linear_sweep_gemms_equal_exhaustive(threads: int, recipe: str, scaling: str) -> None:
    # A linear's GEMMs share tile tables (by output extent) kept across the sweep's points:
    # its GEMM sums equal the exhaustive search of each GEMM, added in the formula's order.
    rng = np.random.default_rng(5)
    shapes = np.exp(rng.uniform(0, np.log(70000), size=(70000, 3))).round() + 1
    shapes[::7, 2] = shapes[::7, 0]  # repeated extents within a linear
    m, k, n = (np.ascontiguousarray(shapes[:, i]) for i in range(3))
    one = np.ones_like(m)
    for name in ("H100 SXM", "B200"):
        hw, chw, ceff = resolve(name, "default")
        rl.set_num_threads(threads)
        try:
            r = rl.float8.linear(m, k, n, recipe, hw)
        finally:
            rl.set_num_threads(0)

        def gemms(dtype: str, sc: str, chw: object = chw, ceff: object = ceff) -> np.ndarray:
            dt = DTYPES[dtype]
            total = np.zeros_like(m)
            for a, b, c in ((m, k, n), (m, n, k), (k, m, n)):
                total = total + _core.gemm_sweep_exhaustive(
                    a, b, c, one, dt, dt, _core.DType.bf16, False, chw, ceff,
                    getattr(_core.Scaling, sc))[0]
            return total

        np.testing.assert_array_equal(r.bf16_s, gemms("bf16", "none"), err_msg=name)
        np.testing.assert_array_equal(r.fp8_gemm_s, gemms("fp8", scaling), err_msg=name)


@pytest.mark.parametrize("efficiency", ["default", "peak", "torchao"])
@pytest.mark.parametrize("mode", ["training", "inference"])
def test_linear_sweep_lane_blocks_equal_scalar_path(efficiency: str, mode: str) -> None:
    # The sweep evaluates eight shapes at a time (Lanes), the tail block padded with copies of
    # the last shape: every point equals the one-shape path bit for bit, whatever its block.
    rng = np.random.default_rng(3)
    shapes = _shapes(rng, 21)[:, :3]  # two full blocks and a tail of five
    shapes[:4, 2] = [1023, 1024, 1025, 4096]  # rows either side of a persistent reduction
    m, k, n = (np.ascontiguousarray(shapes[:, i]) for i in range(3))
    hw = rl.hardware("H100 SXM")
    for recipe in rl.float8.recipe_names():
        for length in (21, 8, 3):
            try:
                a = rl.float8.linear(m[:length], k[:length], n[:length], recipe, hw, mode,
                                     efficiency=efficiency)
            except ValueError:
                continue
            for i in range(length):
                s = rl.float8.linear(int(m[i]), int(k[i]), int(n[i]), recipe, hw, mode,
                                     efficiency=efficiency)
                assert (s.bf16_s, s.fp8_gemm_s, s.fp8_overhead_s) == (
                    a.bf16_s[i], a.fp8_gemm_s[i], a.fp8_overhead_s[i]), (recipe, length, i)


def test_linear_sweep_threads_split_blocks_alike() -> None:
    # Threads take chunks that are not multiples of eight: each pads its own tail block.
    rng = np.random.default_rng(4)
    shapes = _shapes(rng, 2 * 32768 + 13)[:, :3].astype(float)
    m, k, n = (np.ascontiguousarray(shapes[:, i]) for i in range(3))
    out = []
    for threads in (1, 2):
        rl.set_num_threads(threads)
        try:
            r = rl.float8.linear(m, k, n, "rowwise", "H100 SXM")
        finally:
            rl.set_num_threads(0)
        out.append(np.stack([r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s]))
    np.testing.assert_array_equal(out[0], out[1])
    for i in (0, 32770, 32771, len(m) - 1):
        s = rl.float8.linear(int(m[i]), int(k[i]), int(n[i]), "rowwise", "H100 SXM")
        assert (s.bf16_s, s.fp8_gemm_s, s.fp8_overhead_s) == tuple(out[1][:, i])


@pytest.mark.parametrize("dtype, scaling", [("bf16", "none"), ("fp8", "tensorwise"),
                                            ("fp8", "rowwise")])
def test_gemm_search_at_the_largest_sizes(dtype: str, scaling: str) -> None:
    """Sizes up to 2^53 (the validated maximum) give tile counts up to 2^94, past the 2^63 of an
    integer conversion: the search still equals the exhaustive one, finite and positive (it
    returned inf, with no configuration chosen, for rl.gemm(2**53, 3, 2**31))."""
    big = [2.0**53, 2.0**53 - 1, 2.0**31, 3.0, 1.0, 65537.0, 2.0**40 + 1]
    m, k, n = (np.ascontiguousarray(g.ravel()) for g in np.meshgrid(big, big, big))
    batch = np.ones_like(m)
    _, chw, ceff = resolve("H100 SXM", "default")
    dt = DTYPES[dtype]
    args = (m, k, n, batch, dt, dt, default_out(dt), False, chw, ceff)
    sc = getattr(_core.Scaling, scaling)
    fast = _core.gemm_sweep(*args, 1, sc)
    ref = _core.gemm_sweep_exhaustive(*args, sc)
    for f, a, b in zip(FIELDS, fast, ref, strict=True):
        np.testing.assert_array_equal(a, b, err_msg=f)
    assert np.all(np.isfinite(fast[0])) and np.all(fast[0] > 0)
    e = rl.gemm(2**53, 3, 2**31, "bf16", "H100 SXM")
    assert np.isfinite(e.time_s) and e.time_s >= e.memory_s > 0


@pytest.mark.parametrize("name", ["H100 SXM", "L4", "MI300X", "A100 SXM 80GB"])
@pytest.mark.parametrize("efficiency", ["default", "peak", "torchao"])
def test_streaming_kernels_eight_at_a_time_equal_one_at_a_time(name: str,
                                                               efficiency: str) -> None:
    """The templated streaming-kernel model on eight shapes (every row-kernel kind, with rows,
    waves, re-reads, transcendentals and strided elements, zero or not) gives each lane the
    one-shape result bit for bit. The float8 casts reach only the plain streaming path; this
    covers the rest of shaped_memory<Lanes>."""
    rng = np.random.default_rng(11)
    n = 4003  # a padded tail block

    def some(lo: float, hi: float, zero: float = 0.3) -> np.ndarray:
        v = np.exp(rng.uniform(np.log(lo), np.log(hi), size=n))
        return np.where(rng.random(n) < zero, 0.0, v)

    bytes_read = some(1.0, 1e11, 0.1)
    cols = (np.exp(rng.uniform(np.log(1e-7), np.log(1e-3), n)) * bytes_read + 1).round()
    fields = dict(
        flops=some(1.0, 1e12), bytes_read=bytes_read, bytes_written=some(1.0, 1e11),
        kernels=np.where(rng.random(n) < 0.5, 1.0, rng.integers(1, 20, n).astype(float)),
        bandwidth_fraction=np.where(rng.random(n) < 0.5, 1.0, rng.uniform(0.05, 1.0, n)),
        rows=np.where(rng.random(n) < 0.3, 0.0, cols),
        ctas_per_sm=np.where(rng.random(n) < 0.3, 0.0, rng.choice([0.5, 1.0, 2.0, 8.0], n)),
        row_bytes=some(2.0, 1e6), reread_bytes=some(1.0, 1e10),
        transcendentals=some(1.0, 1e10), strided_elements=some(1.0, 1e10))
    _, chw, ceff = resolve(name, efficiency)
    for kind in range(5):  # none, aten_rows, aten_stream, aten_cta, inductor
        for math in (_core.PeakClass.bf16, _core.PeakClass.fp32):
            lanes, one = _core.memory_lane_check(**fields, row_kernel=kind, math=math,
                                                 hardware=chw, efficiency=ceff)
            np.testing.assert_array_equal(lanes, one, err_msg=f"{name} row_kernel {kind}")
            assert np.all(np.isfinite(one))


def test_streaming_lane_check_refuses_unknown_row_kernels() -> None:
    _, chw, ceff = resolve("H100 SXM", "default")
    one = np.ones(3)
    with pytest.raises(ValueError, match="row_kernel"):
        _core.memory_lane_check(*([one] * 11), 7, _core.PeakClass.bf16, chw, ceff)
