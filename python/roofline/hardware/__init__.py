"""Accelerators: the spec, the database, name matching, GPU detection and ``rl.hardware()``.

- :mod:`.spec`: :class:`Hardware` (peaks, memory system, sources), ``PEAK_CLASSES``,
  ``TABLES`` and the errors.
- :mod:`.database` and :mod:`.names`: the packaged tables (``data/hardware.json``,
  ``data/torchao_hardware.json``), loaded once and checked at load, and how a spelling or a
  device's reported name finds an entry.
- :mod:`.detect`: which GPU is device 0 (NVML, ``/proc``, torch; cheapest first).
- :mod:`.profile` and :mod:`.cache`: a calibrated :class:`~.profile.Profile` (a Hardware
  with fitted terms), its JSON, and where saved profiles live.
- :mod:`.select`: :func:`hardware` (argument, default, environment, detection, saved
  profile) and :func:`set_default_hardware`.

This package imports only the standard library and ``roofline._errors`` (and, for the cache
folder, ``platformdirs`` when installed): never the compiled core or anything above it, and
torch only where detection finds a GPU no cheaper source names.
"""

from __future__ import annotations

from .._errors import UnknownNameError
from .database import list_hardware
from .select import ENV_VAR, default_hardware_name_or_none, hardware, set_default_hardware
from .spec import (
    PEAK_CLASSES,
    TABLES,
    Hardware,
    HardwareLike,
    HardwareNotSpecifiedError,
    UnknownHardwareError,
)

__all__ = [
    "ENV_VAR",
    "PEAK_CLASSES",
    "TABLES",
    "Hardware",
    "HardwareNotSpecifiedError",
    "UnknownHardwareError",
    "UnknownNameError",
    "HardwareLike",
    "default_hardware_name_or_none",
    "hardware",
    "list_hardware",
    "set_default_hardware",
]
