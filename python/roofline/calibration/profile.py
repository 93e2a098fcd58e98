"""A calibrated profile: a Hardware entry plus the model terms fitted to its measurements.

A :class:`Profile` is a :class:`~roofline.Hardware` (same peaks, bandwidth, SMs; every op
accepts it) that also carries ``fitted``: a sparse patch of the default model's parameters
(achievable fractions per peak class, GEMM / streaming / attention / cast / host terms). Under
``efficiency="default"`` the op functions use the packaged terms with this patch on top
(``roofline.calibration.documents``); the constant presets ignore it.

Saved as JSON: the Hardware fields plus ``fitted`` and ``fit`` (what was fitted, on what, the
error before and after). ``Hardware.from_file`` and ``rl.hardware(profile=path)`` load it back.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..hardware import Hardware

__all__ = ["Frozen", "Profile", "load_profile", "save_profile"]

#: Keys of ``Profile.fitted`` (see roofline.calibration.documents for what each patches).
FITTED_KEYS = ("compute_fraction", "params", "gemm", "attention", "row_ops", "cast", "host")


class Frozen:
    """An immutable, hashable JSON object (nested dicts of str keys, finite numbers, str).

    Parameters
    ----------
    value : Mapping
        The object; it is copied through JSON, so later changes to ``value`` do not leak in.
    """

    __slots__ = ("_text",)

    def __init__(self, value: Mapping[str, Any] | Frozen | None = None) -> None:
        if isinstance(value, Frozen):
            self._text: str = value._text
            return
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise TypeError(f"Profile: expected a JSON object, got {value!r}")
        _check_finite(value, "")
        try:
            self._text = json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"Profile: not a JSON object of numbers and strings: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """A fresh deep copy as plain dicts."""
        out: dict[str, Any] = json.loads(self._text)
        return out

    def __bool__(self) -> bool:
        return self._text != "{}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frozen) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def __repr__(self) -> str:
        return f"Frozen({self._text})"


def _check_finite(value: Any, where: str) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"Profile: keys must be str, got {k!r} at {where or 'top'}")
            _check_finite(v, f"{where}.{k}" if where else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"Profile: {where} must be finite, got {value!r}")


@dataclasses.dataclass(frozen=True, repr=False)
class Profile(Hardware):
    """A Hardware entry with fitted model terms (see the module docstring).

    Parameters
    ----------
    fitted : Mapping
        Sparse patch of the default model's parameters: ``compute_fraction`` (per peak class),
        ``params`` (streaming / GEMM globals), and per area (``gemm``, ``attention``,
        ``row_ops``, ``cast``, ``host``) a patch of that area's terms document.
    fit : Mapping
        What the fit saw and did: ``base`` (the Hardware it started from), ``device`` and
        ``software`` (where the measurements ran), ``families`` (error before / after),
        ``unused`` (families no term fits, with the reason).
    origin : str
        Where this profile was loaded from (not part of equality; shown by ``repr``).
    """

    fitted: Any = dataclasses.field(default_factory=Frozen)
    fit: Any = dataclasses.field(default_factory=Frozen)
    origin: str = dataclasses.field(default="", compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        fitted = Frozen(self.fitted)
        unknown = sorted(set(fitted.to_dict()) - set(FITTED_KEYS))
        if unknown:
            raise ValueError(
                f"Profile: unknown fitted key(s) {', '.join(map(repr, unknown))}; "
                f"valid: {', '.join(FITTED_KEYS)}"
            )
        object.__setattr__(self, "fitted", fitted)
        object.__setattr__(self, "fit", Frozen(self.fit))
        if not isinstance(self.origin, str):
            raise TypeError(f"Profile: origin must be a str, got {self.origin!r}")

    @property
    def base(self) -> str:
        """Name of the Hardware entry the fit started from."""
        return str(self.fit.to_dict().get("base", self.name))

    @property
    def device(self) -> str:
        """Device string the measurements ran on (``""`` when unknown)."""
        return str(self.fit.to_dict().get("device", ""))

    def to_dict(self) -> dict[str, Any]:
        """Hardware fields plus ``fitted`` and ``fit`` as plain dicts (``origin`` left out)."""
        out = super().to_dict()
        out["fitted"] = self.fitted.to_dict()
        out["fit"] = self.fit.to_dict()
        out.pop("origin", None)
        return out

    def __repr__(self) -> str:
        base = super().__repr__()[len("Hardware("):-1]
        areas = ", ".join(sorted(self.fitted.to_dict())) or "nothing"
        where = f", from {self.origin}" if self.origin else ""
        return f"Profile({base}, fitted: {areas}{where})"


def save_profile(profile: Profile, path: str | os.PathLike[str]) -> Path:
    """Write ``profile`` as JSON to ``path`` (parent folders created); return the path."""
    if not isinstance(profile, Profile):
        raise TypeError(f"save_profile: profile must be a Profile, got {type(profile).__name__}")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(profile.to_dict(), indent=1, sort_keys=False) + "\n",
                   encoding="utf-8")
    return out


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Load a profile (or a plain Hardware JSON, which becomes a Profile with nothing fitted).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file is not valid JSON or not a Hardware / Profile object (the message names it).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"profile: no file {os.fspath(path)!r}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"profile: {os.fspath(path)} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"profile: {os.fspath(path)} must hold a JSON object, "
                         f"got {type(data).__name__}")
    data.pop("origin", None)
    try:
        prof = Profile.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"profile: {os.fspath(path)}: {exc}") from None
    if not isinstance(prof, Profile):  # pragma: no cover - from_dict builds cls
        raise TypeError(f"profile: {os.fspath(path)} did not load as a Profile")
    object.__setattr__(prof, "origin", os.fspath(path))  # not part of equality or hash
    return prof
