"""Accelerator specifications and device-name matching.

The database is data: ``data/hardware.json`` (built from the research CSV by
``scripts/build_hardware_json.py``; every number carries a source) and
``data/torchao_hardware.json`` (torchao's own table, kept verbatim for 1:1
comparisons). Both are loaded lazily, once, and validated at load.

All values are SI: FLOP/s, bytes/s, bytes, Hz, W. Peaks are dense (no 2:4 sparsity).
This module imports only the standard library. :func:`hardware` called without a name looks
at the explicit default and ``ROOFLINE_HARDWARE`` before it detects a GPU, and detection is
cheap: torch only when the program already imported it, else NVML (the optional
``nvidia-ml-py`` package, ``pip install roofline[nvml]``) or the Linux driver's
``/proc/driver/nvidia/gpus``; torch is imported only on a machine that shows a GPU device
none of those could name (e.g. ROCm).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import json
import math
import numbers
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

#: Peak classes, in the order of the ``*_flops_per_s`` fields.
PEAK_CLASSES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
#: Names of the hardware tables :func:`hardware` can search.
TABLES: tuple[str, ...] = ("roofline", "torchao")
#: Environment variable naming the default hardware (used before GPU detection).
ENV_VAR = "ROOFLINE_HARDWARE"

_DATA_DIR = Path(__file__).resolve().parent / "data"
_TABLE_FILES = {"roofline": "hardware.json", "torchao": "torchao_hardware.json"}

_FLOAT_FIELDS: tuple[str, ...] = (
    *(f"{p}_flops_per_s" for p in PEAK_CLASSES),
    "mem_bytes_per_s",
    "mem_capacity_bytes",
    "l2_bytes",
    "clock_hz",
    "tdp_w",
    "interconnect_bytes_per_s",
)
_FRACTION_FIELDS: tuple[str, ...] = ("achievable_flops_fraction", "achievable_mem_fraction")
_STR_FIELDS: tuple[str, ...] = ("name", "full_name", "vendor", "sources", "notes", "table")
_TUPLE_FIELDS: tuple[str, ...] = ("device_names", "aliases")


class UnknownNameError(KeyError, ValueError):
    """A name that matches none of the choices: hardware, dtype, recipe, backend, preset...

    Both a :class:`KeyError` (a failed lookup) and a :class:`ValueError` (a bad argument
    value), so ``except KeyError`` and ``except ValueError`` both catch it. ``str()`` is the
    plain message (a bare KeyError would quote it); :attr:`matches` holds the close matches
    the message suggests (possibly empty).

    >>> import roofline as rl
    >>> try:
    ...     rl.gemm(64, 64, 64, dtype="bf61", hardware="H100 SXM")
    ... except rl.UnknownNameError as exc:
    ...     exc.matches[0]
    'bf16'
    """

    def __init__(self, message: str = "", matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.matches: tuple[str, ...] = tuple(matches)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownHardwareError(UnknownNameError):
    """A hardware name that matches no entry, or is generic or ambiguous."""


class HardwareNotSpecifiedError(RuntimeError):
    """``hardware()`` was called without a name and nothing told it which device to use."""


#: Most SMs / compute units a Hardware may have (today's largest have a few hundred).
MAX_SMS = 2**20


def _check_number(field: str, value: object) -> float:
    """Return ``value`` as a float if it is a positive finite real number, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"Hardware: {field} must be a number, got {value!r} ({type(value).__name__})"
        )
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result) or result <= 0.0:
        raise ValueError(f"Hardware: {field} must be a positive finite number, got {value!r}")
    # Rates (FLOP/s, bytes/s) of at least 1/s and sizes up to 1e30 keep every estimate finite.
    low = 1.0 if field.endswith("_per_s") else 1e-30
    if not low <= result <= 1e30:
        raise ValueError(f"Hardware: {field} must be in [{low:g}, 1e30], got {value!r}")
    return result


