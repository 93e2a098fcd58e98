"""Hardware x efficiency -> the core's structs, memoized for the op functions."""

from __future__ import annotations

from typing import Any

from .. import _core
from .. import efficiency as _eff
from .._errors import ArgumentValueError
from ..efficiency import EfficiencyLike, default_efficiency, is_shape_aware, preset, to_core
from ..hardware import PEAK_CLASSES, Hardware, hardware
from . import packaged
from .shape_aware import shared_core_objects
from .timing import per_call

__all__ = ["clear_caches", "core_hardware", "require_peak", "resolve", "resolve_cached",
           "resolve_hardware"]


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
    """Raise ValueError (:class:`~roofline._errors.ArgumentValueError` naming ``dtype``) when
    ``hw`` has no peak for the class the dtype computes at."""
    cls = _core.peak_class(core_dtype).name
    if not getattr(hw, f"{cls}_flops_per_s", None):
        advice = f"pass hardware=hw.replace({cls}_flops_per_s=...) or another dtype"
        raise ArgumentValueError(
            fn, "dtype", f"{core_dtype.name}: {hw.name} has no {cls} peak in the database",
            advice, message=f"{fn}: {hw.name} has no {cls} peak in the database (dtype "
            f"{core_dtype.name}); {advice}")


def resolve(hw_value: Any, efficiency: EfficiencyLike) -> tuple[Hardware, Any, Any]:
    """Resolve hardware and efficiency: (Hardware, core Hardware, core Efficiency)."""
    hw = resolve_hardware(hw_value)
    if is_shape_aware(efficiency):
        chw, ceff = shared_core_objects(hw, per_call())
        return hw, chw, ceff
    if isinstance(efficiency, str) and efficiency.strip().lower() == "default":
        efficiency = default_efficiency()
    eff = preset(efficiency, hw)
    return hw, core_hardware(hw), to_core(eff)


_Resolved = tuple[Hardware, Any, Any, dict[Any, Any]]

#: resolve_cached's memo: (hardware argument, efficiency argument, what "default" means) ->
#: (hardware argument, (Hardware, core Hardware, core Efficiency, {core dtype: peak meta})).
#: Keyed on the values (a Hardware or Profile, a name, a preset or an Efficiency), never on a
#: loader.
_CACHE: dict[tuple[Any, Any, Any], tuple[Any, _Resolved]] = {}
_CACHE_SIZE = 256

#: The first level, for the scalar fast paths: (id(hardware), id(efficiency)) -> (hardware
#: argument, efficiency argument, what "default" meant, result). A hit needs the same two
#: objects (kept alive here, so an id is not reused while its entry exists) and the same
#: default.
_FAST: dict[tuple[int, int], tuple[Any, Any, Any, _Resolved]] = {}


def resolve_cached(hw_value: Any, efficiency: EfficiencyLike) -> _Resolved:
    """:func:`resolve` memoized for the scalar fast paths, plus a per-dtype dict they may fill.

    Only explicit hardware (a Hardware or a name) is memoized: ``None`` follows the default
    and the environment, which may change between calls. The key includes what
    ``efficiency="default"`` means now, so changing it is seen at once.
    """
    # What "default" means now, and the timing the shape-aware model prices at (.timing).
    default = (_eff._default, per_call())
    hit = _FAST.get((id(hw_value), id(efficiency)))
    if (hit is not None and hit[0] is hw_value and hit[1] is efficiency and hit[2][0] is default[0]
            and hit[2][1] is default[1]):
        return hit[3]
    if hw_value is None:
        hw, chw, ceff = resolve(hw_value, efficiency)
        return hw, chw, ceff, {}
    key = (hw_value, efficiency, default)
    try:
        entry = _CACHE.get(key)
    except TypeError:  # an unhashable argument: resolve names what is wrong with it
        hw, chw, ceff = resolve(hw_value, efficiency)
        return hw, chw, ceff, {}
    if entry is None:
        hw, chw, ceff = resolve(hw_value, efficiency)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        entry = _CACHE[key] = (hw_value, (hw, chw, ceff, {}))
    result = entry[1]
    if entry[0] is not hw_value and not isinstance(hw_value, str):
        # An equal value: the same structs, and this argument's own Hardware (a Profile's
        # origin is not part of its value).
        result = (resolve_hardware(hw_value), *result[1:])
    if len(_FAST) >= _CACHE_SIZE:
        _FAST.clear()
    _FAST[id(hw_value), id(efficiency)] = (hw_value, efficiency, default, result)
    return result


def clear_caches() -> None:
    """Forget the loaded documents and every struct built from them (after a fit rewrote a
    packaged file)."""
    packaged.clear()
    shared_core_objects.cache_clear()
    _CACHE.clear()
    _FAST.clear()
