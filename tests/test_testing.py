"""roofline.testing: assertions for users' pytest suites."""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import pytest

import roofline as rl
from roofline.testing import assert_efficiency, assert_within, efficiency

pytest_plugins = ["pytester"]

E = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware="H100 SXM")


def test_efficiency_is_predicted_over_measured() -> None:
    assert efficiency(E, 2 * E.time_s) == pytest.approx(0.5)
    assert efficiency(E, measured_s=2 * E.time_s) == pytest.approx(0.5)
    assert efficiency(5e-4, 1e-3) == pytest.approx(0.5)  # (predicted, measured)


def test_assert_efficiency_passes_and_fails_readably() -> None:
    assert_efficiency(E, E.time_s / 0.8, at_least=0.7)   # 80 % of the model
    assert_efficiency(E, measured_s=E.time_s / 2)       # faster than the model
    with pytest.raises(AssertionError) as info:
        assert_efficiency(E, measured_s=2 * E.time_s, at_least=0.7)  # 50 %
    msg = str(info.value)
    assert "gemm 8192x8192x8192 bf16" in msg
    assert "efficiency 50.0% < required 70.0%" in msg
    assert "FLOP/s" in msg and "compute-bound" in msg


def test_old_argument_order_still_works_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="estimate first"):
        assert_efficiency(E.time_s / 0.8, E, at_least=0.7)
    with pytest.warns(DeprecationWarning):
        assert efficiency(2 * E.time_s, E) == pytest.approx(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_within(E, E.time_s)  # the documented order never warns


def test_assert_within() -> None:
    assert_within(E, E.time_s * 1.2, rel=0.25)
    with pytest.raises(AssertionError, match="under-predicts by 50.0% \\(allowed 25.0%\\)"):
        assert_within(E.time_s * 0.5, E.time_s, rel=0.25)  # float estimate: 0.5x measured
    with pytest.raises(AssertionError, match="over-predicts"):
        assert_within(E, measured_s=E.time_s / 2)


def test_every_result_with_a_time_is_accepted() -> None:
    cfg = rl.transformer.config("Llama-3-8B")
    rep = rl.transformer.estimate(cfg, phase="decode", batch=8, kv_len=1024, hardware="H100 SXM")
    assert_efficiency(rep, measured_s=rep.time_s, at_least=0.99)
    r = rl.float8.linear(8192, 8192, 8192, recipe="rowwise", hardware="H100 SXM")
    assert_within(r, measured_s=r.fp8_s, rel=1e-9)  # a Float8Linear is judged by fp8_s
    with pytest.raises(AssertionError):
        assert_within(r, measured_s=r.bf16_s, rel=0.01)

    @dataclasses.dataclass
    class TraceReport:  # what rl.trace.explain returns: predicted_s and measured_s
        predicted_s: float
        measured_s: float

    rep2 = TraceReport(predicted_s=1.0e-3, measured_s=1.1e-3)
    assert_within(rep2, rel=0.1)              # measured_s defaults to the report's
    assert efficiency(rep2) == pytest.approx(1 / 1.1)
    with pytest.raises(AssertionError, match="efficiency 50.0%"):
        assert_efficiency(rep2, measured_s=2e-3)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: assert_efficiency(E, 0), ValueError, "measured_s must be a positive finite"),
        (lambda: assert_efficiency(E, "1ms"), TypeError, "measured_s must be a number"),
        (lambda: assert_efficiency(E, 1e-3, at_least=0), ValueError, "at_least must be a pos"),
        (lambda: assert_efficiency(None, 1e-3), TypeError, "result must be an estimate"),
        (lambda: assert_efficiency(E), TypeError, "measured_s is required"),
        (lambda: assert_within(E, 1e-3, rel=-1), ValueError, "rel must be a positive number"),
        (lambda: assert_within(rl.gemm([1, 2], 8, 8, hardware="H100 SXM"), 1e-3),
         ValueError, "result must be a scalar estimate"),
        (lambda: efficiency(E, float("nan")), ValueError, "measured_s must be a positive"),
    ],
)
def test_bad_input(call, exc, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=match):
        call()


def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let pytester's subprocess import this roofline (not installed in development)."""
    parent = str(Path(rl.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [parent, *filter(None, [os.environ.get("PYTHONPATH")])]))


def test_failures_point_at_the_users_test(pytester: pytest.Pytester,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _importable(monkeypatch)
    pytester.makepyfile(
        """
        import roofline as rl
        from roofline.testing import assert_efficiency

        def test_slow_kernel():
            e = rl.gemm(8192, 8192, 8192, hardware="H100 SXM")
            assert_efficiency(e, measured_s=2 * e.time_s, at_least=0.7)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "efficiency 50.0% < required 70.0%" in out
    assert "assert_efficiency(e, measured_s=2 * e.time_s" in out   # the user's line
    assert "raise AssertionError(" not in out                     # not roofline's frames


def test_our_deprecations_are_errors_in_this_suite() -> None:
    """pyproject's filterwarnings turns roofline's own deprecations into errors, so neither the
    suite nor the docs and notebooks it runs can keep teaching a deprecated call."""
    import roofline as rl

    assert issubclass(rl.RooflineDeprecationWarning, DeprecationWarning)
    with pytest.raises(rl.RooflineDeprecationWarning, match="estimate first"):
        assert_efficiency(E.time_s / 0.8, E, at_least=0.7)


def test_docs_and_notebooks_do_not_teach_the_old_order() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    old = re.compile(r"assert_(efficiency|within)\(\s*(measured_s|[0-9][0-9.e-]*)\s*,")
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md")),
             *sorted((root / "notebooks").glob("*.ipynb"))]
    assert not [f.name for f in files if old.search(f.read_text(encoding="utf-8"))]