@dataclass(frozen=True)
class Hardware:
    """One accelerator: dense peaks, memory system, and where the numbers come from.

    Parameters
    ----------
    name : str
        Short canonical name, e.g. ``"H100 SXM"``.
    full_name : str
        Descriptive name from the source table, e.g. ``"NVIDIA H100 SXM5 80GB"``.
    vendor : str
        ``"NVIDIA"``, ``"AMD"``, ``"Google"``, ``"Intel"``, ...
    fp64_flops_per_s, fp32_flops_per_s, tf32_flops_per_s, bf16_flops_per_s, \
fp8_flops_per_s, int8_flops_per_s, fp4_flops_per_s : float or None
        Dense (not 2:4 sparse) peak rates in FLOP/s (OP/s for int8). ``bf16`` is the
        FP32-accumulate tensor rate where the two accumulate rates differ. ``None``
        where unknown or unsupported. At least one must be set.
    mem_bytes_per_s : float
        Peak DRAM (HBM/GDDR) bandwidth in bytes/s. Required.
    mem_capacity_bytes, l2_bytes : float or None
        Memory capacity and last-level on-chip cache in bytes.
    sms : int or None
        NVIDIA SMs / AMD CUs.
    clock_hz, tdp_w : float or None
        Boost clock in Hz and board power in W.
    interconnect_bytes_per_s : float or None
        Scale-up bandwidth per device, bidirectional aggregate, in bytes/s.
    achievable_flops_fraction, achievable_mem_fraction : float or None
        Fraction of peak reachable in practice, in (0, 1]; set only for entries of
        torchao's table (its ``pct_achievable_*``).
    device_names, aliases : tuple of str
        Exact device strings (``torch.cuda.get_device_name()``) and user spellings.
    sources, notes : str
        Where the numbers come from; caveats.
    table : str
        ``"roofline"`` (this project's database) or ``"torchao"`` (torchao's table).

    Raises
    ------
    TypeError
        A field has the wrong type (a string or bool where a number belongs, ...).
    ValueError
        A number is not positive and finite, a fraction is outside (0, 1], or no
        peak is set.

    Notes
    -----
    Instances are immutable; make variants with :meth:`replace`. All values are SI
    base units; prefixes appear only in :meth:`__repr__`.
    """

    name: str
    full_name: str = ""
    vendor: str = ""
    fp64_flops_per_s: float | None = None
    fp32_flops_per_s: float | None = None
    tf32_flops_per_s: float | None = None
    bf16_flops_per_s: float | None = None
    fp8_flops_per_s: float | None = None
    int8_flops_per_s: float | None = None
    fp4_flops_per_s: float | None = None
    mem_bytes_per_s: float = dataclasses.field(kw_only=True)  # required, so keyword-only
    mem_capacity_bytes: float | None = None
    l2_bytes: float | None = None
    sms: int | None = None
    clock_hz: float | None = None
    tdp_w: float | None = None
    interconnect_bytes_per_s: float | None = None
    achievable_flops_fraction: float | None = None
    achievable_mem_fraction: float | None = None
    device_names: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    sources: str = ""
    notes: str = ""
    table: str = "roofline"

    def __post_init__(self) -> None:
        for field in _STR_FIELDS:
            value = getattr(self, field)
            if not isinstance(value, str):
                raise TypeError(
                    f"Hardware: {field} must be a str, got {value!r} ({type(value).__name__})"
                )
        if not self.name.strip():
            raise ValueError(f"Hardware: name must be a non-empty string, got {self.name!r}")
        if self.table not in TABLES:
            raise ValueError(f"Hardware: table must be one of {TABLES}, got {self.table!r}")

        for name in _FLOAT_FIELDS:
            value = getattr(self, name)
            if value is None and name != "mem_bytes_per_s":
                continue
            object.__setattr__(self, name, _check_number(name, value))

        for field in _FRACTION_FIELDS:
            value = getattr(self, field)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(
                    f"Hardware: {field} must be a number, got {value!r} ({type(value).__name__})"
                )
            fraction = float(value)
            if not (math.isfinite(fraction) and 0.0 < fraction <= 1.0):
                raise ValueError(f"Hardware: {field} must be in (0, 1], got {value!r}")
            object.__setattr__(self, field, fraction)

        if self.sms is not None:
            sms = self.sms
            if isinstance(sms, bool) or not isinstance(sms, numbers.Real):
                raise TypeError(
                    f"Hardware: sms must be a positive integer, got {sms!r} ({type(sms).__name__})"
                )
            ok = isinstance(sms, numbers.Integral) or (math.isfinite(sms) and
                                                      float(sms).is_integer())
            if not (ok and sms > 0):
                raise ValueError(f"Hardware: sms must be a positive integer, got {sms!r}")
            if sms > MAX_SMS:
                raise ValueError(f"Hardware: sms must be at most {MAX_SMS}, got {sms!r}")
            object.__setattr__(self, "sms", int(sms))

        for field in _TUPLE_FIELDS:
            value = getattr(self, field)
            if isinstance(value, str) or not isinstance(value, (tuple, list)):
                raise TypeError(
                    f"Hardware: {field} must be a tuple of str, got {value!r} "
                    f"({type(value).__name__})"
                )
            for item in value:
                if not isinstance(item, str):
                    raise TypeError(
                        f"Hardware: {field} must contain only str, got {item!r} "
                        f"({type(item).__name__})"
                    )
            object.__setattr__(self, field, tuple(value))

        if all(getattr(self, f"{p}_flops_per_s") is None for p in PEAK_CLASSES):
            raise ValueError(
                f"Hardware: {self.name!r} needs at least one peak "
                f"({', '.join(f'{p}_flops_per_s' for p in PEAK_CLASSES)})"
            )

    # ------------------------------------------------------------------ queries

    def peak_flops_per_s(self, peak_class: str) -> float:
        """Dense peak rate of one precision class.

        Parameters
        ----------
        peak_class : str
            One of ``fp64 fp32 tf32 bf16 fp8 int8 fp4``.

        Returns
        -------
        float
            FLOP/s (OP/s for int8).

        Raises
        ------
        KeyError
            ``peak_class`` is not a known class.
        ValueError
            This hardware has no value for that class.
        """
        if not isinstance(peak_class, str) or peak_class not in PEAK_CLASSES:
            raise UnknownNameError(
                f"peak_flops_per_s: unknown peak class {peak_class!r}; "
                f"valid classes: {', '.join(PEAK_CLASSES)}"
            )
        value: float | None = getattr(self, f"{peak_class}_flops_per_s")
        if value is None:
            raise ValueError(
                f"{self.name} has no {peak_class} peak in the database; pass a Hardware with "
                f"{peak_class}_flops_per_s set "
                f"(hw.replace({peak_class}_flops_per_s=...))"
            )
        return value

    def ridge_point(self, peak_class: str) -> float:
        """Arithmetic intensity (FLOP per byte) where compute and memory time are equal.

        Parameters
        ----------
        peak_class : str
            Precision class, as for :meth:`peak_flops_per_s`.

        Returns
        -------
        float
            ``peak_flops_per_s(peak_class) / mem_bytes_per_s``.

        Notes
        -----
        Uses datasheet peaks; a kernel with intensity above this is compute-bound in
        the plain roofline model.
        """
        return self.peak_flops_per_s(peak_class) / self.mem_bytes_per_s

    # ---------------------------------------------------------------- variants

    def replace(self, **overrides: Any) -> Hardware:
        """Return a copy with some fields changed, validated again.

        Parameters
        ----------
        **overrides
            Field names and new values, e.g. ``mem_bytes_per_s=2.4e12``.

        Raises
        ------
        TypeError
            An unknown field name (the message lists the valid ones).
        """
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(k for k in overrides if k not in names)
        if unknown:
            raise TypeError(
                f"Hardware.replace: unknown field(s) {', '.join(map(repr, unknown))}; "
                f"valid fields: {', '.join(sorted(names))}"
            )
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        """All fields as a JSON-serialisable dict (tuples become lists).

        ``Hardware.from_dict(hw.to_dict()) == hw``.
        """
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hardware:
        """Build a Hardware from a mapping of field names (the :meth:`to_dict` form).

        Parameters
        ----------
        data : Mapping
            Must contain ``name``, ``mem_bytes_per_s`` and at least one peak; any
            other field is optional.

        Raises
        ------
        TypeError
            ``data`` is not a mapping, or a value has the wrong type.
        ValueError
            An unknown key (named in the message), a missing required key, or an
            invalid value.
        """
        if not isinstance(data, Mapping):
            raise TypeError(
                f"Hardware.from_dict: expected a dict, got {type(data).__name__}: {data!r}"
            )
        if cls is Hardware and "fitted" in data:  # a calibrated profile (roofline.calibration)
            from .calibration.profile import Profile

            return Profile.from_dict(data)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise ValueError(
                f"Hardware.from_dict: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"valid keys: {', '.join(sorted(names))}"
            )
        missing = [k for k in ("name", "mem_bytes_per_s") if k not in data]
        if missing:
            raise ValueError(f"Hardware.from_dict: missing required key(s) {missing}")
        kwargs = dict(data)
        for field in _TUPLE_FIELDS:
            if isinstance(kwargs.get(field), list):
                kwargs[field] = tuple(kwargs[field])
        return cls(**kwargs)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Hardware:
        """Load a Hardware from a JSON file holding one :meth:`to_dict`-form object.

        Raises
        ------
        ValueError
            The file is not valid JSON (the message names the file and the error
            position) or its content is not a valid Hardware.
            Also when the file cannot be read (missing, a directory) or is not UTF-8.
        """
        where = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"Hardware.from_file: {where} is not UTF-8 text: {exc}") from None
        except OSError as exc:
            raise ValueError(f"Hardware.from_file: cannot read {where}: {exc.strerror}") from exc
        try:
            data = json.loads(text)
        except (RecursionError, ValueError) as exc:
            if not isinstance(exc, json.JSONDecodeError):
                raise ValueError(
                    f"Hardware.from_file: {where} is not usable JSON (nested too deeply or a "
                    f"number too long): {str(exc)[:80]}"
                ) from None

            raise ValueError(
                f"Hardware.from_file: {os.fspath(path)} is not valid JSON: {exc.msg} "
                f"at line {exc.lineno} column {exc.colno} (char {exc.pos})"
            ) from exc
        if not isinstance(data, dict):
            raise ValueError(
                f"Hardware.from_file: {os.fspath(path)} must hold a JSON object, "
                f"got {type(data).__name__}"
            )
        return cls.from_dict(data)

    def __repr__(self) -> str:
        parts = [repr(self.name)]
        shown = [p for p in ("bf16", "fp8") if getattr(self, f"{p}_flops_per_s") is not None]
        if not shown:
            shown = [p for p in PEAK_CLASSES if getattr(self, f"{p}_flops_per_s") is not None][:1]
        for p in shown:
            parts.append(f"{p}={getattr(self, f'{p}_flops_per_s') / 1e12:g} TFLOP/s")
        parts.append(f"mem={self.mem_bytes_per_s / 1e12:g} TB/s")
        if self.table != "roofline":
            parts.append(f"table={self.table!r}")
        return f"Hardware({', '.join(parts)})"


