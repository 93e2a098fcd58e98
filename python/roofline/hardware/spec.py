"""The accelerator spec: the :class:`Hardware` record, its peak classes and number checks.

All values are SI: FLOP/s, bytes/s, bytes, Hz, W. Peaks are dense (no 2:4 sparsity). The
database of named entries is :mod:`.database`; a calibrated :class:`~.profile.Profile` is a
Hardware that registers itself here (:func:`register_fitted`) so that
:meth:`Hardware.from_dict` reads profile JSON without this module importing it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UnknownNameError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ENV_VAR",
    "PEAK_CLASSES",
    "TABLES",
    "Hardware",
    "HardwareLike",
    "HardwareNotSpecifiedError",
    "UnknownHardwareError",
    "cc_text",
    "register_fitted",
]

#: Peak classes, in the order of the ``*_flops_per_s`` fields.
PEAK_CLASSES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
#: Names of the hardware tables :func:`hardware` can search.
TABLES: tuple[str, ...] = ("roofline", "torchao")
#: Environment variable naming the default hardware (used before GPU detection).
ENV_VAR = "ROOFLINE_HARDWARE"

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


#: Vendors whose parts have a CUDA compute capability ("" = not stated).
_CC_VENDORS = ("NVIDIA", "")


def _check_cc(value: object, vendor: str) -> tuple[int, int]:
    """``value`` as a ``(major, minor)`` tuple of ints (major >= 1, minor >= 0), else raise."""
    form = ("compute_capability must be (major, minor), two non-negative ints as "
            "torch.cuda.get_device_capability() returns, e.g. (9, 0)")
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"Hardware: {form}; got {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in value):
        raise TypeError(f"Hardware: {form}; got {value!r}")
    major, minor = int(value[0]), int(value[1])
    if major < 1 or minor < 0 or major > 99 or minor > 99:
        raise ValueError(f"Hardware: {form} (major 1-99, minor 0-99); got {value!r}")
    if vendor not in _CC_VENDORS:
        raise ValueError(f"Hardware: compute_capability is NVIDIA's (CUDA); vendor {vendor!r} "
                         f"parts have none, got {value!r}")
    return major, minor


def cc_text(cc: tuple[int, int] | None) -> str:
    """``"9.0"`` for ``(9, 0)``, ``""`` for None (as ``nvidia-smi`` prints ``compute_cap``)."""
    return "" if cc is None else f"{cc[0]}.{cc[1]}"


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
    compute_capability : tuple of (int, int) or None
        NVIDIA's CUDA compute capability ``(major, minor)``, as
        ``torch.cuda.get_device_capability()`` returns it: ``(9, 0)`` H100 / H200, ``(8, 9)``
        Ada (L4, L40S, RTX 4090), ``(10, 0)`` B200 / GB200, ``(10, 3)`` B300 / GB300,
        ``(12, 0)`` RTX 5090 / RTX PRO 6000 Blackwell. It decides which kernels a part runs
        (TN-only fp8 GEMMs, Transformer Engine's MXFP8, the SDPA backends). ``None`` for other
        vendors (set with vendor ``"AMD"``, ``"Google"``, ... raises) and where unknown; then
        those rules fall back to the part's name and peaks.

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
    compute_capability: tuple[int, int] | None = None

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

        if self.compute_capability is not None:
            object.__setattr__(self, "compute_capability",
                               _check_cc(self.compute_capability, self.vendor))

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

    def to_pandas(self) -> pd.DataFrame:
        """A one-row pandas DataFrame of every field (SI units; tuples joined with ``"; "``).

        ``pd.concat([rl.hardware(n).to_pandas() for n in rl.list_hardware()])`` is the whole
        database as a table. (The ``table`` field names the source table, not this frame.)
        """
        import pandas as pd

        row = {k: "; ".join(v) if isinstance(v, list) else v for k, v in self.to_dict().items()
               if k != "compute_capability"}
        row["compute_capability"] = cc_text(self.compute_capability)
        return pd.DataFrame([row])

    def _repr_html_(self) -> str:
        from .._html import result_html

        peaks = [(f"{p} dense", f"{v / 1e12:g} TFLOP/s") for p in PEAK_CLASSES
                 if (v := getattr(self, f"{p}_flops_per_s")) is not None]
        rows: list[tuple[str, Any]] = [*peaks, ("memory bandwidth",
                                                f"{self.mem_bytes_per_s / 1e12:g} TB/s")]
        for label, key, unit, scale in (("memory", "mem_capacity_bytes", "GB", 1e9),
                                        ("L2", "l2_bytes", "MB", 1e6),
                                        ("interconnect", "interconnect_bytes_per_s", "GB/s", 1e9),
                                        ("SMs / CUs", "sms", "", 1.0)):
            value = getattr(self, key)
            if value is not None:
                rows.append((label, f"{value / scale:g} {unit}".strip()))
        title = f"{self.name}" + (f" ({self.full_name})" if self.full_name else "")
        return result_html(title + ("" if self.table == "roofline" else f", {self.table} table"),
                           rows)

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
        if cls is Hardware and "fitted" in data and _fitted_class:  # a calibrated profile
            return _fitted_class[0].from_dict(data)
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
        for field in (*_TUPLE_FIELDS, "compute_capability"):
            if isinstance(kwargs.get(field), list):
                kwargs[field] = tuple(kwargs[field])
        return cls(**kwargs)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Hardware:
        """Load a Hardware from a JSON file holding one :meth:`to_dict`-form object.

        Raises
        ------
        FileNotFoundError
            No file at ``path`` (the message names it).
        ValueError
            The file is not valid JSON (the message names the file and the error
            position) or its content is not a valid Hardware.
            Also when the file cannot be read (a directory, no permission) or is not UTF-8.
        """
        if not isinstance(path, (str, os.PathLike)):
            from .._errors import ArgumentTypeError

            raise ArgumentTypeError("Hardware.from_file", "path", "must be a file name (str or "
                                    f"os.PathLike), got {path!r}")
        where = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"Hardware.from_file: {where} is not UTF-8 text: {exc}") from None
        except FileNotFoundError:
            raise FileNotFoundError(f"Hardware.from_file: no such file: {where!r}") from None
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


#: The Hardware subclass that :meth:`Hardware.from_dict` builds for a dict with a
#: ``fitted`` key (a calibrated profile); set by :func:`register_fitted`.
_fitted_class: list[type[Hardware]] = []


def register_fitted(cls: type[Hardware]) -> type[Hardware]:
    """Make :meth:`Hardware.from_dict` build ``cls`` for dicts with a ``fitted`` key."""
    _fitted_class[:] = [cls]
    return cls


#: What every ``hardware=`` argument takes: a :class:`Hardware`, a name ``hardware()``
#: resolves, or ``None`` for the detected / default device.
HardwareLike = str | Hardware | None
