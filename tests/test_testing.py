"""roofline.testing: assertions for users' pytest suites."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.testing import assert_efficiency, assert_within, efficiency

E = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware="H100 SXM")


def test_efficiency_is_predicted_over_measured() -> None:
    assert efficiency(2 * E.time_s, E) == pytest.approx(0.5)
    assert efficiency(1e-3, 5e-4) == pytest.approx(0.5)


def test_assert_efficiency_passes_and_fails_readably() -> None:
    assert_efficiency(E.time_s / 0.8, E, at_least=0.7)   # 80 % of the model
    assert_efficiency(E.time_s / 2, E)                  # faster than the model
    with pytest.raises(AssertionError) as info:
        assert_efficiency(2 * E.time_s, E, at_least=0.7)  # 50 %
    msg = str(info.value)
    assert "gemm 8192x8192x8192 bf16" in msg
    assert "efficiency 50.0% < required 70.0%" in msg
    assert "FLOP/s" in msg and "compute-bound" in msg


def test_assert_within() -> None:
    assert_within(E, E.time_s * 1.2, rel=0.25)
    with pytest.raises(AssertionError, match="under-predicts by 50.0% \\(allowed 25.0%\\)"):
        assert_within(E.time_s * 0.5, E.time_s, rel=0.25)  # float estimate: 0.5x measured
    with pytest.raises(AssertionError, match="over-predicts"):
        assert_within(E, E.time_s / 2)


def test_model_estimates_are_accepted() -> None:
    cfg = rl.transformer.config("Llama-3-8B")
    rep = rl.transformer.estimate(cfg, phase="decode", batch=8, kv_len=1024, hardware="H100 SXM")
    assert_efficiency(rep.time_s, rep, at_least=0.99)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: assert_efficiency(0, E), ValueError, "measured_s must be a positive finite"),
        (lambda: assert_efficiency("1ms", E), TypeError, "measured_s must be a number"),
        (lambda: assert_efficiency(1e-3, E, at_least=0), ValueError, "at_least must be a pos"),
        (lambda: assert_efficiency(1e-3, None), TypeError, "estimate must be a number"),
        (lambda: assert_within(E, 1e-3, rel=-1), ValueError, "rel must be a positive number"),
        (lambda: assert_within(rl.gemm([1, 2], 8, 8, hardware="H100 SXM"), 1e-3),
         ValueError, "estimate must be a scalar estimate"),
        (lambda: efficiency(float("nan"), E), ValueError, "measured_s must be a positive"),
    ],
)
def test_bad_input(call, exc, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=match):
        call()
