"""The default model's parameter documents for one Hardware: packaged, plus a profile's patch.

A :class:`~roofline.calibration.Profile` carries a sparse patch; :func:`documents` deep-merges
it over the packaged documents, so every term the fit did not touch keeps its packaged value.
``fitted`` keys and what they patch:

- ``compute_fraction``: ``achievable_compute_fraction[<hw.name>]`` of calibration.json (per
  peak class; classes absent keep the packaged lookup);
- ``params``: ``params`` of calibration.json;
- ``gemm`` / ``attention`` / ``row_ops`` / ``cast`` / ``host``: the area's terms document
  (e.g. ``{"terms": {"latency_s": ...}}`` for gemm; ``attention`` also takes
  ``flash_fraction``, FlashAttention-2's rate as a fraction of the GEMM rate, measured directly).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from . import gemm as gemm_fields
from . import host as host_fields
from . import packaged

__all__ = ["check_patch", "documents", "merge", "patch_for"]


def merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` merged in (nested dicts merged, the rest replaced).

    Copy on write: the dicts on the patched paths are new, the rest is shared with ``base``
    (the packaged documents are cached and never mutated; a fit builds thousands of these).
    """
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def patch_for(hw: Any) -> dict[str, Any]:
    """The fitted patch of ``hw`` (empty unless it is a Profile)."""
    from ..hardware.profile import Profile

    return hw.fitted.to_dict() if isinstance(hw, Profile) else {}


