"""A training step's GEMMs and attention at the power limiter's settled clock, one rule for
``rl.transformer.estimate`` (every runtime) and ``roofline.torch.estimate``
(:mod:`roofline.ops.sustained`): hand-derived values, properties and where it applies."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Pricer
from roofline.ops.sustained import at_settled_clock, settled_clock

HW = "H100 SXM"


def test_settled_clock_of_the_h100_gemm_terms() -> None:
    clock = settled_clock(rl.hardware(HW), "default")
    assert clock is not None
    f, tau, _ = clock
    assert 0.0 < f < 1.0 and tau > 0.0
    # constant-fraction presets drop no clock
    assert settled_clock(rl.hardware(HW), "roofline") is None


def test_at_settled_clock_by_hand_and_properties() -> None:
    f, tau, p = 0.8, 2e-3, 4.0
    e = rl.gemm(8192, 8192, 8192, "bf16", HW)
    s = at_settled_clock(e, (f, tau, p))
    # the compute term runs at the settled clock f: c / f, less the full-clock part the
    # kernel's own term already carried (sustained_compute_s), never faster than alone
    assert float(s.compute_s) == pytest.approx(
        float(_core.sustained_compute_s(float(e.compute_s), f, tau)))
    assert float(s.time_s) >= float(e.time_s)
    assert float(s.memory_s) == float(e.memory_s) and float(s.flops) == float(e.flops)
    assert float(s.overhead_s) == pytest.approx(
        max(float(s.time_s) - max(float(s.compute_s), float(s.memory_s)), 0.0))
    # no clock: unchanged
    assert at_settled_clock(e, None) is e


def test_pricer_settles_only_training_steps() -> None:
    hw = rl.hardware(HW)
    alone = Pricer(hw, "default").gemm(4096, 4096, 4096, "bf16")
    step = Pricer(hw, "default", sustained=True).gemm(4096, 4096, 4096, "bf16")
    assert float(step.time_s) == pytest.approx(
        float(at_settled_clock(alone, settled_clock(hw, "default")).time_s))
    assert float(step.time_s) > float(alone.time_s)


def test_torch_estimate_settles_training_not_inference() -> None:
    torch = pytest.importorskip("torch")
    import roofline.torch as rlt

    lin = torch.nn.Linear(4096, 4096, bias=False)
    x = torch.randn(4096, 4096)
    hw = rl.hardware(HW)
    alone = rl.gemm(4096, 4096, 4096, "bf16", hw)
    inf = rlt.estimate(lin, x, hardware=HW, mode="inference", dtype="bf16").to_pandas()
    tr = rlt.estimate(lin, x, hardware=HW, mode="train", dtype="bf16").to_pandas()
    fwd_inf = inf.query("kind == 'gemm'").iloc[0]
    fwd_tr = tr.query("kind == 'gemm'").iloc[0]
    assert fwd_inf["time_s"] == pytest.approx(float(alone.time_s))
    assert fwd_tr["time_s"] == pytest.approx(
        float(at_settled_clock(alone, settled_clock(hw, "default")).time_s))


def test_transformer_estimate_sustained_serving_step() -> None:
    """A prefill step by default at each kernel's own clock; ``sustained=True`` (an engine
    kept full) prices its GEMMs at the settled clock: each GEMM row exactly as
    ``at_settled_clock`` of the row run alone, never faster; elementwise rows unchanged."""
    hw = rl.hardware(HW)
    kw = dict(seq_len=2048, hardware=HW)
    alone = rl.transformer.estimate("Llama-3-8B", "prefill", 4, **kw)
    full = rl.transformer.estimate("Llama-3-8B", "prefill", 4, sustained=True, **kw)
    a, s = alone.to_pandas(), full.to_pandas()
    gemm = rl.gemm(4 * 2048, 4096, 14336 * 2, "bf16", hw)  # gate_up_proj, run alone
    settled = at_settled_clock(gemm, settled_clock(hw, "default"))
    row = s["op"] == "gate_up_proj"
    assert float(a.loc[row, "time_s"].iloc[0]) == pytest.approx(float(gemm.time_s))
    assert float(s.loc[row, "time_s"].iloc[0]) == pytest.approx(float(settled.time_s))
    assert full.time_s > alone.time_s
    norm = s["kind"] == "elementwise"
    assert list(s.loc[norm, "time_s"]) == pytest.approx(list(a.loc[norm, "time_s"]))
    # a training step is sustained by default; sustained=False prices it kernel by kernel
    tr = rl.transformer.estimate("Llama-3-8B", "train", 1, seq_len=2048, hardware=HW)
    tr_alone = rl.transformer.estimate("Llama-3-8B", "train", 1, seq_len=2048, hardware=HW,
                                       sustained=False)
    assert tr_alone.time_s < tr.time_s
    with pytest.raises(TypeError, match="sustained must be a bool, got 'yes'"):
        rl.transformer.estimate("Llama-3-8B", "prefill", 1, sustained="yes", **kw)