# ---------------------------------------------------------------------- database


#: What every ``hardware=`` argument takes: a :class:`Hardware`, a name ``hardware()``
#: resolves, or ``None`` for the detected / default device.
HardwareLike = str | Hardware | None


def _normalize(name: str) -> str:
    """Case-fold and turn runs of whitespace, ``-`` and ``_`` into single spaces."""
    return " ".join(re.sub(r"[-_\s]+", " ", name).split()).casefold()


_GPU_INDEX_PREFIX = re.compile(r"^\s*GPU\s*\d+\s*:\s*", re.IGNORECASE)
_GFX_SUFFIX = re.compile(r"\s*\(\s*gfx[0-9a-z]*[^)]*\)\s*$", re.IGNORECASE)
_VENDOR_PREFIXES = ("nvidia ", "tesla ", "amd instinct ", "amd ", "google ", "intel ", "habana ")
_GENERIC_NAMES = frozenset({"", "amd radeon graphics", "amd instinct", "nvidia graphics device"})
_AMBIGUOUS_H100 = frozenset({"h100", "nvidia h100"})
#: ROCm gcnArchName (before the first ':') -> canonical name, where unambiguous.
_GCN_ARCH = {"gfx90a": "MI250X"}
_GCN_ARCH_AMBIGUOUS = {
    "gfx942": "MI300X, MI325X or MI300A",
    "gfx950": "MI350X or MI355X",
}


