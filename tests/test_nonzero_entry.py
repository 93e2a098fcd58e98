"""``aten::nonzero`` as the kernels aten's Nonzero.cu launches: cub's count (1 or 2 kernels),
cub's select (init + sweep) and write_indices for > 1 dims, each its own launch (the count's
copy to the host is a sync, not a kernel). Hand-derived counts and bytes, properties."""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price

HW = "H200 SXM"


def test_launches_by_hand() -> None:
    assert _core.nonzero_launches(129, 1) == 3       # one count tile + init + sweep
    assert _core.nonzero_launches(4096, 2) == 4      # one tile, + write_indices
    assert _core.nonzero_launches(4097, 2) == 5      # a grid pass + one tile
    assert _core.nonzero_launches(8 * 4096, 2) == 5  # as the H200 HF Qwen3-MoE traces list
    for bad in (0.0, -1.0, math.nan):
        assert _core.nonzero_launches(bad, 2) == 0.0


def _price(call: Call):  # type: ignore[no-untyped-def]
    p = Pricer(rl.hardware(HW), "default")
    costs, how = price(call, p)
    assert costs
    return costs[0][1], how, p


def test_mask_is_five_launches_with_their_bytes() -> None:
    mask = TensorArg((8, 4096), "bool", 1)
    e, how, p = _price(Call("aten::nonzero", (mask,)))
    n = 8 * 4096
    # count and select read the mask; select writes n int64 flat indices, write_indices reads
    # them and writes 2 coordinates each (every element taken as nonzero: no output recorded)
    read, written = 2 * n + 8 * n, 8 * n * 3
    ref = p.traffic(read, written, 0.0, "nonzero", kernels=5)
    assert float(e.time_s) == pytest.approx(float(ref.time_s))
    assert "5 kernels" in how and "write_indices" in how
    one = p.traffic(read, written, 0.0, "nonzero", kernels=1)
    assert float(e.time_s) > 3 * float(one.time_s)  # launch-bound: not one pass


def test_recorded_count_and_one_dim() -> None:
    flat = TensorArg((129,), "bool", 1)
    e, how, p = _price(Call("aten::nonzero", (flat,)))
    ref = p.traffic(2 * 129, 8 * 129, 0.0, "nonzero", kernels=3)
    assert float(e.time_s) == pytest.approx(float(ref.time_s))
    assert "3 kernels" in how and "write_indices" not in how
    mask = TensorArg((8, 4096), "bool", 1)
    few, how_few, _ = _price(Call("aten::nonzero", (mask,),
                                  outputs=(TensorArg((256, 2), "int64", 8),)))
    every, _, _ = _price(Call("aten::nonzero", (mask,)))
    assert float(few.bytes) < float(every.bytes)
    assert "not recorded" not in how_few
    empty, how_e = price(Call("aten::nonzero", (TensorArg((0, 4), "bool", 1),)),
                            Pricer(rl.hardware(HW), "default"))
    assert empty == [] and "empty" in how_e
