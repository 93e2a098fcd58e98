"""rl.calibrate on the CPU: measured peaks as a Hardware usable everywhere, saved as JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import roofline as rl  # noqa: E402

QUICK = {"sizes": (64, 128), "copy_bytes": 4 * 2**20, "repeats": 2, "min_time_s": 0.002}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[rl.Hardware, str]:
    path = tmp_path_factory.mktemp("cal") / "cpu.json"
    hw = rl.calibrate(device="cpu", name="my cpu", path=path, **QUICK)
    return hw, str(path)


def test_returns_measured_hardware(measured: tuple[rl.Hardware, str]) -> None:
    hw, _ = measured
    assert isinstance(hw, rl.Hardware) and hw.name == "my cpu" and hw.vendor == "CPU"
    assert hw.fp32_flops_per_s is not None and hw.fp32_flops_per_s > 1e6
    assert hw.mem_bytes_per_s > 1e7
    assert "float32 matmul" in hw.notes and "launch latency" in hw.notes
    assert "roofline.calibrate on cpu" in hw.sources


def test_usable_by_every_api_and_round_trips_json(measured: tuple[rl.Hardware, str]) -> None:
    hw, path = measured
    loaded = rl.Hardware.from_file(path)
    assert loaded == hw
    assert json.loads(open(path).read())["name"] == "my cpu"
    # the measured roofline: a big fp32 GEMM runs at the measured rate
    e = rl.gemm(4096, 4096, 4096, "fp32", hardware=loaded, efficiency="peak")
    assert e.time_s == pytest.approx(2 * 4096**3 / hw.fp32_flops_per_s)
    assert rl.elementwise(2**20, hardware=loaded).time_s > 0
    assert rl.attention(1, 8, 128, 128, 64, dtype="fp32", hardware=loaded).time_s > 0


def test_calibrate_in_a_fresh_process() -> None:
    code = ("import roofline as rl, sys; assert 'torch' not in "
            "sys.modules or True; hw = rl.calibrate('cpu', sizes=(32,), copy_bytes=2**20, "
            "repeats=1, min_time_s=0); print(hw.name)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    assert out.stdout.startswith("calibrated ")


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"device": "tpu"}, ValueError, "device must be 'cuda' or 'cpu', got 'tpu'"),
        ({"device": "cpu", "dtypes": ["int4"]}, ValueError, "dtypes must be among .* 'int4'"),
        ({"device": "cpu", "sizes": [0]}, ValueError, "sizes must be positive integers, got 0"),
        ({"device": "cpu", "sizes": []}, ValueError, "sizes must not be empty"),
        ({"device": "cpu", "repeats": 0}, ValueError, "repeats must be a positive integer"),
        ({"device": "cpu", "copy_bytes": 10}, ValueError, "copy_bytes must be an integer"),
        ({"device": "cpu", "min_time_s": -1}, ValueError, "min_time_s must be a number >= 0"),
        ({"device": "cpu", "name": ""}, ValueError, "name must be a non-empty string"),
    ],
)
def test_bad_input(kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        rl.calibrate(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_says_so() -> None:
    with pytest.raises(RuntimeError, match="torch sees no GPU; use device='cpu'"):
        rl.calibrate(device="cuda")