def _clean(name: str) -> str:
    """Drop a leading ``GPU 0: `` and a trailing ROCm `` (gfx...)`` from a device name."""
    return _GFX_SUFFIX.sub("", _GPU_INDEX_PREFIX.sub("", name)).strip()


@dataclass(frozen=True)
class _Table:
    entries: tuple[Hardware, ...]
    index: dict[str, Hardware]  # normalised name -> entry (roofline table only)


_ENTRY_KEYS = frozenset(
    {
        "name",
        "full_name",
        "vendor",
        "device_names",
        "aliases",
        "peak_flops_per_s",
        "mem_bytes_per_s",
        "mem_capacity_bytes",
        "l2_bytes",
        "sms",
        "clock_hz",
        "tdp_w",
        "interconnect_bytes_per_s",
        "interconnect_note",
        "notes",
        "sources",
        "derived",
    }
)


def _roofline_entry(entry: dict[str, Any], where: str) -> Hardware:
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    missing = sorted(_ENTRY_KEYS - set(entry))
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    peaks = entry["peak_flops_per_s"]
    bad = sorted(set(peaks) - set(PEAK_CLASSES))
    if bad:
        raise ValueError(f"{where}: unknown peak classes {bad}")
    notes = " ".join(s for s in (entry["interconnect_note"], entry["notes"]) if s)
    return Hardware(
        name=entry["name"],
        full_name=entry["full_name"],
        vendor=entry["vendor"],
        **{f"{p}_flops_per_s": peaks.get(p) for p in PEAK_CLASSES},
        mem_bytes_per_s=entry["mem_bytes_per_s"],
        mem_capacity_bytes=entry["mem_capacity_bytes"],
        l2_bytes=entry["l2_bytes"],
        sms=entry["sms"],
        clock_hz=entry["clock_hz"],
        tdp_w=entry["tdp_w"],
        interconnect_bytes_per_s=entry["interconnect_bytes_per_s"],
        device_names=tuple(entry["device_names"]),
        aliases=tuple(entry["aliases"]),
        sources=entry["sources"],
        notes=notes,
        table="roofline",
    )


