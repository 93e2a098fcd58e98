"""rl.float8.cast and the compiled (torch.compile'd torchao) cast kernels of float8.linear."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl

H100 = "H100 SXM"


def test_rowwise_bytes_count_the_second_pass_of_looped_rows() -> None:
    # 16384 x 16384 bf16: rows longer than 1024 are read twice (amax loop, cast loop):
    # read 2 * 2 * n, write n fp8 + 4 bytes per row of fp32 scales.
    n = 16384 * 16384
    e = rl.float8.cast(16384, 16384, "rowwise", H100)
    assert e.bytes == 4 * n + n + 4 * 16384
    # a persistent row (<= 1024 elements) is read once
    e = rl.float8.cast(8, 1024, "rowwise", H100)
    assert e.bytes == 2 * 8192 + 8192 + 4 * 8


def test_idealized_presets_count_one_pass() -> None:
    n = 4096 * 8192
    assert rl.float8.cast(4096, 8192, "rowwise", H100, efficiency="peak").bytes == (
        2 * n + n + 4 * 4096)
    # tensorwise: amax reads 2n, its final reduction two fp32 partials in and the fp32 scale
    # out (12 B), the cast reads 2n and writes n
    assert rl.float8.cast(4096, 8192, "tensorwise", H100, efficiency="peak").bytes == \
        5 * n + 12


def test_tensorwise_kernels() -> None:
    k = rl.float8.cast_kernels(4096, 8192, "tensorwise", H100)
    assert list(k.kernel) == ["amax (partial max per block)", "amax reduce (stage 2) + scale",
                              "cast"]
    assert k.bytes_read.iloc[0] == 2 * 4096 * 8192


def test_arrays_in_arrays_out() -> None:
    e = rl.float8.cast(np.array([[1024], [4096]]), np.array([1024, 8192, 16384]), "rowwise", H100)
    assert np.shape(e.time_s) == (2, 3)
    assert np.all(np.diff(e.time_s, axis=0) > 0)
    assert np.all(np.diff(e.time_s, axis=1) > 0)


@pytest.mark.parametrize("granularity", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("transpose", [False, True])
def test_monotone_in_rows_and_cols(granularity: str, transpose: bool) -> None:
    sizes = np.array([256, 1024, 4096, 16384, 65536])
    t_rows = rl.float8.cast(sizes, 4096, granularity, H100, transpose=transpose).time_s
    t_cols = rl.float8.cast(4096, sizes, granularity, H100, transpose=transpose).time_s
    assert np.all(np.diff(t_rows) > 0) and np.all(np.diff(t_cols) > 0)


def test_rowwise_transposed_is_slower_than_rowwise() -> None:
    # the column-scaled transposed cast strides across rows (measured 4-5 ps/element vs ~1.3)
    plain = rl.float8.cast(8192, 8192, "rowwise", H100).time_s
    assert rl.float8.cast(8192, 8192, "rowwise", H100, transpose=True).time_s > 1.5 * plain


def test_faster_memory_gives_faster_casts() -> None:
    for g in ("tensorwise", "rowwise"):
        h100 = rl.float8.cast(16384, 16384, g, H100).time_s
        assert rl.float8.cast(16384, 16384, g, "H200").time_s < h100
        assert rl.float8.cast(16384, 16384, g, "B200").time_s < h100
        assert rl.float8.cast(16384, 16384, g, "A100 SXM 80GB").time_s > h100
        mi = rl.float8.cast(16384, 16384, g, "MI300X").time_s
        assert np.isfinite(mi) and mi > 0


def test_axiswise_is_rowwise() -> None:
    assert (rl.float8.cast(4096, 4096, "axiswise", H100).time_s
            == rl.float8.cast(4096, 4096, "rowwise", H100).time_s)


def test_training_rowwise_slower_than_tensorwise_and_than_bf16_at_4096() -> None:
    # measured on H100 (gpu_float8_linear_kernels): 4096^3 rowwise 0.47x of bf16,
    # tensorwise 1.13x; 8192^3 tensorwise 1.59x, rowwise 1.26x
    small = {r: rl.float8.linear(4096, 4096, 4096, r, H100).speedup
             for r in ("tensorwise", "rowwise", "rowwise_with_gw_hp")}
    assert small["rowwise"] < 1.0
    assert small["rowwise"] < small["rowwise_with_gw_hp"] < small["tensorwise"] + 0.1
    big = {r: rl.float8.linear(8192, 8192, 8192, r, H100).speedup
           for r in ("tensorwise", "rowwise")}
    assert big["tensorwise"] > 1.0
    assert big["rowwise"] < big["tensorwise"]


def test_compiled_kernels_only_in_the_default_model() -> None:
    names = list(rl.float8.linear(8192, 8192, 8192, "rowwise", H100).kernels().kernel)
    assert "input cast dim1 (column-scaled, transposed)" in names
    for eff in ("peak", "torchao"):
        names = list(rl.float8.linear(8192, 8192, 8192, "rowwise", H100,
                                      efficiency=eff).kernels().kernel)
        assert "input cast dim1 (column-scaled, transposed)" not in names


def test_cast_terms_are_bound_and_fitted() -> None:
    from roofline import _core
    from roofline._params.shape_aware import core_objects

    _, ceff = core_objects(rl.hardware(H100))
    t = ceff.cast
    assert t.real_kernels()
    for name in ("amax_fraction", "transpose_fraction", "dual_fraction", "row_fraction",
                 "column_fraction"):
        assert 0.0 < getattr(t, name) <= 1.0
    # 0.22 x H100's streaming bandwidth (2.948 TB/s) / 132 SMs = 4.913e9, rounded up
    assert t.column_sm_bytes_per_s == 4.92e9
    assert not _core.CastTerms().real_kernels()


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"rows": 0, "cols": 8}, ValueError, "rows"),
        ({"rows": 8, "cols": -1}, ValueError, "cols"),
        ({"rows": 8.5, "cols": 8}, (ValueError, TypeError), "rows"),
        ({"rows": True, "cols": 8}, TypeError, "rows"),
        ({"rows": 8, "cols": 8, "granularity": "rowwize"}, KeyError, "rowwise"),
        ({"rows": 8, "cols": 8, "transpose": "yes"}, TypeError, "transpose"),
        ({"rows": 8, "cols": 8, "hardware": "H1000"}, KeyError, "H1000"),
    ],
)
def test_bad_input(kwargs: dict, exc: type, match: str) -> None:
    kwargs = {"hardware": H100, **kwargs}
    with pytest.raises(exc, match=match):
        rl.float8.cast(**kwargs)


def test_cast_kernels_needs_scalars() -> None:
    with pytest.raises(ValueError, match="scalars"):
        rl.float8.cast_kernels([8, 16], 8, hardware=H100)


def test_column_scaled_cast_rate_is_set_by_the_sms_not_the_hbm() -> None:
    """The column-scaled transposed cast moves at most column_sm_bytes_per_s per SM: H100 and
    H200 (132 SMs each) run it at the same 132 x 4.92e9 B/s = 0.649 TB/s although the H200's
    HBM is 1.4x faster (measured H200 trace: 0.58 TB/s); H100 keeps its fitted fraction."""
    def column(hw: str) -> tuple[float, float]:
        ks = rl.float8.cast_kernels(14336, 4096, "rowwise", hw, transpose=True)
        row = ks[ks.kernel == "cast (column-scaled, transposed)"].iloc[0]
        return float(row.bytes_read + row.bytes_written), float(row.memory_s)

    nbytes, h200 = column("H200 SXM")
    assert nbytes == 14336 * 4096 * 3 + 4 * 4096
    assert h200 == pytest.approx(nbytes / (132 * 4.92e9), rel=1e-9)
    _, h100 = column(H100)
    assert h100 >= h200
    assert h100 == pytest.approx(nbytes / (132 * 4.92e9), rel=2e-3)  # its 0.22 fraction binds


@pytest.mark.parametrize("hardware", [H100, "H200"])
@pytest.mark.parametrize("transpose", [False, True])
def test_rowwise_cast_monotone_except_the_split_edge(hardware: str, transpose: bool) -> None:
    """A rowwise cast never gets cheaper as rows or columns grow, except where Inductor stops
    splitting the row amax (rows < 2 x SMs with more than 8192 columns: 3 launches; 264 rows
    on the 132-SM H100 / H200: 1). There the drop is launch time only: the bytes term never
    falls, and the step is the overhead of the two added launches (2.81 us on both; it was
    1.39 us while the stage-2 reduce moved no bytes and was priced at 0 s)."""
    sms = rl.hardware(hardware).sms
    rows = np.arange(1, 4 * sms)
    for cols in (4096, 8192, 8193, 14336):
        e = rl.float8.cast(rows, cols, "rowwise", hardware, transpose=transpose)
        t, mem, ovh = (np.asarray(x, float) for x in (e.time_s, e.memory_s, e.overhead_s))
        assert np.all(np.diff(mem) >= -1e-18)
        drops = np.flatnonzero(np.diff(t) < 0)
        edge = cols > 8192 and not transpose
        assert drops.tolist() == ([2 * sms - 2] if edge else [])  # rows 263 -> 264
        for i in drops:
            assert t[i] - t[i + 1] <= ovh[i] - ovh[i + 1] + 1e-15
    # every launch of the split costs GPU time: the stage-2 reduce is not free
    from roofline.float8.casts import cast_kernels

    split = cast_kernels(2 * sms - 1, 14336, "rowwise", hardware)
    assert len(split) == 3 and (split["time_s"] > 1e-6).all()
    one = float(cast_kernels(2 * sms, 14336, "rowwise", hardware)["overhead_s"].sum())
    assert float(split["overhead_s"].sum()) - one > 2 * 1e-6  # two more launches
    cols = np.arange(1024, 20000, 7)
    for r in (1, sms, 2 * sms - 1, 2 * sms, 4096):
        t = np.asarray(rl.float8.cast(r, cols, "rowwise", hardware, transpose=transpose).time_s)
        assert np.all(np.diff(t) >= 0)
