"""A calibrated profile: a Hardware entry plus the model terms fitted to its measurements.

A :class:`Profile` is a :class:`~roofline.Hardware` (same peaks, bandwidth, SMs; every op
accepts it) that also carries ``fitted``: a sparse patch of the default model's parameters
(achievable fractions per peak class, GEMM / streaming / attention / cast / host terms). Under
``efficiency="default"`` the op functions use the packaged terms with this patch on top
(``roofline.calibration.documents``); the constant presets ignore it.

Saved as JSON: the Hardware fields plus ``fitted`` and ``fit`` (what was fitted, on what, the
error before and after). ``Hardware.from_file`` and ``rl.hardware(profile=path)`` load it back.

How ``rl.hardware`` finds one (:mod:`.select` asks): an explicit file, ``ROOFLINE_PROFILE``,
or the profile saved for the detected device and software (:mod:`.cache`). A profile
(explicit or ``ROOFLINE_PROFILE``) fitted on another device than the GPU torch sees warns
(``UserWarning``) and is used (you may model one GPU on another on purpose); a saved profile
that does not match the detected entry, or that cannot be read, warns and is skipped. torch is
never imported here: the device is checked only when torch is already loaded.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .cache import profile_path, software_versions
from .spec import Hardware, register_fitted

__all__ = ["ENV_VAR", "FITTED_KEYS", "MAX_PROFILE_BYTES", "Frozen", "Profile", "env_profile",
           "load_profile", "register_patch_check", "save_profile", "saved_profile",
           "warn_if_other_device"]

#: Environment variable naming a profile file (used before ``ROOFLINE_HARDWARE``).
ENV_VAR = "ROOFLINE_PROFILE"

#: Keys of ``Profile.fitted`` (see roofline.calibration.documents for what each patches).
FITTED_KEYS = ("compute_fraction", "params", "gemm", "attention", "row_ops", "cast", "host")

#: Largest profile file read (a real one is a few kB).
MAX_PROFILE_BYTES = 16 * 2**20

#: Deepest nesting of a profile's JSON objects and lists (a real one nests 5 deep).
MAX_DEPTH = 16

#: Checks of a ``fitted`` patch against the documents it patches, registered by the parameter
#: layer (``roofline._params.documents.check_patch``) which reads them.
_PATCH_CHECKS: list[Any] = []


def register_patch_check(fn: Any) -> Any:
    """Run ``fn(patch)`` on every Profile's ``fitted`` patch when it is built (or loaded)."""
    _PATCH_CHECKS[:] = [fn]
    return fn


class Frozen:
    """An immutable, hashable JSON object (nested dicts of str keys, finite numbers, str).

    Parameters
    ----------
    value : Mapping
        The object; it is copied through JSON, so later changes to ``value`` do not leak in.
    """

    __slots__ = ("_text",)

    def __init__(self, value: Mapping[str, Any] | Frozen | None = None,
                 where: str = "") -> None:
        if isinstance(value, Frozen):
            self._text: str = value._text
            return
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise TypeError(f"Profile: expected a JSON object, got {value!r}")
        _check_finite(value, where)
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


def _check_finite(value: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"Profile: {where or 'top'} nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"Profile: keys must be str, got {k!r} at {where or 'top'}")
            _check_finite(v, f"{where}.{k}" if where else k, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"Profile: {where} must be finite, got {value!r}")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
        raise ValueError(f"Profile: {where} is too large, got {value!r}")


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
        fitted = Frozen(self.fitted, "fitted")
        unknown = sorted(set(fitted.to_dict()) - set(FITTED_KEYS))  # noqa: C414
        if unknown:
            raise ValueError(
                f"Profile: unknown fitted key(s) {', '.join(map(repr, unknown))}; "
                f"valid: {', '.join(FITTED_KEYS)}"
            )
        for check in _PATCH_CHECKS:
            check(fitted.to_dict())
        object.__setattr__(self, "fitted", fitted)
        object.__setattr__(self, "fit", Frozen(self.fit, "fit"))
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


register_fitted(Profile)  # Hardware.from_dict reads a dict with "fitted" as a Profile


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
    size = p.stat().st_size
    if size > MAX_PROFILE_BYTES:
        raise ValueError(f"profile: {os.fspath(path)} holds {size} bytes, more than a profile "
                         f"({MAX_PROFILE_BYTES} at most)")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"profile: {os.fspath(path)} is not UTF-8 text (byte {exc.start}: "
                         f"{raw[exc.start:exc.start + 1]!r})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"profile: {os.fspath(path)} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from None
    except (RecursionError, ValueError) as exc:  # nesting, or an integer too long
        raise ValueError(f"profile: {os.fspath(path)} is not usable JSON (nested too deeply "
                         f"or a number too long): {str(exc)[:80]}") from None
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


def warn_if_other_device(prof: Profile, where: str) -> None:
    """Warn when ``prof`` was fitted on another device than the GPU torch sees."""
    local = _local_device()
    if local is not None and prof.device and prof.device != local[0]:
        warnings.warn(f"{where}: profile fitted on {prof.device!r}, but this machine's GPU is "
                      f"{local[0]!r}; using it anyway", UserWarning, stacklevel=4)


def env_profile() -> Profile:
    """The profile named by ``ROOFLINE_PROFILE`` (errors name the variable)."""
    path = os.environ.get(ENV_VAR, "").strip()
    try:
        prof = load_profile(path)
    except (OSError, ValueError) as exc:
        raise type(exc)(f"{ENV_VAR}={path!r}: {exc}") from None
    warn_if_other_device(prof, ENV_VAR)
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
