"""pytest plugin: a ``roofline_hardware`` fixture and a ``roofline_gpu`` marker.

Registered as the ``roofline`` pytest11 entry point, so installing roofline enables it (in a
development checkout, load it with ``-p roofline.pytest_plugin``)::

    import pytest
    import roofline as rl
    from roofline.testing import assert_efficiency

    @pytest.mark.roofline_gpu                 # skipped on machines without a GPU
    def test_matmul_speed(roofline_hardware):
        measured_s = time_my_gemm(8192, 8192, 8192)
        e = rl.gemm(8192, 8192, 8192, hardware=roofline_hardware)
        assert_efficiency(e, measured_s=measured_s, at_least=0.7)

``roofline_hardware`` is the ``--roofline-hardware NAME`` given on the command line, else the
detected GPU, else ``ROOFLINE_HARDWARE`` / ``rl.set_default_hardware``; with none of them the
test is skipped (saying why). ``@pytest.mark.roofline_gpu`` skips a test unless torch sees a
CUDA / ROCm device.
"""

from __future__ import annotations

from typing import Any

import pytest

from .hardware import Hardware, HardwareNotSpecifiedError, UnknownHardwareError, hardware

__all__ = ["gpu_available", "roofline_hardware"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roofline")
    group.addoption(
        "--roofline-hardware", action="store", default=None, metavar="NAME",
        help="accelerator for the roofline_hardware fixture (default: the detected GPU)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "roofline_gpu: run only when torch sees a GPU (skipped otherwise)"
    )


def gpu_available() -> bool:
    """True when torch is installed and sees a CUDA / ROCm device."""
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver install skips rather than errors
        return False


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("roofline_gpu") is not None and not gpu_available():
        pytest.skip("roofline_gpu: no GPU visible to torch")


def pytest_report_header(config: pytest.Config) -> str:
    name = config.getoption("--roofline-hardware")
    return f"roofline: hardware {name or 'detected GPU / ROOFLINE_HARDWARE'}"


@pytest.fixture(scope="session")
def roofline_hardware(request: pytest.FixtureRequest) -> Hardware:
    """The accelerator under test: ``--roofline-hardware NAME``, else the detected GPU, else
    ``ROOFLINE_HARDWARE`` / ``rl.set_default_hardware``; skips the test when none is known.
    An unknown name is a usage error (the run fails with the close matches)."""
    name: Any = request.config.getoption("--roofline-hardware")
    if name:
        try:
            return hardware(name)
        except UnknownHardwareError as exc:
            raise pytest.UsageError(f"--roofline-hardware: {exc}") from None
    try:
        return hardware()
    except HardwareNotSpecifiedError:
        pytest.skip("roofline_hardware: no GPU detected; pass --roofline-hardware NAME or set "
                    "ROOFLINE_HARDWARE")
    except UnknownHardwareError as exc:
        pytest.skip(f"roofline_hardware: the detected GPU is not in the database ({exc}); "
                    "pass --roofline-hardware NAME")
