"""How ``rl.hardware`` finds a profile: explicit file, ``ROOFLINE_PROFILE``, the saved one.

Mismatches: an explicit ``rl.hardware(name, profile=path)`` whose profile is of another
accelerator raises ``ValueError`` (the two arguments contradict each other); a profile
(explicit or ``ROOFLINE_PROFILE``) fitted on another device than the GPU torch sees warns
(``UserWarning``) and is used (you may model one GPU on another on purpose); a saved profile
that does not match the detected entry, or that cannot be read, warns and is skipped.
torch is never imported here: the device is checked only when torch is already loaded.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ..hardware import Hardware
from .cache import profile_path, software_versions
from .profile import Profile, load_profile

ENV_VAR = "ROOFLINE_PROFILE"


def _local_device() -> tuple[str, Any] | None:
    """(device 0's name, torch) when torch is already imported and sees a GPU, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        return str(torch.cuda.get_device_name(0)), torch
    except Exception:  # a broken driver must not break the model
        return None


def _warn_if_other_device(prof: Profile, where: str) -> None:
    local = _local_device()
    if local is not None and prof.device and prof.device != local[0]:
        warnings.warn(f"{where}: profile fitted on {prof.device!r}, but this machine's GPU is "
                      f"{local[0]!r}; using it anyway", UserWarning, stacklevel=4)


def explicit_profile(path: str | os.PathLike[str], name: Any, table: str) -> Profile:
    """``rl.hardware(name, profile=path)``: the profile, checked against ``name`` if given."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"hardware: profile must be a path, got {path!r}")
    prof = load_profile(path)
    if name is not None:
        from ..hardware import hardware

        want = hardware(name, table=table)
        if want.name not in (prof.name, prof.base):
            raise ValueError(f"hardware: profile {os.fspath(path)!r} is of {prof.name!r}, "
                             f"not of the requested {want.name!r}")
    _warn_if_other_device(prof, "hardware")
    return prof


def env_profile() -> Profile:
    """The profile named by ``ROOFLINE_PROFILE`` (errors name the variable)."""
    path = os.environ.get(ENV_VAR, "").strip()
    try:
        prof = load_profile(path)
    except (OSError, ValueError) as exc:
        raise type(exc)(f"{ENV_VAR}={path!r}: {exc}") from None
    _warn_if_other_device(prof, ENV_VAR)
    return prof


def saved_profile(detected: Hardware) -> Profile | None:
    """The profile saved for the detected GPU and this torch / CUDA, or None."""
    local = _local_device()
    if local is None:
        return None
    device, torch = local
    path = profile_path(device, software_versions(torch))
    if not path.is_file():
        return None
    try:
        prof = load_profile(path)
    except (OSError, ValueError) as exc:
        warnings.warn(f"hardware: skipping the saved profile: {exc}", UserWarning, stacklevel=3)
        return None
    if prof.name != detected.name:
        warnings.warn(f"hardware: skipping the saved profile {Path(path)}: it is of "
                      f"{prof.name!r}, the detected GPU is {detected.name!r}", UserWarning,
                      stacklevel=3)
        return None
    return prof
