"""roofline.pytest_plugin: the roofline_hardware fixture and the roofline_gpu marker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import roofline as rl

pytest_plugins = ["pytester"]

USER_TESTS = """
import os
import pytest
import roofline as rl
from roofline.testing import assert_efficiency

def test_uses_hardware(roofline_hardware):
    assert isinstance(roofline_hardware, rl.Hardware)
    assert roofline_hardware.name == os.environ["WANT_HW"]
    e = rl.gemm(4096, 4096, 4096, hardware=roofline_hardware)
    assert_efficiency(e, measured_s=e.time_s)

@pytest.mark.roofline_gpu
def test_needs_a_gpu():
    pass
"""


@pytest.fixture
def user_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    parent = str(Path(rl.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [parent, *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.delenv("ROOFLINE_HARDWARE", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # this check is about machines without one
    monkeypatch.setenv("WANT_HW", "H200")
    pytester.makepyfile(USER_TESTS)
    return pytester


def _installed() -> bool:
    """True when the package is installed: pytest then loads the plugin from its entry point,
    and naming it again with ``-p`` would register it twice."""
    from importlib.metadata import entry_points

    return any(ep.value == "roofline.pytest_plugin" for ep in entry_points(group="pytest11"))


def _run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    plugin = () if _installed() else ("-p", "roofline.pytest_plugin")
    return suite.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", "--strict-markers",
                                      *args)


def test_named_hardware_and_gpu_marker_skips_without_a_gpu(user_suite: pytest.Pytester) -> None:
    result = _run(user_suite, "--roofline-hardware", "H200", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    out = result.stdout.str()
    assert "roofline_gpu: no GPU visible to torch" in out
    assert "roofline: hardware H200" in out  # the report header


def test_without_gpu_or_name_the_fixture_skips(user_suite: pytest.Pytester) -> None:
    result = _run(user_suite, "-rs")
    result.assert_outcomes(skipped=2)
    assert "pass --roofline-hardware NAME" in result.stdout.str()


def test_environment_default_is_used(user_suite: pytest.Pytester,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOFLINE_HARDWARE", "B200")
    monkeypatch.setenv("WANT_HW", "B200")
    _run(user_suite).assert_outcomes(passed=1, skipped=1)


def test_unknown_name_is_a_usage_error(user_suite: pytest.Pytester) -> None:
    result = _run(user_suite, "--roofline-hardware", "H100 SMX")
    assert result.ret != 0
    assert "close matches: H100 SXM" in result.stdout.str() + result.stderr.str()


def test_entry_point_is_declared() -> None:
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '[project.entry-points.pytest11]\nroofline = "roofline.pytest_plugin"' in text
