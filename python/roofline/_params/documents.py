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
from collections.abc import Mapping
from typing import Any

from . import packaged

__all__ = ["documents", "merge", "patch_for"]


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
