"""Power-limited SKUs (issue #24: "a 500 W H100"): a Hardware with a lower board power.

The GEMM terms were fitted on the 700 W H100 SXM (settled clock 0.87 of the boost clock); an
accelerator's drop scales with its dense bf16 FLOP/s per watt (``_core.gemm_throttle_fraction``,
hardware-notes section 8). A 500 W H100 packs 700 / 500 = 1.4x the tensor rate per watt, so
its GEMMs settle at ``1 - 0.13 x 1.4 = 0.818``; memory-bound kernels do not move.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import roofline as rl
from roofline import _core

H100 = rl.hardware("H100 SXM")


def _terms() -> dict:
    return json.loads(resources.files("roofline").joinpath("data/terms/gemm.json").read_text())


def test_settled_clock_by_hand():
    doc = _terms()
    f700 = doc["terms"]["throttle_fraction"]
    ref = doc["throttle_reference_flops_per_w"]
    assert ref == pytest.approx(989.5e12 / 700)  # fitted on the 700 W H100 SXM
    got = [_core.gemm_throttle_fraction(f700, ref, H100.bf16_flops_per_s, w)
           for w in (700.0, 500.0, 350.0)]
    assert got[0] == pytest.approx(f700)
    assert got[1] == pytest.approx(1 - (1 - f700) * 700 / 500)  # 0.818
    assert got[2] == pytest.approx(1 - (1 - f700) * 2)  # 0.74
    # the drop is bounded: at any board power the clock keeps half its boost
    assert _core.gemm_throttle_fraction(f700, ref, H100.bf16_flops_per_s, 1.0) == 0.5


def test_lower_board_power_slows_long_gemms_only():
    powers = [350.0, 500.0, 700.0, 1000.0]
    long = [rl.gemm(16384, 8192, 8192, hardware=H100.replace(tdp_w=w)).time_s for w in powers]
    assert all(a > b for a, b in zip(long, long[1:], strict=False))  # more power, faster
    short = [rl.gemm(256, 256, 256, hardware=H100.replace(tdp_w=w)).time_s for w in powers]
    # a microsecond GEMM runs before the limiter acts: it barely moves
    assert short[0] / short[-1] < 1.02 < long[0] / long[-1]
    copies = [rl.elementwise(2**28, 1, 1, hardware=H100.replace(tdp_w=w)).time_s
              for w in powers]
    assert np.ptp(copies) == 0.0  # memory-bound: untouched


def test_a_500_w_training_step():
    kw = dict(seq_len=8192, micro_batch=1)
    full = rl.transformer.estimate("Llama-3-8B", "train", hardware=H100, **kw).step
    capped = rl.transformer.estimate("Llama-3-8B", "train", hardware=H100.replace(tdp_w=500),
                                     **kw).step
    # GEMMs and attention settle lower; the step is slower by less than the clock ratio
    assert 1.0 < capped.time_s / full.time_s < 0.87 / 0.818
    assert capped.memory == full.memory
