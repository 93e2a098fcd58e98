"""``rl.hardware()``: which accelerator a call means.

In this order: an explicit name or :class:`Hardware` (or ``profile=`` file); the default of
:func:`set_default_hardware`; the ``ROOFLINE_PROFILE`` (a profile file) or
``ROOFLINE_HARDWARE`` (a name) environment variable; the detected GPU (:mod:`.detect`),
replaced by the profile saved for it (:mod:`.profile`); else an error saying what to pass.
"""

from __future__ import annotations

import os
from typing import Any

from .database import check_table, lookup
from .detect import detect
from .profile import ENV_VAR as PROFILE_ENV_VAR
from .profile import Profile, env_profile, load_profile, saved_profile, warn_if_other_device
from .spec import ENV_VAR, Hardware, HardwareNotSpecifiedError, UnknownHardwareError

__all__ = ["ENV_VAR", "default_hardware_name_or_none", "hardware", "set_default_hardware"]

_default: Hardware | None = None


def set_default_hardware(
    name: str | Hardware | None, *, table: str = "roofline"
) -> Hardware | None:
    """Set (or with ``None`` clear) the hardware :func:`hardware` uses when given no name.

    The default wins over ``ROOFLINE_HARDWARE`` and over the detected GPU.

    Parameters
    ----------
    name : str, Hardware or None
        A name :func:`hardware` accepts (resolved now, so a typo fails here), a
        :class:`Hardware`, or ``None`` to clear the default.
    table : {"roofline", "torchao"}
        Table used to resolve a name.

    Returns
    -------
    Hardware or None
        The new default.
    """
    global _default
    if name is None:
        _default = None
    else:
        _default = hardware(name, table=table)
    return _default


def hardware(name: str | Hardware | None = None, *, table: str = "roofline",
             profile: str | os.PathLike[str] | None = None) -> Hardware:
    """Look up an accelerator by name, or detect the current one.

    Parameters
    ----------
    name : str, Hardware or None
        A canonical name (``"H100 SXM"``), an alias (``"h100-sxm5"``), a full name, or
        an exact device string (``"NVIDIA H100 80GB HBM3"``, ``"AMD Instinct MI300X
        (gfx942:sramecc+:xnack-)"``, ``"GPU 0: NVIDIA A10G"``). A :class:`Hardware`
        is returned unchanged. ``None`` detects the GPU (see Notes).
    table : {"roofline", "torchao"}
        ``"torchao"`` searches torchao's own table with torchao's own matching (exact
        key, else the first key the name starts with), for 1:1 comparisons.
    profile : str or PathLike, optional
        A calibrated profile's JSON file (``roofline calibrate -o``); returned as a
        ``roofline.calibration.Profile``. With ``name`` too, the profile must be of that
        accelerator (else ``ValueError``).

    Returns
    -------
    Hardware

    Raises
    ------
    KeyError
        (:class:`UnknownHardwareError`) Unknown, generic or ambiguous names; the
        message lists close matches or the choices.
    TypeError
        ``name`` is not a str, Hardware or None.
    HardwareNotSpecifiedError
        (a :class:`RuntimeError`) No name, no GPU and no default.

    Notes
    -----
    Matching is exact after case-folding and turning whitespace, ``-`` and ``_`` into
    single spaces; a leading ``GPU 0: ``, a trailing ROCm ``(gfx...)`` and a leading
    vendor word (``NVIDIA``, ``AMD``, ...) are ignored. There is no prefix or
    substring matching: ``NVIDIA L40S`` is not ``L4``, ``NVIDIA H200`` is not ``H100``.
    A bare ``H100`` / ``NVIDIA H100`` is refused as ambiguous.

    Without a name, in this order: the default set by :func:`set_default_hardware`; the
    ``ROOFLINE_PROFILE`` (a profile file) or ``ROOFLINE_HARDWARE`` (a name) environment
    variable; then the detected GPU (device 0's name, as ``torch.cuda.get_device_name(0)``
    reports it; for a generic ROCm name, its ``gcnArchName``), replaced by the profile saved
    for that device and software when there is one (``roofline calibrate``, see
    ``roofline.hardware.cache``); else an error saying what to pass. An explicit default
    therefore wins over the detected GPU, and a call with a default set never imports torch.
    Detection uses torch only when the program already imported it; otherwise NVML (``pip
    install roofline[nvml]``) or the NVIDIA driver's ``/proc`` listing name the GPU without
    importing anything heavy, and torch is imported only on a machine that shows a GPU device
    none of them could name (ROCm, or GPUs of different models). ``CUDA_VISIBLE_DEVICES=""``
    hides the GPUs from detection, as from CUDA.
    """
    if profile is not None:
        return _explicit_profile(profile, name, table)
    if isinstance(name, Hardware):
        return name
    check_table(table, "hardware")
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(
                "hardware: name must be a str, a Hardware or None, "
                f"got {name!r} ({type(name).__name__})"
            )
        return lookup(name, table)

    # (1) an explicit name was handled above; (2) the default of set_default_hardware()
    if _default is not None:
        return _default
    # (3) the environment: a profile file, then a name
    if table == "roofline" and os.environ.get(PROFILE_ENV_VAR, "").strip():
        return env_profile()
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        try:
            return lookup(env, table)
        except UnknownHardwareError as exc:
            raise UnknownHardwareError(f"{ENV_VAR}={env!r}: {exc}") from exc
    # (4) detection (cheap: see .detect), then (5) the profile saved for that device
    detected, detect_error = detect(table)
    if detected is not None:
        if table == "roofline":
            return saved_profile(detected) or detected
        return detected
    if detect_error is not None:
        raise detect_error
    raise HardwareNotSpecifiedError(
        "hardware: no default set and no GPU detected (no NVIDIA driver, NVML or torch "
        "saw one). Pass a name, e.g. hardware('H100 SXM'), call "
        f"set_default_hardware('H100 SXM'), or set the environment variable {ENV_VAR}="
        "'H100 SXM'. list_hardware() shows the names."
    )


def default_hardware_name_or_none(table: str = "roofline") -> str | None:
    """Name :func:`hardware` would return without arguments, or None if it would raise."""
    try:
        return hardware(None, table=table).name
    except (LookupError, RuntimeError, ValueError):
        return None


def _explicit_profile(path: str | os.PathLike[str], name: Any, table: str) -> Profile:
    """``rl.hardware(name, profile=path)``: the profile, checked against ``name`` if given."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"hardware: profile must be a path, got {path!r}")
    prof = load_profile(path)
    if name is not None:
        want = hardware(name, table=table)
        if want.name not in (prof.name, prof.base):
            raise ValueError(f"hardware: profile {os.fspath(path)!r} is of {prof.name!r}, "
                             f"not of the requested {want.name!r}")
    warn_if_other_device(prof, "hardware")
    return prof
