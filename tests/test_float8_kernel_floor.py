"""Every kernel a float8 linear launches costs time (issue #25): zero-byte helpers (the split
amax's final reduction, the backward graph's one-element ``ones``) had been priced at 0 s.
A launch moves at least its few bytes and pays the streaming latency, and never less than
the efficiency's per-kernel floor."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.float8.recipes import MODES, RECIPES

SHAPES = [(1, 16, 16), (16, 4096, 4096), (8192, 8192, 8192)]


@pytest.mark.parametrize("hardware", ["H100 SXM", "B200", "MI300X"])
@pytest.mark.parametrize("efficiency", ["default", "torchao"])
def test_every_launched_kernel_costs_time(hardware: str, efficiency: str) -> None:
    checked = 0
    for recipe in RECIPES:
        for mode in MODES:
            for shape in SHAPES:
                try:
                    r = rl.float8.linear(*shape, recipe=recipe, hardware=hardware, mode=mode,
                                         efficiency=efficiency)
                except (ValueError, NotImplementedError):
                    continue  # a recipe this hardware or model does not run
                k = r.kernels()
                assert (k["time_s"] > 0).all(), (recipe, mode, shape,
                                                 k[~(k["time_s"] > 0)]["kernel"].tolist())
                # a launch that moves bytes is at least as slow as its memory time
                assert (k["time_s"] >= k["memory_s"]).all()
                checked += len(k)
    assert checked > 100


def test_every_kernel_meets_the_kernel_floor() -> None:
    floor = 5e-6
    eff = rl.Efficiency(kernel_floor_s=floor)
    for recipe in ("tensorwise", "rowwise"):
        k = rl.float8.linear(8192, 8192, 8192, recipe=recipe, hardware="H100 SXM",
                             mode="training", efficiency=eff).kernels()
        assert (k["time_s"] >= floor).all(), k[k["time_s"] < floor]["kernel"].tolist()


def test_split_amax_reduction_and_ones_move_their_bytes() -> None:
    k = rl.float8.linear(8192, 8192, 8192, recipe="rowwise", hardware="H100 SXM",
                         mode="training").kernels()
    small = k[k["kernel"].str.contains("stage 2|ones")]
    assert len(small) == 4  # three split-amax reductions and the backward's ones
    # reductions: two fp32 partial maxima in, one fp32 scale out; ones: one fp32 out
    assert sorted(small["bytes_written"]) == [4.0] * 4
    assert sorted(small["bytes_read"]) == [0.0, 8.0, 8.0, 8.0]
    assert (small["time_s"] > 0).all()
