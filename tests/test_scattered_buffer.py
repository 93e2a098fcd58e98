"""An Inductor kernel that index_copy-writes the new K / V into HF StaticCache's cache touches
only the written slots (its grid is the source), not the whole cache its arguments record."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price

HW = "H200 SXM"
SRC = TensorArg((64, 1024), "bf16", 2)
CACHE = TensorArg((64, 8, 4097, 128), "bf16", 2)


def _bytes(name: str, *inputs: TensorArg) -> float:
    costs, _ = price(Call(name, inputs), Pricer(rl.hardware(HW), "default"))
    assert costs
    return float(costs[0][1].bytes)


def test_index_copy_moves_the_source_twice() -> None:
    # 64 x 1024 bf16 read, the same count stored into the cache: 2 x 131072 B
    got = _bytes("triton_poi_fused__unsafe_view_add_arange_index_copy_transpose_view_2",
                 SRC, CACHE)
    assert got == pytest.approx(2 * 64 * 1024 * 2)


def test_other_kernels_keep_every_buffer() -> None:
    got = _bytes("triton_poi_fused__unsafe_view_add_arange_clone_transpose_view_2", SRC, CACHE)
    assert got == pytest.approx(SRC.nbytes + CACHE.nbytes)


def test_two_equal_big_buffers_are_not_shrunk() -> None:
    # the largest size held by two arguments: a source as large as the buffer, no shrink
    got = _bytes("triton_poi_fused_index_copy_0", CACHE, CACHE, SRC)
    assert got == pytest.approx(2 * CACHE.nbytes + SRC.nbytes)