def _torchao_entry(entry: dict[str, Any], doc: dict[str, Any]) -> Hardware:
    origin = f"torchao {doc['torchao_version']} {doc['source_file']}"
    key = entry["key"]
    notes = " ".join(["Known torchao bugs:", *entry["known_bugs"]]) if entry["known_bugs"] else ""
    return Hardware(
        name=key,
        full_name=key,
        vendor=entry["vendor"],
        bf16_flops_per_s=entry["bf16_peak_tops"],
        fp8_flops_per_s=entry["fp8_peak_tops"],
        fp4_flops_per_s=entry.get("fp4_peak_tops"),
        mem_bytes_per_s=entry["peak_mem_bw_bytes_sec"],
        achievable_flops_fraction=entry.get("pct_achievable_gemm_tops"),
        achievable_mem_fraction=entry.get("pct_achievable_mem_bw"),
        device_names=(key,),
        sources=f"{origin} gpu_name_to_specs[{key!r}]: {entry['torchao_comments']}",
        notes=notes,
        table="torchao",
    )


def _index(entries: tuple[Hardware, ...], where: str, *, roofline: bool) -> dict[str, Hardware]:
    """Map every normalised name, alias, full name and device name to its entry."""
    index: dict[str, Hardware] = {}
    for hw in entries:
        for raw in (hw.name, hw.full_name, *hw.aliases, *hw.device_names):
            key = _normalize(raw)
            if not key:
                raise ValueError(f"{where}: {hw.name!r} has an empty name or alias")
            other = index.get(key)
            if other is not None and other.name != hw.name:
                raise ValueError(
                    f"{where}: {raw!r} names both {other.name!r} and {hw.name!r} "
                    "(duplicate name, alias or device name)"
                )
            index[key] = hw
    for key in _AMBIGUOUS_H100 | _GENERIC_NAMES if roofline else ():
        if key in index:
            raise ValueError(f"{where}: {key!r} must not name an entry (it is ambiguous)")
    return index


