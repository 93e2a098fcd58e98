"""rl.rmsnorm, rl.layernorm, rl.softmax, rl.cross_entropy: traffic and FLOPs by hand.

Every expected number is derived here with the arithmetic in the comments. Times use the
"peak" preset (max(FLOPs / fp32 peak, bytes / bandwidth)) or the calibrated default model's
own properties (streaming kernels: latency plus achievable bandwidth).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline import _core

HW = "H100 SXM"


def test_rmsnorm_forward_bytes_and_flops() -> None:
    e = rl.rmsnorm(4, 8, dtype="bf16", hardware=HW)
    # reads x 4*8*2 = 64 and w 8*2 = 16; writes y 4*8*2 = 64 -> 144 bytes
    assert e.bytes == 144
    # 4 FLOPs per element: 4*4*8 = 128
    assert e.flops == 128
    e = rl.rmsnorm(4, 8, dtype="bf16", hardware=HW, save_stats=True)
    # + fp32 rstd per row: 4*4 = 16 -> 160
    assert e.bytes == 160


def test_rmsnorm_backward() -> None:
    c = _core.row_op_cost(_core.RowOp.rmsnorm, 4, 8, _core.DType.bf16, True, False)
    # reads dy, x 2*4*8*2 = 128, w 8*2 = 16, rstd 4*4 = 16 -> 160
    assert c["bytes_read"] == 160
    # writes dx 4*8*2 = 64 and fp32 dw 8*4 = 32 -> 96
    assert c["bytes_written"] == 96
    # 9 FLOPs per element: 9*32 = 288
    assert c["flops"] == 288
    assert rl.rmsnorm(4, 8, hardware=HW, backward=True).bytes == 256


def test_layernorm_forward_and_backward() -> None:
    # fwd: x 4*8*2 = 64, weight + bias 2*8*2 = 32; y 64; mean + rstd 2*4*4 = 32
    assert rl.layernorm(4, 8, hardware=HW).bytes == 64 + 32 + 64
    assert rl.layernorm(4, 8, hardware=HW, save_stats=True).bytes == 64 + 32 + 64 + 32
    assert rl.layernorm(4, 8, hardware=HW).flops == 7 * 32
    c = _core.row_op_cost(_core.RowOp.layernorm, 4, 8, _core.DType.bf16, True, False)
    # reads dy, x 128, weight 16, mean + rstd 32 -> 176; writes dx 64, fp32 dw + db 2*8*4 = 64
    assert (c["bytes_read"], c["bytes_written"], c["flops"]) == (176, 128, 13 * 32)


def test_softmax() -> None:
    e = rl.softmax(1024, 4096, dtype="fp32", hardware=HW)
    # reads and writes 1024*4096*4 = 16,777,216 bytes each
    assert e.bytes == 2 * 16_777_216
    assert e.flops == 5 * 1024 * 4096
    b = rl.softmax(1024, 4096, dtype="fp32", hardware=HW, backward=True)
    # reads y and dy, writes dx: 3 * 16,777,216
    assert b.bytes == 3 * 16_777_216
    assert b.flops == 4 * 1024 * 4096


def test_cross_entropy() -> None:
    e = rl.cross_entropy(8, 1000, dtype="bf16", hardware=HW)
    # logits 8*1000*2 = 16000, labels 8*8 = 64; loss 8*4 = 32
    assert e.bytes == 16000 + 64 + 32
    assert e.flops == 4 * 8000
    # save_stats adds the log-sum-exp 8*4 = 32
    assert rl.cross_entropy(8, 1000, hardware=HW, save_stats=True).bytes == 16000 + 64 + 64
    c = _core.row_op_cost(_core.RowOp.cross_entropy, 8, 1000, _core.DType.bf16, True, False)
    # reads logits 16000, labels 64, lse 32, dloss 32; writes the gradient 16000
    assert (c["bytes_read"], c["bytes_written"]) == (16128, 16000)


def test_peak_time_is_bytes_over_bandwidth() -> None:
    hw = rl.hardware(HW)
    e = rl.rmsnorm(8192, 7168, hardware=HW, efficiency="peak")
    # bytes = 2*8192*7168*2 + 7168*2 = 234,895,360; FLOPs 4*8192*7168 = 234,881,024
    assert e.bytes == 234_895_360
    assert e.time_s == pytest.approx(max(234_895_360 / hw.mem_bytes_per_s,
                                         234_881_024 / hw.fp32_flops_per_s))
    assert e.bound == "memory"


def test_default_model_is_a_streaming_kernel() -> None:
    # The calibrated model: time = bytes / (fraction * bandwidth) + latency, identical to a
    # generic streaming kernel of the same bytes (elementwise with the same traffic).
    n = rl.softmax(4096, 4096, hardware=HW)
    ew = rl.elementwise(4096 * 4096, reads=1, writes=1, hardware=HW)
    assert n.time_s == pytest.approx(ew.time_s)
    assert n.overhead_s > 0


def test_broadcasting() -> None:
    rows = np.array([[1024], [4096]])
    cols = np.array([2048, 4096, 8192])
    e = rl.rmsnorm(rows, cols, hardware=HW)
    assert e.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            one = rl.rmsnorm(int(rows[i, 0]), int(cols[j]), hardware=HW)
            assert e.time_s[i, j] == one.time_s and e.bytes[i, j] == one.bytes
    assert np.all(np.diff(e.time_s, axis=1) > 0) and np.all(np.diff(e.time_s, axis=0) > 0)
    assert rl.cross_entropy([1, 2], 32000, hardware=HW).shape == (2,)


@pytest.mark.parametrize("fn", [rl.rmsnorm, rl.layernorm, rl.softmax, rl.cross_entropy])
def test_backward_moves_more_than_forward(fn: Any) -> None:
    f = fn(4096, 8192, hardware=HW)
    b = fn(4096, 8192, hardware=HW, backward=True)
    assert b.bytes > f.bytes and b.time_s > f.time_s


@pytest.mark.parametrize(
    ("kwargs", "exc", "text"),
    [
        ({"rows": 0, "cols": 8}, ValueError, "rmsnorm: rows must be a positive integer, got 0"),
        ({"rows": 4, "cols": -1}, ValueError, "rmsnorm: cols must be a positive integer, got -1"),
        ({"rows": 2.5, "cols": 8}, ValueError, "rows must be a positive integer, got 2.5"),
        ({"rows": "4", "cols": 8}, TypeError, "rows must be a positive integer"),
        ({"rows": 4, "cols": 8, "dtype": "bf17"}, KeyError, "unknown dtype 'bf17'"),
        ({"rows": 4, "cols": 8, "backward": 1}, TypeError, "backward must be a bool, got 1"),
        ({"rows": 4, "cols": 8, "save_stats": "yes"}, TypeError, "save_stats must be a bool"),
        ({"rows": [1, 2], "cols": [1, 2, 3]}, ValueError, "do not broadcast"),
    ],
)
def test_bad_input(kwargs: dict[str, Any], exc: type[Exception], text: str) -> None:
    with pytest.raises(exc, match=text.replace("(", r"\(").replace(")", r"\)")):
        rl.rmsnorm(hardware=HW, **kwargs)


def test_bad_vocab_is_named() -> None:
    with pytest.raises(ValueError, match="cross_entropy: vocab must be a positive integer, got 0"):
        rl.cross_entropy(4, 0, hardware=HW)
