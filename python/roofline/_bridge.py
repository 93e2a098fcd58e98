"""Conversion of public Python objects into the core's structs (cached per object)."""

from __future__ import annotations

from typing import Any

from . import _core
from .efficiency import (
    EfficiencyLike,
    default_efficiency,
    is_shape_aware,
    preset,
    to_core,
)
from .hardware import Hardware, hardware

PEAK_CLASSES = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")

_threads = 0


#: Most sweep threads ``set_num_threads`` accepts.
MAX_THREADS = 1024


def set_num_threads(n: int) -> None:
    """Threads used by array sweeps (0 = all cores; sweeps under ~32k points use one)."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads: n must be an int, got {n!r}")
    if not 0 <= n <= MAX_THREADS:
        raise ValueError(
            f"set_num_threads: n must be an integer in [0, {MAX_THREADS}], got {n!r}"[:200]
        )
    _threads = n


def get_num_threads() -> int:
    """Threads used by array sweeps (0 = all cores)."""
    return _threads


def resolve_hardware(value: Any) -> Hardware:
    """A Hardware, a name ``rl.hardware`` accepts, or None (detected / default)."""
    return hardware(value)


def core_hardware(hw: Hardware) -> Any:
    """The core struct for ``hw`` (peaks absent from the database become 0)."""
    peaks = [getattr(hw, f"{c}_flops_per_s") or 0.0 for c in PEAK_CLASSES]
    return _core.Hardware(
        peaks,
        hw.mem_bytes_per_s,
        hw.l2_bytes or 0.0,
        int(hw.sms or 0),
        hw.clock_hz or 0.0,
    )


def require_peak(fn: str, hw: Hardware, core_dtype: Any) -> None:
    """Raise ValueError when ``hw`` has no peak for the class the dtype computes at."""
    cls = _core.peak_class(core_dtype).name
    if not getattr(hw, f"{cls}_flops_per_s", None):
        raise ValueError(
            f"{fn}: {hw.name} has no {cls} peak in the database (dtype {core_dtype.name}); "
            f"pass hardware=hw.replace({cls}_flops_per_s=...) or another dtype"
        )


def resolve(hw_value: Any, efficiency: EfficiencyLike) -> tuple[Hardware, Any, Any]:
    """Resolve hardware and efficiency: (Hardware, core Hardware, core Efficiency)."""
    hw = resolve_hardware(hw_value)
    if is_shape_aware(efficiency):
        from ._calibration import shared_core_objects

        chw, ceff = shared_core_objects(hw)
        return hw, chw, ceff
    if isinstance(efficiency, str) and efficiency.strip().lower() == "default":
        efficiency = default_efficiency()
    eff = preset(efficiency, hw)
    return hw, core_hardware(hw), to_core(eff)