@functools.cache
def _load(table: str) -> _Table:
    path = _DATA_DIR / _TABLE_FILES[table]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if table == "roofline":
        entries = tuple(
            _roofline_entry(e, f"{path.name} entry {i}") for i, e in enumerate(doc["entries"])
        )
    else:
        entries = tuple(_torchao_entry(e, doc) for e in doc["entries"])
    index = _index(entries, path.name, roofline=table == "roofline")
    return _Table(entries=entries, index=index)


def _check_table(table: object, func: str) -> str:
    if not isinstance(table, str) or table not in TABLES:
        raise ValueError(f"{func}: table must be one of {', '.join(TABLES)}; got {table!r}")
    return table


def list_hardware(table: str = "roofline") -> list[str]:
    """Canonical names of every entry, in database order.

    Parameters
    ----------
    table : {"roofline", "torchao"}
        Which table; ``"torchao"`` lists torchao's ``gpu_name_to_specs`` keys.
    """
    _check_table(table, "list_hardware")
    return [hw.name for hw in _load(table).entries]


# ---------------------------------------------------------------------- lookup


def _generic_name_error(name: str) -> UnknownHardwareError:
    shown = f"the generic name {name!r}" if name.strip() else "an empty name"
    return UnknownHardwareError(
        f"hardware: the device reported {shown}, which does not identify the model "
        "(some ROCm stacks report 'AMD Radeon Graphics' or '' even on an MI300X). Pass the "
        f"model name, e.g. hardware('MI300X'), or set {ENV_VAR}=MI300X; "
        "see list_hardware() for the choices."
    )


def _ambiguous_h100_error(name: str) -> UnknownHardwareError:
    return UnknownHardwareError(
        f"hardware: {name!r} is ambiguous. A bare 'H100' could be 'H100 SXM' (3.35 TB/s), "
        "'H100 PCIe' (2.0 TB/s) or 'H100 NVL' (3.9 TB/s); and the exact device name "
        "'NVIDIA H100' belongs to a different SKU (PCI id 2339) whose specs are not "
        "published (torchao uses 2.4 TB/s for it). Pass 'H100 SXM', 'H100 PCIe' or "
        "'H100 NVL', or hardware('NVIDIA H100', table='torchao') for torchao's numbers."
    )


def _unknown_error(name: str, candidates: dict[str, Hardware], table: str) -> UnknownHardwareError:
    import difflib

    query = _normalize(name)
    matches = difflib.get_close_matches(query, list(candidates), n=20, cutoff=0.5)
    suggestions: list[str] = []
    for key in matches:
        if candidates[key].name not in suggestions:
            suggestions.append(candidates[key].name)
    hint = f"; close matches: {', '.join(suggestions[:5])}" if suggestions else ""
    table_arg = "" if table == "roofline" else f"table={table!r}"
    return UnknownHardwareError(
        f"hardware: unknown hardware {name!r}{' in ' + table_arg if table_arg else ''}{hint}. "
        f"See list_hardware({table_arg}) for the names, or describe your device with "
        "Hardware(...) / Hardware.from_dict({...}).",
        suggestions[:5],
    )


