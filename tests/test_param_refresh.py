"""MXFP8 weights once per optimizer step (Megatron-Core's reuse_grad_buf_for_mxfp8_param_ag):
the bf16 all-gather and each rank's quantize + zero_ of its gathered weights."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline import _core
from roofline._params.resolve import resolve
from roofline.transformer.param_refresh import param_refresh

R = _core.Recipe


def test_gathered_bytes_bf16_under_mxfp8_only() -> None:
    assert _core.gathered_weight_bytes(R.mxfp8_te, 1.0) == 2.0
    assert _core.gathered_weight_bytes(R.tensorwise_te, 1.0) == 1.0
    assert _core.gathered_weight_bytes(R.nvfp4, 0.5625) == 0.5625
    assert param_refresh(None, 1e9, 2.0, "B200", "default") == (0.0, 2.0)
    assert param_refresh("tensorwise_te", 1e9, 1.0, "B200", "default") == (0.0, 1.0)


def test_refresh_kernels_bytes_hand_derived() -> None:
    # per element: the quantize reads 2 bytes (bf16) and writes 1 + 1 (both layouts) plus
    # 2 / 32 of e8m0 scales at mxfp8_quantize_fraction (0.806 on Blackwell) of the streaming
    # rate (the B200's 7680-bit bus / 8 x 3996 MHz x 2 = 7.67232 TB/s, x 0.88); the zero_
    # writes 2 bytes at the streaming rate. The per-launch latency cancels in the difference
    # of two sizes. (HBM peak and fraction re-derived together: hardware-notes section 41.)
    _, chw, ceff = resolve("B200", "default")
    peak = 7680 / 8 * 3.996e9 * 2
    stream = peak * 0.88
    assert chw.mem_bytes_per_s == peak and ceff.memory_fraction == 0.88
    assert ceff.cast.mxfp8_quantize_fraction == 0.806
    n = 4e9
    one = _core.param_refresh_kernel_times(n, R.mxfp8_te, chw, ceff)
    two = _core.param_refresh_kernel_times(2 * n, R.mxfp8_te, chw, ceff)
    assert len(one) == 2
    assert two[0] - one[0] == pytest.approx(n * 4.0625 / (stream * 0.806), rel=1e-9)
    assert two[1] - one[1] == pytest.approx(n * 2.0 / stream, rel=1e-9)
    assert _core.param_refresh_kernel_times(n, R.tensorwise_te, chw, ceff) == []
    s, g = param_refresh("mxfp8_te", n, 1.0, "B200", "default")
    assert g == 2.0 and s == pytest.approx(sum(one), rel=1e-12)


def _step(recipe: str, zero: int = 1) -> rl.transformer.TrainStep:
    est = rl.transformer.estimate(
        rl.transformer.config("Llama-3-8B"), "train", hardware="B200", linear_recipe=recipe,
        seq_len=8192, micro_batch=2, grad_accum=8, dp=8, zero=zero, gpus_per_node=8)
    assert est.step is not None
    return est.step


def test_mxfp8_step_pays_the_refresh_of_every_linear_weight() -> None:
    # Llama-3-8B's linear weights: 32 layers x (q, k, v, o: 4096 x (4096 + 2 x 1024 + 4096)
    # and gate, up, down: 3 x 4096 x 14336), the same shard update for both recipes
    linear = 32 * (4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336)
    mx, cs = _step("mxfp8_te"), _step("tensorwise_te")
    refresh = param_refresh("mxfp8_te", linear, 1.0, "B200", "default")[0]
    assert mx.optimizer_s - cs.optimizer_s == pytest.approx(refresh, rel=1e-9)
    # the all-gather moves bf16 instead of fp8: never less communication
    assert mx.comm_s > cs.comm_s
    assert mx.time_s > cs.time_s


def test_no_refresh_without_the_distributed_optimizer() -> None:
    mx, cs = _step("mxfp8_te", zero=0), _step("tensorwise_te", zero=0)
    assert mx.optimizer_s == pytest.approx(cs.optimizer_s, rel=1e-12)


def test_grouped_quantize_per_expert_hand_derived() -> None:
    # TE 2.9's split_quantize under MXFP8: one quantize_mxfp8 per expert with rows: reads
    # 2 bytes, writes 1 + 1 plus the e8m0 scales of both layouts (rows ceil(cols / 32) +
    # cols ceil(rows / 32)); an expert without rows launches nothing.
    import numpy as np

    _, chw, ceff = resolve("B200", "default")
    rows, cols = 1000.0, 7168.0
    one = _core.grouped_quantize_columns(np.array([rows]), cols, R.mxfp8_te, chw, ceff)
    two = _core.grouped_quantize_columns(np.array([rows, 0.0, rows]), cols, R.mxfp8_te, chw,
                                         ceff)
    scales = rows * 224 + cols * 32  # ceil(7168 / 32) = 224, ceil(1000 / 32) = 32
    assert one[2] == 4 * rows * cols + scales and one[3] == 1
    # at mxfp8_quantize_fraction 0.806 of the B200's streaming rate (7.67232 TB/s x 0.88)
    assert one[1] == pytest.approx(one[2] / (7680 / 8 * 3.996e9 * 2 * 0.88 * 0.806), rel=1e-9)
    assert two[0] == pytest.approx(2 * one[0], rel=1e-12) and two[3] == 2
    # per-tensor fp8 (tensorwise_te): the dense path's amax, its reduction and one cast
    cs = _core.grouped_quantize_columns(np.array([rows]), cols, R.tensorwise_te, chw, ceff)
    assert cs[3] == 3 and cs[2] == pytest.approx(2 * rows * cols + 12 + 3 * rows * cols)
