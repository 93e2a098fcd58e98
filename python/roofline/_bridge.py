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
    """Threads used by array sweeps (0 = all cores; small sweeps use one)."""
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


#: resolve_cached's memo: key -> (hardware argument, efficiency argument, Hardware, core
#: Hardware, core Efficiency, {core dtype: peak meta}). Objects are keyed by id() and kept
#: alive in the value (so an id is never reused while its entry exists).
_CACHE: dict[tuple[Any, ...], tuple[Any, Any, Hardware, Any, Any, dict[Any, Any]]] = {}
_CACHE_SIZE = 256

#: resolve_cached's first level: (id(hardware), id(efficiency)) -> (hardware argument,
#: efficiency argument, default efficiency, terms loader, calibration loader, result). A hit
#: needs the same two objects and the same state of the three things "default" depends on.
_FAST: dict[tuple[int, int], tuple[Any, Any, Any, Any, Any, tuple[Any, Any, Any, Any]]] = {}
_STATE: list[Any] = []  # [efficiency module, _terms module, _calibration module], on first use


def resolve_cached(
    hw_value: Any, efficiency: EfficiencyLike
) -> tuple[Hardware, Any, Any, dict[Any, Any]]:
    """:func:`resolve` memoized for the scalar fast paths, plus a per-dtype dict they may fill.

    Only explicit hardware (a Hardware or a name) is memoized: ``None`` follows the default
    and the environment, which may change between calls. The key includes what
    ``efficiency="default"`` means now and the loaders of the fitted files (as
    ``_calibration.shared_core_objects`` does), so changing either is seen at once.
    """
    if _STATE:
        eff_mod, terms_mod, calib_mod = _STATE
        hit = _FAST.get((id(hw_value), id(efficiency)))
        if (hit is not None and hit[0] is hw_value and hit[1] is efficiency
                and hit[2] is eff_mod._default and hit[3] is terms_mod.data
                and hit[4] is calib_mod.data):
            return hit[5]
    if hw_value is None:
        hw, chw, ceff = resolve(hw_value, efficiency)
        return hw, chw, ceff, {}
    from . import _calibration, _terms
    from . import efficiency as eff_module

    if not _STATE:
        _STATE.extend((eff_module, _terms, _calibration))
    hw_key = hw_value if isinstance(hw_value, str) else id(hw_value)
    eff_key = efficiency if isinstance(efficiency, str) else id(efficiency)
    default = eff_module._default
    key = (hw_key, eff_key, default, _terms.data, _calibration.data)
    hit2 = _CACHE.get(key)
    if hit2 is None or hit2[0] is not hw_value or hit2[1] is not efficiency:
        hw, chw, ceff = resolve(hw_value, efficiency)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        hit2 = _CACHE[key] = (hw_value, efficiency, hw, chw, ceff, {})
    result = (hit2[2], hit2[3], hit2[4], hit2[5])
    if len(_FAST) >= _CACHE_SIZE:
        _FAST.clear()
    _FAST[id(hw_value), id(efficiency)] = (hw_value, efficiency, default, _terms.data,
                                           _calibration.data, result)
    return result


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
