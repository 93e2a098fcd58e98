"""Inductor row reductions as a profiler trace records them: the kernel's buffers come in
Inductor's order, often the per-row statistic (rstd, logsumexp; fp32, shape (..., rows, 1))
first. The row op is priced over the rows x cols operand, not over that statistic; the
compiled loss's ``prepare_softmax_online`` kernel is the compiled cross-entropy forward."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price

HW = "H200 SXM"
RMS = "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_view_21"
LSE = "triton_red_fused__log_softmax__to_copy__unsafe_view_prepare_softmax_online_view_23"


def _time(name: str, *args: TensorArg) -> float:
    got, _ = price(Call(name, args), Pricer(rl.hardware(HW), "default"))
    assert got is not None and got
    return float(got[0][1].time_s)


def test_rstd_first_prices_the_rows_x_cols_operand():
    # as llama_train_float8_tensorwise_b1 records it: rstd (1x4096x1 fp32) first, then the
    # 4096 x 4096 bf16 activations, the weight, the output
    rstd = TensorArg((1, 4096, 1), "fp32", 4)
    x = TensorArg((1, 4096, 4096), "bf16", 2)
    w = TensorArg((4096,), "bf16", 2)
    want = float(rl.rmsnorm(4096, 4096, dtype="bf16", hardware=HW, backend="compiled",
                            save_stats=True).time_s)
    assert _time(RMS, rstd, x, w, x) == pytest.approx(want, rel=1e-12)
    # the same kernel with the operand first is priced the same
    assert _time(RMS, x, rstd, w, x) == pytest.approx(want, rel=1e-12)


def test_embedding_table_and_token_ids_are_not_the_operand():
    # a fused embedding + RMSNorm: rstd, token ids (int64), the 128256 x 4096 table, ...
    rstd = TensorArg((1, 4096, 1), "fp32", 4)
    ids = TensorArg((1, 4096), None, 8)
    table = TensorArg((128256, 4096), "bf16", 2)
    x = TensorArg((1, 4096, 4096), "bf16", 2)
    name = "triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0"
    want = float(rl.rmsnorm(4096, 4096, dtype="bf16", hardware=HW, backend="compiled",
                            save_stats=True).time_s)
    t = _time(name, rstd, ids, table, TensorArg((4096,), "bf16", 2), x)
    # the row op over 4096 x 4096 (at least), far below a pass over the 1 GB table
    full = rl.elementwise(table.nbytes, reads=1, writes=0, dtype="int8", hardware=HW)
    assert want <= t < 0.2 * float(full.time_s)
    # token ids first (no float statistic): unpriced, as before
    got, _ = price(Call(name, (TensorArg((1, 1), None, 8), table)),
                   Pricer(rl.hardware(HW), "default"))
    assert got is None


def test_log_softmax_statistics_are_the_compiled_cross_entropy_forward():
    lse = TensorArg((4096, 1), "fp32", 4)
    logits = TensorArg((4096, 128256), "bf16", 2)
    t = _time(LSE, lse, logits, lse)
    ce = rl.cross_entropy(4096, 128256, dtype="bf16", hardware=HW, backend="compiled")
    assert t == pytest.approx(float(ce.time_s), rel=1e-12)
    # one read of the logits: faster than a softmax that also writes its 4096 x 128256 output
    sm = rl.softmax(4096, 128256, dtype="bf16", hardware=HW, backend="compiled")
    assert float(ce.bytes) == pytest.approx(4096 * 128256 * 2, rel=1e-3)
    assert t < float(sm.time_s)


def test_fused_embedding_backward_moves_the_token_rows_not_the_table():
    # a fused norm backward + embedding_dense_backward: the (vocab x hidden) fp32 accumulator
    # is read and written at the 4096 token rows (a separate kernel zeroed the whole table)
    name = ("triton_red_fused__to_copy_add_div_embedding_dense_backward_expand_mul_"
            "nll_loss_forward_pow_sum_view_18")
    g = TensorArg((4096, 4096), "bf16", 2)
    ids = TensorArg((1, 4096), None, 8)
    table = TensorArg((128256, 4096), "fp32", 4)
    got, how = price(Call(name, (g, g, ids, table)), Pricer(rl.hardware(HW), "default"))
    assert got is not None
    moved = 2 * 4096 * 4096 * 2 + 4096 * 8 + 2 * 4096 * 4096 * 4
    assert float(got[0][1].bytes) == moved
    plain = rl.elementwise(moved, reads=1, writes=0, dtype="int8", hardware=HW)
    assert float(got[0][1].time_s) == pytest.approx(float(plain.time_s), rel=1e-12)
    # the zeroing kernel (no token ids) writes the whole table
    zero = "triton_poi_fused_embedding_dense_backward_17"
    got, _ = price(Call(zero, (table,)), Pricer(rl.hardware(HW), "default"))
    assert got is not None and float(got[0][1].bytes) == 128256 * 4096 * 4


@pytest.mark.parametrize(("name", "pin"), [
    # time-weighted per-op error, H200 (never fitted); before the row operand, the
    # cross-entropy statistics pass and the embedding token rows: 14.2 / 16.7 / 18.3 %
    ("llama_train_compiled_b1", 0.13),
    ("llama_train_float8_tensorwise_b1", 0.16),
    ("llama_train_float8_rowwise_b1", 0.18),
])
def test_h200_compiled_train_traces_per_op_error(name: str, pin: float):
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "programs" / "h200" / "traces"
    r = rl.trace.explain(path / f"{name}.json.gz", hardware=HW)
    assert r.priced_fraction > 0.98
    assert 0.0 < r.op_error <= pin


def test_fused_row_op_moves_at_least_every_buffer():
    # residual add + RMSNorm in one kernel: rstd, the sum (written), x, the weight, the
    # residual, the output: more buffers than the row op's read and write
    rstd = TensorArg((1, 4096, 1), "fp32", 4)
    x = TensorArg((1, 4096, 4096), "bf16", 2)
    w = TensorArg((4096,), "bf16", 2)
    args = (rstd, x, x, w, x)
    moved = sum(t.nbytes for t in args)
    plain = rl.elementwise(moved, reads=1, writes=0, dtype="int8", hardware=HW)
    row = rl.rmsnorm(4096, 4096, dtype="bf16", hardware=HW, backend="compiled",
                     save_stats=True)
    t = _time("triton_red_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_8", *args)
    assert t == pytest.approx(max(float(plain.time_s), float(row.time_s)), rel=1e-12)
    assert t > float(row.time_s)
    # a forward embedding gathers the token rows of its table (read once)
    ids = TensorArg((1, 4096), None, 8)
    table = TensorArg((128256, 4096), "bf16", 2)
    got, _ = price(Call("triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0",
                        (rstd, ids, table, w, x)), Pricer(rl.hardware(HW), "default"))
    assert got is not None
    gathered = rstd.nbytes + ids.nbytes + 4096 * 4096 * 2 + w.nbytes + x.nbytes
    assert float(got[0][1].time_s) == pytest.approx(max(float(rl.elementwise(
        gathered, reads=1, writes=0, dtype="int8", hardware=HW).time_s), float(row.time_s)),
        rel=1e-12)
