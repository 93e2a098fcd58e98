"""FSDP implementations' copies around their collectives (transformer.fsdp_passes)."""

from __future__ import annotations

import numpy as np
import pytest
from _mpt import H100, MPT_1B, mpt_step

import roofline as rl
from roofline.ops.elementwise import elementwise
from roofline.transformer.composer import fsdp1_grad_s, layer_tensors
from roofline.transformer.fsdp_passes import fsdp2_copy_passes, fsdp_unit_passes_s


def _el(n: float, r: float, w: float) -> float:
    return float(elementwise(int(np.ceil(n)), r, w, 0.0, "bf16", H100).time_s)


def test_fsdp2_passes_by_hand():
    # copy-out (1 read, 1 write) per all-gather; chunk_cat reads bf16, writes reduce_dtype
    assert fsdp2_copy_passes(1e6, 4.0, True) == ([(1e6, 1.0, 1.0)],
                                                 [(1e6, 1.0, 1.0), (1e6, 1.0, 2.0)])
    assert fsdp2_copy_passes(1e6, 2.0, False) == ([(1e6, 1.0, 1.0)], [(1e6, 1.0, 1.0)])


def test_unit_passes_sum_the_kernels():
    layer, root = 5.0e7, 1.0e8
    f, b = fsdp_unit_passes_s("fsdp2", layer, root, 24, 8, 4.0, True, 0.0, H100)
    assert float(f) == pytest.approx(24 * _el(layer, 1, 1) + _el(root, 1, 1))
    assert float(b) == pytest.approx(24 * (_el(layer, 1, 1) + _el(layer, 1, 2))
                                     + _el(root, 1, 2))
    # not resharded after the forward: no second copy-out in the backward
    _, b_keep = fsdp_unit_passes_s("fsdp2", layer, root, 24, 8, 4.0, False, 0.0, H100)
    assert float(b) - float(b_keep) == pytest.approx(24 * _el(layer, 1, 1))
    # FSDP1: its gradient path, backward only; Megatron-FSDP: nothing priced
    f1, b1 = fsdp_unit_passes_s("fsdp1", layer, root, 24, 8, 4.0, True, 0.5, H100)
    assert float(f1) == 0.0
    assert float(b1) == pytest.approx(24 * float(fsdp1_grad_s(layer, 8, 4.0, True, 0.5, H100))
                                      + float(fsdp1_grad_s(root, 8, 4.0, False, 0.5, H100)))
    fm, bm = fsdp_unit_passes_s("megatron", layer, root, 24, 8, 4.0, True, 0.5, H100)
    assert float(fm) == float(bm) == 0.0
    # arrays broadcast; more elements, more time
    fa, _ = fsdp_unit_passes_s("fsdp2", np.array([1e7, 1e8]), root, 24, 8, 4.0, True, 0.0, H100)
    assert fa.shape == (2,) and fa[1] > fa[0]


_step = mpt_step


def test_fsdp2_step_adds_its_copies_to_every_micro_batch():
    two, meg = _step(), _step(fsdp="megatron")
    counts = MPT_1B.param_counts()
    layer = layer_tensors(MPT_1B).sum() - 2 * 2048  # the config counts no norm biases
    root = counts["embedding"]
    per_mb = (24 * (2 * _el(layer, 1, 1) + _el(layer, 1, 2))
              + _el(root, 1, 1) + _el(root, 1, 2))
    assert two.step.compute_s - meg.step.compute_s == pytest.approx(2 * per_mb, rel=0.02)
    assert two.step.time_s > meg.step.time_s
    # ZeRO-1: no FSDP copies, and a non-FSDP2 implementation is refused
    assert _step(zero=1, reduce_dtype=None).step.time_s > 0
    with pytest.raises(ValueError, match="fsdp='megatron' with zero=1"):
        _step(zero=1, reduce_dtype=None, fsdp="megatron")


def test_efficiency_reaches_the_passes_and_the_optimizer():
    """estimate(efficiency=...) prices the FSDP implementation's copies and the optimizer
    step (both composed outside the Program) under the same model as the kernels: with the
    peak model each pass is its DRAM bytes at the datasheet bandwidth, never more than the
    default model's time, and the step's optimizer and the FSDP delta shrink with it."""
    layer, root = 5.0e7, 1.0e8
    for fsdp in ("fsdp1", "fsdp2"):
        fd, bd = fsdp_unit_passes_s(fsdp, layer, root, 24, 8, 4.0, True, 0.5, H100)
        fp, bp = fsdp_unit_passes_s(fsdp, layer, root, 24, 8, 4.0, True, 0.5, H100,
                                    "peak")
        assert float(fp) <= float(fd) and 0.0 < float(bp) < float(bd)
    # FSDP2's backward at peak: bytes by hand over the datasheet bandwidth, kernel floors aside
    _, bp = fsdp_unit_passes_s("fsdp2", layer, 0.0, 1, 8, 4.0, False, 0.0, H100, "peak")
    hw = rl.hardware(H100)
    assert float(bp) == pytest.approx(layer * (2 + 4) / hw.mem_bytes_per_s, rel=0.05)
    kw = dict(fsdp="fsdp1", optimizer="decoupled_adamw", clip_grad_norm=True)
    d, p = mpt_step(**kw), mpt_step(efficiency="peak", **kw)
    assert 0.0 < p.step.optimizer_s < d.step.optimizer_s
    dm, pm = mpt_step(fsdp="megatron"), mpt_step(fsdp="megatron", efficiency="peak")
    d1, p1 = mpt_step(fsdp="fsdp1"), mpt_step(fsdp="fsdp1", efficiency="peak")
    assert 0.0 < p1.step.compute_s - pm.step.compute_s < d1.step.compute_s - dm.step.compute_s
