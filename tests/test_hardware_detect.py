"""Resolution order of ``rl.hardware()`` and cheap GPU detection (NVML, /proc, torch).

Detection never imports torch when a default is set, and without one it imports torch only
where a GPU device exists that NVML and the driver's /proc listing could not name. NVML and
/proc are replaced by fakes here; no GPU is needed.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import roofline

#: Where the imported package lives (the checkout's python/ or site-packages), for
#: subprocesses that must import the same roofline.
SRC = str(Path(roofline.__file__).resolve().parents[1])

ROOT = Path(__file__).resolve().parents[1]
rh = importlib.import_module("roofline.hardware")
#: The detection module, whose private sources the tests replace.
detect = importlib.import_module("roofline.hardware.detect")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Any:
    """No default, no ROOFLINE_HARDWARE, torch 'not imported', no NVML, no /proc, no nodes."""
    monkeypatch.delenv("ROOFLINE_HARDWARE", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(detect, "_nvml_names", lambda: None)
    monkeypatch.setattr(detect, "_PROC_NVIDIA", Path("/nonexistent/roofline-test"))
    monkeypatch.setattr(detect, "_GPU_NODES", ())
    monkeypatch.setattr(detect, "_torch_module", _no_torch_import)
    rh.set_default_hardware(None)
    yield
    rh.set_default_hardware(None)


def _no_torch_import() -> Any:
    raise AssertionError("detection imported torch")


def fake_pynvml(names: list[str]) -> types.ModuleType:
    """A stand-in for ``pynvml`` with the calls detection makes."""
    m = types.ModuleType("pynvml")
    m.nvmlInit = lambda: None  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: len(names)  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: names[h].encode()  # type: ignore[attr-defined]
    return m


def proc_tree(tmp_path: Path, names: list[str]) -> Path:
    """A /proc/driver/nvidia/gpus look-alike with one folder per GPU."""
    root = tmp_path / "gpus"
    for i, name in enumerate(names):
        d = root / f"0000:{i:02x}:00.0"
        d.mkdir(parents=True)
        (d / "information").write_text(
            f"Model: \t\t {name}\nIRQ:             123\nGPU UUID: \t GPU-xyz\n")
    root.mkdir(exist_ok=True)
    return root


def test_no_gpu_no_default_raises_without_importing_torch() -> None:
    with pytest.raises(rh.HardwareNotSpecifiedError, match="ROOFLINE_HARDWARE"):
        rh.hardware()


def test_nvml_names_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real _nvml_names, with a fake pynvml module
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(detect, "_torch_module", _no_torch_import)
    monkeypatch.setattr(detect, "_PROC_NVIDIA", Path("/nonexistent/roofline-test"))
    monkeypatch.delenv("ROOFLINE_HARDWARE", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(["NVIDIA H100 80GB HBM3"] * 8))
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "pynvml" else None)
    assert rh.hardware().name == "H100 SXM"


def test_nvml_with_no_device_means_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detect, "_nvml_names", lambda: [])
    monkeypatch.setattr(detect, "_GPU_NODES", (Path("/"),))  # a node exists, NVML still wins
    with pytest.raises(rh.HardwareNotSpecifiedError):
        rh.hardware()


def test_proc_listing_names_the_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(detect, "_PROC_NVIDIA", proc_tree(tmp_path, ["NVIDIA H200"] * 4))
    assert rh.hardware().name == "H200"


def test_mixed_gpus_ask_torch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(detect, "_PROC_NVIDIA", proc_tree(tmp_path, ["NVIDIA L4", "NVIDIA L40S"]))
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: True, get_device_name=lambda i=0: "NVIDIA L40S",
        get_device_properties=lambda i=0: types.SimpleNamespace(gcnArchName=""))
    monkeypatch.setattr(detect, "_torch_module", lambda: fake)
    assert rh.hardware().name == "L40S"


def test_rocm_node_imports_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detect, "_GPU_NODES", (Path("/"),))  # "/dev/kfd" exists
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: True, get_device_name=lambda i=0: "AMD Radeon Graphics",
        get_device_properties=lambda i=0: types.SimpleNamespace(gcnArchName="gfx90a:xnack-"))
    monkeypatch.setattr(detect, "_torch_module", lambda: fake)
    assert rh.hardware().name == "MI250X"


def test_cuda_visible_devices_hides_the_gpus(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setattr(detect, "_PROC_NVIDIA", proc_tree(tmp_path, ["NVIDIA H200"]))
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        with pytest.raises(rh.HardwareNotSpecifiedError):
            rh.hardware()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert rh.hardware().name == "H200"


def test_default_and_env_win_before_any_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> Any:
        raise AssertionError("detection ran")

    monkeypatch.setattr(detect, "_detected_device", boom)
    monkeypatch.setenv("ROOFLINE_HARDWARE", "B200")
    assert rh.hardware().name == "B200"
    rh.set_default_hardware("MI300X")
    assert rh.hardware().name == "MI300X"


@pytest.mark.parametrize("how", ["set_default_hardware", "ROOFLINE_HARDWARE"])
def test_estimates_with_a_default_never_import_torch(how: str) -> None:
    code = (
        "import sys\n"
        "import roofline as rl\n"
        + ("rl.set_default_hardware('H100 SXM')\n" if how == "set_default_hardware" else "")
        + "rl.gemm(4096, 4096, 4096)\n"
        "rl.attention(1, 32, 1024, 1024, 128)\n"
        "rl.float8.linear(4096, 4096, 4096)\n"
        "rl.hardware()\n"
        "print(sorted(n for n in sys.modules if n == 'torch' or n.startswith('torch.')))\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("ROOFLINE_HARDWARE", None)
    if how == "ROOFLINE_HARDWARE":
        env["ROOFLINE_HARDWARE"] = "H100 SXM"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip() == "[]"