def _lookup_roofline(name: str) -> Hardware:
    table = _load("roofline")
    cleaned = _clean(name)
    key = _normalize(cleaned)
    if key in _GENERIC_NAMES:
        raise _generic_name_error(cleaned)
    if key in _AMBIGUOUS_H100:
        raise _ambiguous_h100_error(name)
    hw = table.index.get(key)
    if hw is not None:
        return hw
    for prefix in _VENDOR_PREFIXES:
        if key.startswith(prefix):
            stripped = key[len(prefix) :]
            if stripped in _AMBIGUOUS_H100:
                raise _ambiguous_h100_error(name)
            hw = table.index.get(stripped)
            if hw is not None:
                return hw
    raise _unknown_error(name, table.index, "roofline")


def _lookup_torchao(name: str) -> Hardware:
    """Match exactly as torchao's ``get_roofline_gpu_name``: exact key, else first prefix."""
    entries = _load("torchao").entries
    for hw in entries:
        if name == hw.name:
            return hw
    for hw in entries:
        if name.startswith(hw.name):
            return hw
    raise _unknown_error(name, {_normalize(hw.name): hw for hw in entries}, "torchao")


def _lookup(name: str, table: str) -> Hardware:
    return _lookup_roofline(name) if table == "roofline" else _lookup_torchao(name)


# ---------------------------------------------------------------------- defaults

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


def _torch_module() -> Any | None:
    """The torch module if installed (imported only now), else None."""
    if "torch" in sys.modules:
        return sys.modules["torch"]  # may be None: import blocked
    if importlib.util.find_spec("torch") is None:
        return None
    return importlib.import_module("torch")


#: Linux directory with one folder per NVIDIA GPU, each with an ``information`` file.
_PROC_NVIDIA = Path("/proc/driver/nvidia/gpus")
#: Device nodes that show a GPU is present (NVIDIA, AMD ROCm).
_GPU_NODES = (Path("/dev/nvidia0"), Path("/dev/kfd"))


