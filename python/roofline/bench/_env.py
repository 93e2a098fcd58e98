"""What a measurement ran on: the device as roofline resolves it, its raw name, versions."""

from __future__ import annotations

import platform
import shutil
import subprocess
from typing import Any

__all__ = ["environment"]


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _driver(torch: Any) -> str | None:
    """The NVIDIA driver release (nvidia-smi), else the CUDA driver API version."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10, check=True)
            first = out.stdout.strip().splitlines()
            if first:
                return first[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        v = int(torch._C._cuda_getDriverVersion())
        return f"CUDA driver API {v // 1000}.{v % 1000 // 10}"
    except Exception:  # noqa: BLE001 - best effort only
        return None


def environment(torch: Any, device: str) -> dict[str, Any]:
    """Fields every row of a run carries: ``hardware``, ``device_name``, ``versions``.

    ``hardware`` is the canonical name :func:`roofline.hardware` gives the device (so that
    :func:`roofline.validation.compare` predicts the rows without being told), or the raw
    device name where the database has no entry (CPUs: pass ``hardware=`` when comparing).
    """
    from .._version import __version__
    from ..hardware import hardware

    versions: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version(),
                                "roofline": __version__}
    if device == "cuda":
        raw = str(torch.cuda.get_device_name(torch.cuda.current_device()))
        versions["cuda"] = torch.version.cuda
        if getattr(torch.version, "hip", None):
            versions["hip"] = torch.version.hip
        versions["driver"] = _driver(torch)
        try:
            import triton

            versions["triton"] = triton.__version__
        except ImportError:
            versions["triton"] = None
        try:
            name = hardware(raw).name
        except (KeyError, ValueError):
            name = raw
    else:
        raw = _cpu_name()
        versions["cuda"] = None
        versions["driver"] = None
        name = raw
    return {"hardware": name, "device_name": raw, "versions": versions}
