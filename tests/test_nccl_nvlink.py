"""NCCL's share of the NVLink line rate, per NVLink generation (issue #24, session 12):
NCCL's own per-link figures (``src/graph/topo.h``: sm90 20.6, sm100 40.1 GB/s per link of
25 / 50 GB/s per direction) over the line rate."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.ops.collectives import (
    NCCL_NVLINK5_FRACTION,
    NCCL_NVLINK_FRACTION,
    link_bytes_per_s,
    nccl_nvlink_fraction,
)


def test_shares_by_generation() -> None:
    # NVLink 5: 18 links x 40.1 GB/s = 721.8 of 900 GB/s per direction
    for name in ("B200", "GB200", "B300", "GB300"):
        hw = rl.hardware(name)
        assert nccl_nvlink_fraction(hw) == pytest.approx(0.802)
        assert link_bytes_per_s(hw, nccl_nvlink_fraction(hw)) == pytest.approx(721.8e9)
    # NVLink 4 (H100: the nccl-tests maintainers' 370 of 450 GB/s = NCCL's 20.6 x 18 = 370.8)
    h100 = rl.hardware("H100 SXM")
    assert nccl_nvlink_fraction(h100) == NCCL_NVLINK_FRACTION
    assert link_bytes_per_s(h100, NCCL_NVLINK_FRACTION) == pytest.approx(18 * 20.6e9, rel=0.003)
    # other links keep the H100 share (not measured here); AMD's RCCL is not NCCL's sm100 table
    for name in ("A100 SXM 80GB", "H200", "MI355X"):
        assert nccl_nvlink_fraction(rl.hardware(name)) == NCCL_NVLINK_FRACTION
    assert NCCL_NVLINK5_FRACTION < NCCL_NVLINK_FRACTION


def test_training_prices_nvlink5_at_the_sm100_share() -> None:
    """A GB200 training step with the default link equals one given 721.8 GB/s explicitly,
    and is slower than one at the H100 share (370 / 450 of 900 GB/s)."""
    kw = dict(seq_len=4096, micro_batch=1, hardware="GB200", ep=8, grad_accum=4, dp=8)
    default = rl.transformer.estimate("Qwen3-30B-A3B", "train", **kw)
    given = rl.transformer.estimate("Qwen3-30B-A3B", "train", link_bytes_per_s=721.8e9, **kw)
    h100_share = rl.transformer.estimate("Qwen3-30B-A3B", "train",
                                         link_bytes_per_s=900e9 * 370 / 450, **kw)
    assert default.time_s == pytest.approx(given.time_s, rel=1e-12)
    assert default.time_s > h100_share.time_s


def test_bad_hardware_raises() -> None:
    with pytest.raises(TypeError, match="hardware"):
        nccl_nvlink_fraction("GB200")  # type: ignore[arg-type]