def _cuda_hidden() -> bool:
    """True when ``CUDA_VISIBLE_DEVICES`` hides every GPU (empty or ``-1``)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and value.strip().split(",")[0].strip() in ("", "-1")


def _one_name(names: list[str]) -> str | None:
    """The device name when every GPU reports the same one (which is device 0 then)."""
    return names[0] if names and all(n == names[0] for n in names) else None


def _nvml_names() -> list[str] | None:
    """Names of the GPUs NVML sees (``nvidia-ml-py``), or None when NVML is unavailable."""
    if importlib.util.find_spec("pynvml") is None:
        return None
    try:
        pynvml = importlib.import_module("pynvml")
        pynvml.nvmlInit()
        try:
            count = int(pynvml.nvmlDeviceGetCount())
            names = []
            for i in range(count):
                raw = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                names.append(raw.decode() if isinstance(raw, bytes) else str(raw))
            return names
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, old driver, ...: NVML cannot tell
        return None


def _proc_names() -> list[str] | None:
    """Names of the NVIDIA GPUs the Linux driver lists under /proc, or None without it."""
    try:
        folders = sorted(_PROC_NVIDIA.iterdir())
    except OSError:
        return None
    names = []
    for folder in folders:
        try:
            text = (folder / "information").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        model = re.search(r"^Model:\s*(.+?)\s*$", text, re.MULTILINE)
        if model is None:
            return None
        names.append(model.group(1))
    return names


def _no_arch() -> str:
    return ""


def _detected_device() -> tuple[str, Any] | None:
    """Device 0's name and a callable giving its ROCm gcnArchName, or None (no GPU seen).

    Cheapest source first: torch when the program already imported it (it sees what the
    program runs on: CUDA_VISIBLE_DEVICES, ROCm); else NVML, else the NVIDIA driver's /proc
    listing, when every GPU they list has the same name (so it is device 0's); else torch,
    imported only when a GPU device node exists (ROCm, or GPUs of different models) or on a
    platform other than Linux, where no cheap check exists.
    """
    torch: Any
    if "torch" in sys.modules:
        torch = sys.modules["torch"]  # None: the import is blocked
    elif _cuda_hidden():
        return None
    else:
        for lister in (_nvml_names, _proc_names):
            names = lister()
            if names is None:
                continue  # this source cannot tell
            if not names:
                return None  # the driver answers: no GPU
            name = _one_name(names)
            if name is not None:
                return name, _no_arch
            break  # GPUs of different models: torch says which one is device 0
        else:
            if sys.platform.startswith("linux") and not any(n.exists() for n in _GPU_NODES):
                return None
        torch = _torch_module()
    if torch is None:
        return None
    try:
        available = bool(torch.cuda.is_available())
    except Exception:  # a broken driver install must not break the model
        return None
    if not available:
        return None

    def arch() -> str:
        return str(getattr(torch.cuda.get_device_properties(0), "gcnArchName", "") or "")

    return str(torch.cuda.get_device_name(0)), arch


def _detect(table: str) -> tuple[Hardware | None, UnknownHardwareError | None]:
    """Hardware of CUDA/ROCm device 0, or the error explaining why it is not known."""
    device = _detected_device()
    if device is None:
        return None, None
    device_name, gcn_arch = device
    try:
        return _lookup(device_name, table), None
    except UnknownHardwareError as exc:
        error = exc
    if table == "roofline" and _normalize(_clean(device_name)) in _GENERIC_NAMES:
        arch = gcn_arch()
        base = arch.split(":")[0].strip().lower()
        if base in _GCN_ARCH:
            return _lookup_roofline(_GCN_ARCH[base]), None
        if base in _GCN_ARCH_AMBIGUOUS:
            error = UnknownHardwareError(
                f"hardware: the GPU reports the generic name {device_name!r} and gcnArchName "
                f"{arch!r}, which could be {_GCN_ARCH_AMBIGUOUS[base]}. Pass the model name, "
                f"e.g. hardware('MI300X'), or set {ENV_VAR}=MI300X (or call "
                "set_default_hardware('MI300X'))."
            )
    return None, error


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
    ``roofline.calibration.cache``); else an error saying what to pass. An explicit default
    therefore wins over the detected GPU, and a call with a default set never imports torch.
    Detection uses torch only when the program already imported it; otherwise NVML (``pip
    install roofline[nvml]``) or the NVIDIA driver's ``/proc`` listing name the GPU without
    importing anything heavy, and torch is imported only on a machine that shows a GPU device
    none of them could name (ROCm, or GPUs of different models). ``CUDA_VISIBLE_DEVICES=""``
    hides the GPUs from detection, as from CUDA.
    """
    if profile is not None:
        from .calibration.resolve import explicit_profile

        return explicit_profile(profile, name, table)
    if isinstance(name, Hardware):
        return name
    _check_table(table, "hardware")
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(
                "hardware: name must be a str, a Hardware or None, "
                f"got {name!r} ({type(name).__name__})"
            )
        return _lookup(name, table)

    # (1) an explicit name was handled above; (2) the default of set_default_hardware()
    if _default is not None:
        return _default
    # (3) the environment: a profile file, then a name
    if table == "roofline" and os.environ.get("ROOFLINE_PROFILE", "").strip():
        from .calibration.resolve import env_profile

        return env_profile()
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        try:
            return _lookup(env, table)
        except UnknownHardwareError as exc:
            raise UnknownHardwareError(f"{ENV_VAR}={env!r}: {exc}") from exc
    # (4) detection (cheap: see _detected_device), then (5) the profile saved for that device
    detected, detect_error = _detect(table)
    if detected is not None:
        if table == "roofline":
            from .calibration.resolve import saved_profile

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
