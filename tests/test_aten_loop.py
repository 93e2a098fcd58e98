"""aten's non-vectorized elementwise loop (broadcast / mixed layouts) and the eager LayerNorm
backward's second kernel, with hand-derived numbers (H100 SXM: 132 SMs)."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.ops.registry.memory_entries import ATEN_LOOP_STEP_S, aten_loop_path

HW = "H100 SXM"


def _t(shape: tuple[int, ...], stride: tuple[int, ...]) -> TensorArg:
    return TensorArg(shape, "bf16", 2, stride)


def _est(call: Call):  # type: ignore[no-untyped-def]
    costs, _ = price(call, Pricer(rl.hardware(HW), "default"))
    assert costs
    return costs[0][1]


def test_floor_formula() -> None:
    # ceil(67108864 / (132 x 2048)) = ceil(248.24) = 249 steps of 0.8 us
    assert _core.aten_loop_floor_s(67108864, 132, 0.8e-6) == pytest.approx(249 * 0.8e-6)
    assert _core.aten_loop_floor_s(0, 132, 0.8e-6) == 0.0
    assert ATEN_LOOP_STEP_S == 0.8e-6


def test_transposing_copy_takes_the_loop() -> None:
    # the encoder layer's copy_ of a (8, 2048, 4096) tensor permuted to (2048, 8, 4096)
    dst, src = _t((2048, 8, 4096), (32768, 4096, 1)), _t((2048, 8, 4096), (4096, 8388608, 1))
    assert aten_loop_path(Call("aten::copy_", (dst, src)), into_first=True) == (False, True)
    e = _est(Call("aten::copy_", (dst, src)))
    assert float(e.time_s) == pytest.approx(249 * 0.8e-6, rel=1e-12)  # 199.2 us (measured 177)
    same = _est(Call("aten::copy_", (dst, _t((2048, 8, 4096), (32768, 4096, 1)))))
    assert float(same.time_s) < 0.6 * float(e.time_s)  # 268 MB at ~3 TB/s: ~90 us
    # a copy from an expanded scalar reads nothing per element from DRAM: no floor
    fill = Call("aten::copy_", (dst, _t((2048, 8, 4096), (0, 0, 0))))
    assert aten_loop_path(fill, into_first=True) == (False, False)
    assert float(_est(fill).time_s) < 249 * 0.8e-6


def test_broadcast_bias_add() -> None:
    # (2048, 8, 12288) += (12288,): ceil(201326592 / 270336) = ceil(744.7) = 745 steps
    call = Call("aten::add_", (_t((2048, 8, 12288), (98304, 12288, 1)), _t((12288,), (1,))))
    assert aten_loop_path(call) == (False, True)
    assert float(_est(call).time_s) == pytest.approx(745 * 0.8e-6, rel=1e-12)  # measured 594 us
    # equal dense layouts (any dim order) stay vectorized; unknown strides keep the plain pass
    a = _t((8, 2048, 4096), (4096, 32768, 1))
    assert aten_loop_path(Call("aten::add", (a, a))) == (True, True)
    assert aten_loop_path(Call("aten::add", (TensorArg((8, 4), "bf16", 2),) * 2)) is None
    # the live path (outputs known) gets the same floor
    live = Call("aten::add", (_t((2048, 8, 12288), (98304, 12288, 1)), _t((12288,), (1,))),
                (_t((2048, 8, 12288), (98304, 12288, 1)),), tags=frozenset({"pointwise"}))
    assert float(_est(live).time_s) == pytest.approx(745 * 0.8e-6, rel=1e-12)
    # a one-step loop (decode's RoPE on 1 x 32 x 1 x 128) costs no more than the plain pass
    small = Call("aten::mul", (_t((1, 32, 1, 128), (4096, 128, 128, 1)),
                               _t((1, 1, 1, 128), (128, 128, 128, 1))))
    plain = Call("aten::mul", (_t((1, 32, 1, 128), (4096, 128, 128, 1)),) * 2)
    assert float(_est(small).time_s) == pytest.approx(float(_est(plain).time_s), rel=0.01)


def test_eager_layernorm_backward_reads_twice() -> None:
    # dx kernel: dy, x (2 x 134217728 B), weight 8192 B, mean + rstd 2 x 4 x 16384 B; writes
    # dx 134217728 B and fp32 dgamma + dbeta 2 x 4 x 4096 B. GammaBeta kernel: dy and x again.
    e = rl.layernorm(16384, 4096, dtype="bf16", backward=True, backend="eager", hardware=HW)
    read = 2 * 134217728 + 8192 + 131072 + 2 * 134217728
    assert float(e.bytes) == pytest.approx(read + 134217728 + 32768, rel=1e-12)
    f = rl.rmsnorm(16384, 4096, dtype="bf16", backward=True, backend="eager", hardware=HW)
    assert float(f.bytes) == pytest.approx(2 * 134217728 + 8192 + 65536 + 134217728 + 16384,
                                           rel=1e-12)
