"""torchao's rowwise dim-1 cast (column-scaled, written transposed) as a profiler trace records
it: a ``triton_poi_*exp2_floor_log2*reciprocal*_t*`` kernel priced at the float8 cast model's
column-scaled rate, so a trace and ``rl.float8.linear(recipe="rowwise")`` agree."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price

HW = "H200 SXM"
NAME = "triton_poi_fused__to_copy_clamp_exp2_floor_log2_mul_reciprocal_t_18"


def _priced(name: str, *args: TensorArg) -> tuple[float, float]:
    got, _ = price(Call(name, args), Pricer(rl.hardware(HW), "default"))
    assert got is not None
    return float(got[0][1].bytes), float(got[0][1].memory_s)


def test_column_cast_moves_input_fp8_copy_and_scales_at_the_cast_models_rate():
    # w: 14336 x 4096 bf16 read (117440512 B) + its two fp32 scale vectors as recorded
    # (14336 x 4 + 4096 x 4 B); written: 14336 x 4096 fp8 (58720256 B) + 4 x 4096 B of scales
    w = TensorArg((14336, 4096), "bf16", 2)
    s0, s1 = TensorArg((1, 14336), "fp32", 4), TensorArg((1, 4096), "fp32", 4)
    nbytes, mem = _priced(NAME, w, s0, s1)
    assert nbytes == 117440512 + 57344 + 16384 + 58720256 + 16384
    ks = rl.float8.cast_kernels(14336, 4096, "rowwise", HW, transpose=True)
    row = ks[ks.kernel == "cast (column-scaled, transposed)"].iloc[0]
    assert float(row.bytes_read + row.bytes_written) == 117440512 + 58720256 + 16384
    rate = float(row.bytes_read + row.bytes_written) / float(row.memory_s)
    assert mem == pytest.approx(nbytes / rate, rel=1e-9)
    # slower than one streaming pass over the same bytes (strided reads, partial sectors)
    plain = rl.elementwise(int(nbytes), reads=1, writes=0, dtype="int8", hardware=HW)
    assert mem > 2 * float(plain.memory_s)


def test_other_triton_kernels_keep_one_pass():
    w = TensorArg((4096, 4096), "bf16", 2)
    # a row cast (no transpose) and a reduction are not the column-scaled cast
    for name in ("triton_poi_fused__to_copy_clamp_exp2_floor_log2_mul_reciprocal_view_3",
                 "triton_red_fused_abs_amax_t_10", "triton_poi_fused_add_mul_t_2",
                 "triton_poi_fused__scaled_mm__to_copy_clamp_clone_exp2_floor_log2_mul_"
                 "reciprocal_t_view_11"):
        nbytes, mem = _priced(name, w)
        plain = rl.elementwise(int(nbytes), reads=1, writes=0, dtype="int8", hardware=HW)
        assert nbytes == 4096 * 4096 * 2
        assert mem == pytest.approx(float(plain.memory_s), rel=1e-9)


def test_peak_efficiency_keeps_the_plain_pass():
    w = TensorArg((4096, 4096), "bf16", 2)
    got, _ = price(Call(NAME, (w,)), Pricer(rl.hardware(HW), "peak"))
    assert got is not None
    plain = rl.elementwise(int(got[0][1].bytes), reads=1, writes=0, dtype="int8",
                           hardware=HW, efficiency="peak")
    assert float(got[0][1].memory_s) == pytest.approx(float(plain.memory_s), rel=1e-9)


LOOPED = ("triton_red_fused__scaled_mm__to_copy_abs_amax_clamp_clone_exp2_floor_log2_mul_"
          "new_ones_reciprocal_t_view_4")


def test_looped_amax_cast_reads_its_operand_twice_at_the_row_cast_rate():
    # recorded: 4096 x 14336 bf16 (117440512 B), its 14336 fp32 scales (57344 B), the bf16
    # operand again (117440512 B); + the second loop's re-read of the operand (117440512 B)
    x = TensorArg((4096, 14336), "bf16", 2)
    s = TensorArg((14336, 1), "fp32", 4)
    nbytes, mem = _priced(LOOPED, x, s, x)
    assert nbytes == 3 * 117440512 + 57344
    ks = rl.float8.cast_kernels(4096, 14336, "rowwise", HW)
    row = ks.iloc[-1]
    assert row.kernel == "cast rowwise (row amax + cast)"
    rate = float(row.bytes_read + row.bytes_written) / float(row.memory_s)
    assert mem == pytest.approx(nbytes / rate, rel=1e-9)
    # a split amax alone (no scale ops) and a persistent reduction keep the one pass
    for name in ("triton_red_fused_abs_amax_view_6",
                 "triton_per_fused_abs_amax_clamp_exp2_floor_log2_mul_reciprocal_3"):
        n1, m1 = _priced(name, x)
        plain = rl.elementwise(int(n1), reads=1, writes=0, dtype="int8", hardware=HW)
        assert n1 == 117440512 and m1 == pytest.approx(float(plain.memory_s), rel=1e-9)
