"""aten's one-block nll_loss kernels (reduced 2-d forward and backward): a chain of dependent
loads over the rows, not a pass over the logits; and log_softmax's one-kernel backward (the
rest of eager cross-entropy); hand-derived values."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.ops.registry.memory_entries import CAT_STEP_S

HW = "H200 SXM"


def test_threads_formula() -> None:
    # clamp(2^round(log2(floor(rows / 16))), 32, 1024)
    assert _core.nll_loss_threads(4096) == 256  # 256 = 2^8
    assert _core.nll_loss_threads(8192) == 512
    assert _core.nll_loss_threads(100) == 32  # floor(6.25) = 6 -> 2^3 = 8 -> 32
    assert _core.nll_loss_threads(3000) == 256  # 187 -> log2 7.55 -> 2^8
    assert _core.nll_loss_threads(1 << 20) == 1024
    assert _core.nll_loss_threads(0) == 32


def test_chain_formula() -> None:
    # 4096 rows over 256 threads: 16 rows each, 2 loads per row, 0.8 us each
    assert _core.nll_loss_chain_s(4096, 2, 0.8e-6) == pytest.approx(16 * 2 * 0.8e-6)
    # 3000 rows over 256 threads: ceil(11.7) = 12 rows
    assert _core.nll_loss_chain_s(3000, 1, 0.8e-6) == pytest.approx(12 * 0.8e-6)
    assert _core.nll_loss_chain_s(0, 2, 0.8e-6) == 0.0


def _est(call: Call):  # type: ignore[no-untyped-def]
    costs, how = price(call, Pricer(rl.hardware(HW), "default"))
    assert costs
    return costs[0][1], how


X = TensorArg((4096, 128256), "fp32", 4)
T = TensorArg((4096,), "i64", 8)
ONE = TensorArg((), "fp32", 4)


def test_forward_is_the_chain_not_the_logits() -> None:
    e, how = _est(Call("aten::nll_loss_forward", (X, T, None, 1, -100)))
    plain = Pricer(rl.hardware(HW), "default").traffic(4096 * (8 + 4), 4, 0.0, "x")
    assert float(e.memory_s) == pytest.approx(16 * 2 * CAT_STEP_S)
    assert float(e.time_s) == pytest.approx(float(plain.time_s) - float(plain.memory_s)
                                            + 16 * 2 * CAT_STEP_S)
    assert float(e.time_s) < 40e-6  # the logits (2.1 GB) are never streamed
    assert "256 threads" in how


def test_backward_one_trip_per_row() -> None:
    e, _ = _est(Call("aten::nll_loss_backward", (ONE, X, T, None, 1, -100, ONE)))
    assert float(e.memory_s) == pytest.approx(16 * CAT_STEP_S)
    assert float(e.bytes) == 4096 * 8 + 4096 * 4


def test_no_reduction_is_a_plain_pass() -> None:
    e, how = _est(Call("aten::nll_loss_forward", (X, T, None, 0, -100)))
    assert "threads" not in how
    assert float(e.bytes) > X.nbytes


def test_log_softmax_backward_is_one_kernel() -> None:
    """aten's log_softmax backward runs the block kernel on dy directly: dy and y read, dy
    again after the sum (a 513 KB fp32 row is not cached), dx written: 4 x R x C x 4 B; the
    softmax backward adds its dy * y kernel (2 reads, 1 write more) and 1 kernel."""
    r, c = 4096, 128256
    x = TensorArg((r, c), "fp32", 4)
    e, how = _est(Call("aten::_log_softmax_backward_data", (x, x, 1, 6)))
    s, _ = _est(Call("aten::_softmax_backward_data", (x, x, 1, 6)))
    assert float(e.bytes) == pytest.approx(3 * r * c * 4)  # dy, y, dx (the re-read apart)
    assert float(s.bytes) == pytest.approx(6 * r * c * 4)  # + dy, y read and tmp written
    # both stream at one rate: 4 passes (dy, dy again, y, dx) against 7 (3 more for dy * y)
    assert float(e.time_s) / float(s.time_s) == pytest.approx(4 / 7, rel=0.02)
    assert "log_softmax: one kernel" in how