def documents(hw: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(calibration document, {area: terms document}) the default model uses for ``hw``.

    The packaged documents unchanged (not copied) for a plain Hardware; for a Profile, copies
    with its patch merged in. Do not mutate the result.
    """
    cal = packaged.calibration()
    areas = {area: packaged.terms(area) for area in packaged.TERM_AREAS}
    patch = patch_for(hw)
    if not patch:
        return cal, areas
    cal_patch: dict[str, Any] = {}
    if "params" in patch:
        cal_patch["params"] = patch["params"]
    if "compute_fraction" in patch:
        cal_patch["achievable_compute_fraction"] = {hw.name: patch["compute_fraction"]}
    if cal_patch:
        cal = merge(cal, cal_patch)
    areas = {a: merge(d, patch[a]) if a in patch else d for a, d in areas.items()}
    return cal, areas


# ---------------------------------------------------------------- checks of a profile's patch

#: Tables keyed by names (vendor, architecture, hardware) and the schema of one entry.
_TABLES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("gemm", "vendor_overrides"): ("gemm", "terms"),
    ("cast", "per_architecture"): ("cast", "universal"),
    ("host", "per_hardware"): ("host", "terms"),
}

#: Tables keyed by names whose entries map peak classes to scales.
_CLASS_TABLES = (("gemm", "compute_scale"), ("gemm", "fallback_compute_scale"))

#: Terms a patch may set that the packaged document leaves at their code default.
_EXTRA: dict[tuple[str, ...], tuple[str, ...]] = {
    ("attention",): ("flash_fraction",),
    ("gemm", "terms"): gemm_fields.FIELDS,
    ("host", "terms"): host_fields.FIELDS,
}

#: Largest value of a count-like term (tiles, FLOPs per element, exponents): far above every
#: packaged value, far below an overflow.
_MAX_PLAIN = 1e15


#: Smallest fraction, ratio or scale of a rate a profile may set (0.1 % of the peak).
_MIN_RATE_SHARE = 1e-3

#: Terms with their own range (low, high, low inclusive).
_SPECIFIC = {"overlap_p": (1.0, 64.0, True)}


def _bounds(name: str, ref: float) -> tuple[float, float, bool]:
    """(low, high, low inclusive) of a numeric term named ``name`` (packaged value ``ref``).

    Fractions of a peak or of a bandwidth are in [0.001, 1]: above 1 a kernel would beat the
    datasheet roofline, and below 0.1 % of its peak no kernel runs (a percentage written as a
    fraction, or a failed fit: ``flash_fraction`` 1e-300 priced one attention call at 1e297 s;
    the fitter's own ranges start at 0.05). Times (``*_s``) are in [0, 1] s. Ratios and scales
    of a rate are in [0.001, 1.5] (a GEMM's ``compute_scale`` times the compute fraction is
    capped at 1 by the core);
    ``overlap_p`` (the p-norm combining compute and memory time) in [1, 64]; other terms (tile
    sizes, FLOPs per element, exponents) are positive (or zero where the packaged value is
    zero), finite and at most 1e15.
    """
    if name in _SPECIFIC:
        return _SPECIFIC[name]
    if "fraction" in name:
        return _MIN_RATE_SHARE, 1.0, True
    if name.endswith("_s"):
        return 0.0, 1.0, True
    if "ratio" in name or "scale" in name:
        return _MIN_RATE_SHARE, 1.5, True
    return 0.0, _MAX_PLAIN, True


def _number(where: str, value: Any, name: str, ref: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Profile: {where} must be a number, got {value!r}")
    lo, hi, closed = _bounds(name, ref)
    ok = math.isfinite(value) and (value >= lo if closed else value > lo) and value <= hi
    if not ok:
        rng = f"{'[' if closed else '('}{lo:g}, {hi:g}]"
        raise ValueError(f"Profile: {where} must be a number in {rng}, got {value!r}")


def _walk(patch: Mapping[str, Any], ref: Mapping[str, Any], path: tuple[str, ...]) -> None:
    where = "fitted." + ".".join(path)
    if not isinstance(patch, Mapping):
        raise TypeError(f"Profile: {where} must be a JSON object, got {patch!r}")
    if path in _TABLES or path in _CLASS_TABLES:  # any name; entries shaped alike
        entry = _schema(_TABLES[path]) if path in _TABLES else _class_schema()
        for key, value in patch.items():
            _walk(value, entry, (*path, key))
        return
    for key, value in patch.items():
        here = f"{where}.{key}"
        if key in ref:
            target = ref[key]
        elif key in _EXTRA.get(path, ()):
            target = 0.5
        else:
            known = sorted(set(ref) | set(_EXTRA.get(path, ())))
            raise ValueError(f"Profile: unknown key {here} (got {value!r}); known keys at "
                             f"{where}: {', '.join(known) or 'none'}")
        if isinstance(target, Mapping):
            _walk(value, target, (*path, key))
        elif isinstance(target, bool) or not isinstance(target, (int, float, str)):
            raise ValueError(f"Profile: {here} cannot be patched (got {value!r})")
        elif isinstance(target, str):
            if not isinstance(value, str):
                raise TypeError(f"Profile: {here} must be a string, got {value!r}")
        else:
            scale = len(path) > 1 and path[1] in ("compute_scale", "fallback_compute_scale")
            _number(here, value, "scale" if scale else key, float(target))


def _schema(path: tuple[str, ...]) -> dict[str, Any]:
    doc: Any = packaged.terms(path[0])
    for key in path[1:]:
        doc = doc.get(key, {})
    out = dict(doc)
    out.update({k: 0.5 for k in _EXTRA.get(path, ()) if k not in out})
    return out


def _class_schema() -> dict[str, Any]:
    from ..hardware.spec import PEAK_CLASSES

    return {c: 1.0 for c in PEAK_CLASSES}


def check_patch(patch: Mapping[str, Any]) -> None:
    """Check a profile's ``fitted`` patch against the packaged documents it patches.

    Every key must exist in the document it patches (or be a term the code reads with a
    default: ``attention.flash_fraction``, the GEMM and host term fields), with the packaged
    value's type; numbers are finite and in range (:func:`_bounds`): fractions in (0, 1] so no
    profile prices a kernel below the datasheet roofline, times in [0, 1] s. ``compute_fraction``
    maps peak classes to fractions in (0, 1].

    Raises
    ------
    TypeError
        A value of the wrong type (the message names ``fitted.<path>`` and the value).
    ValueError
        An unknown key or a value out of range (named likewise).
    """
    from ..hardware.spec import PEAK_CLASSES

    for area, value in patch.items():
        if area == "compute_fraction":
            if not isinstance(value, Mapping):
                raise TypeError(f"Profile: fitted.compute_fraction must be a JSON object of "
                                f"peak class -> fraction, got {value!r}")
            for cls, v in value.items():
                if cls not in PEAK_CLASSES:
                    raise ValueError(f"Profile: unknown key fitted.compute_fraction.{cls} "
                                     f"(got {v!r}); peak classes: {', '.join(PEAK_CLASSES)}")
                _number(f"fitted.compute_fraction.{cls}", v, "fraction", 1.0)
        elif area == "params":
            _walk(value, packaged.calibration()["params"], ("params",))
        elif area in packaged.TERM_AREAS:
            _walk(value, packaged.terms(area), (area,))
        else:
            raise ValueError(f"Profile: unknown key fitted.{area} (got {value!r})")


def _register() -> None:
    from ..hardware.profile import register_patch_check

    register_patch_check(check_patch)


_register()
