"""GPU detection: which accelerator is device 0, found as cheaply as possible.

torch only when the program already imported it, else NVML (the optional ``nvidia-ml-py``
package, ``pip install roofline[nvml]``) or the Linux driver's ``/proc/driver/nvidia/gpus``;
torch is imported only on a machine that shows a GPU device none of those could name (e.g.
ROCm). ``CUDA_VISIBLE_DEVICES=""`` hides the GPUs, as from CUDA.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

from .database import lookup
from .names import GCN_ARCH, GCN_ARCH_AMBIGUOUS, GENERIC_NAMES, clean, normalize
from .spec import ENV_VAR, Hardware, UnknownHardwareError

__all__ = ["detect"]



def _torch_module() -> Any | None:
    """The torch module if installed (imported only now), else None."""
    if "torch" in sys.modules:
        return sys.modules["torch"]  # may be None: import blocked
    if importlib.util.find_spec("torch") is None:
        return None
    return importlib.import_module("torch")


#: Linux directory with one folder per NVIDIA GPU, each with an ``information`` file.
_PROC_NVIDIA = Path("/proc/driver/nvidia/gpus")
#: Device nodes that show a GPU is present (NVIDIA, AMD ROCm).
_GPU_NODES = (Path("/dev/nvidia0"), Path("/dev/kfd"))


def _cuda_hidden() -> bool:
    """True when ``CUDA_VISIBLE_DEVICES`` hides every GPU (empty or ``-1``)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and value.strip().split(",")[0].strip() in ("", "-1")


def _one_name(names: list[str]) -> str | None:
    """The device name when every GPU reports the same one (which is device 0 then)."""
    return names[0] if names and all(n == names[0] for n in names) else None


def _nvml_names() -> list[str] | None:
    """Names of the GPUs NVML sees (``nvidia-ml-py``), or None when NVML is unavailable."""
    if importlib.util.find_spec("pynvml") is None:
        return None
    try:
        pynvml = importlib.import_module("pynvml")
        pynvml.nvmlInit()
        try:
            count = int(pynvml.nvmlDeviceGetCount())
            names = []
            for i in range(count):
                raw = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                names.append(raw.decode() if isinstance(raw, bytes) else str(raw))
            return names
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, old driver, ...: NVML cannot tell
        return None


def _proc_names() -> list[str] | None:
    """Names of the NVIDIA GPUs the Linux driver lists under /proc, or None without it."""
    try:
        folders = sorted(_PROC_NVIDIA.iterdir())
    except OSError:
        return None
    names = []
    for folder in folders:
        try:
            text = (folder / "information").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        model = re.search(r"^Model:\s*(.+?)\s*$", text, re.MULTILINE)
        if model is None:
            return None
        names.append(model.group(1))
    return names


def _no_arch() -> str:
    return ""


def _detected_device() -> tuple[str, Any] | None:
    """Device 0's name and a callable giving its ROCm gcnArchName, or None (no GPU seen).

    Cheapest source first: torch when the program already imported it (it sees what the
    program runs on: CUDA_VISIBLE_DEVICES, ROCm); else NVML, else the NVIDIA driver's /proc
    listing, when every GPU they list has the same name (so it is device 0's); else torch,
    imported only when a GPU device node exists (ROCm, or GPUs of different models) or on a
    platform other than Linux, where no cheap check exists.
    """
    torch: Any
    if "torch" in sys.modules:
        torch = sys.modules["torch"]  # None: the import is blocked
    elif _cuda_hidden():
        return None
    else:
        for lister in (_nvml_names, _proc_names):
            names = lister()
            if names is None:
                continue  # this source cannot tell
            if not names:
                return None  # the driver answers: no GPU
            name = _one_name(names)
            if name is not None:
                return name, _no_arch
            break  # GPUs of different models: torch says which one is device 0
        else:
            if sys.platform.startswith("linux") and not any(n.exists() for n in _GPU_NODES):
                return None
        torch = _torch_module()
    if torch is None:
        return None
    try:
        available = bool(torch.cuda.is_available())
    except Exception:  # a broken driver install must not break the model
        return None
    if not available:
        return None

    def arch() -> str:
        return str(getattr(torch.cuda.get_device_properties(0), "gcnArchName", "") or "")

    return str(torch.cuda.get_device_name(0)), arch


def detect(table: str) -> tuple[Hardware | None, UnknownHardwareError | None]:
    """Hardware of CUDA/ROCm device 0, or the error explaining why it is not known."""
    device = _detected_device()
    if device is None:
        return None, None
    device_name, gcn_arch = device
    try:
        return lookup(device_name, table), None
    except UnknownHardwareError as exc:
        error = exc
    if table == "roofline" and normalize(clean(device_name)) in GENERIC_NAMES:
        arch = gcn_arch()
        base = arch.split(":")[0].strip().lower()
        if base in GCN_ARCH:
            return lookup(GCN_ARCH[base], "roofline"), None
        if base in GCN_ARCH_AMBIGUOUS:
            error = UnknownHardwareError(
                f"hardware: the GPU reports the generic name {device_name!r} and gcnArchName "
                f"{arch!r}, which could be {GCN_ARCH_AMBIGUOUS[base]}. Pass the model name, "
                f"e.g. hardware('MI300X'), or set {ENV_VAR}=MI300X (or call "
                "set_default_hardware('MI300X'))."
            )
    return None, error
