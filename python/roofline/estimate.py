"""The result of every op: time, its parts, FLOPs and bytes; estimates add up."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ._format import si

Number = float | np.ndarray

_NUMERIC = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")


def _maybe_scalar(a: Any) -> Number:
    arr = np.asarray(a, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True, eq=False)
class Estimate:
    """Predicted time of one op (or a sum of ops), with the roofline terms behind it.

    Attributes
    ----------
    time_s : float or ndarray
        Predicted time in seconds.
    compute_s, memory_s : float or ndarray
        FLOPs over achievable FLOP/s; bytes over achievable bytes/s.
    overhead_s : float or ndarray
        Time above ``max(compute_s, memory_s)``: the per-kernel launch floor.
    flops, bytes : float or ndarray
        Work and DRAM traffic (bytes read + written).
    label, hardware : str
        What was estimated and on which accelerator.

    Notes
    -----
    ``e1 + e2`` adds every field (kernels run one after another) and ``n * e`` scales them,
    so a model total is a sum of its ops. ``bound`` names the largest of the three time terms.
    """

    time_s: Number
    compute_s: Number
    memory_s: Number
    overhead_s: Number
    flops: Number
    bytes: Number
    label: str = ""
    hardware: str = ""
    meta: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def intensity(self) -> Number:
        """Arithmetic intensity, FLOPs per byte of DRAM traffic (inf when no bytes move)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(
                np.asarray(self.bytes) > 0,
                np.asarray(self.flops) / np.maximum(np.asarray(self.bytes), 1e-300),
                np.inf,
            )
        return _maybe_scalar(out)

    @property
    def bound(self) -> str | np.ndarray:
        """"compute", "memory" or "overhead": whichever term is largest."""
        terms = np.stack(
            np.broadcast_arrays(
                np.asarray(self.compute_s), np.asarray(self.memory_s), np.asarray(self.overhead_s)
            )
        )
        names = np.array(["compute", "memory", "overhead"])
        picked = names[np.argmax(terms, axis=0)]
        return str(picked) if picked.ndim == 0 else picked

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the fields (``()`` for a scalar estimate)."""
        return tuple(np.shape(self.time_s))

    def __add__(self, other: Any) -> Estimate:
        if _is_real(other) and other == 0:  # sum() starts from 0
            return self
        if not isinstance(other, Estimate):
            return NotImplemented
        try:
            np.broadcast_shapes(self.shape, other.shape)
        except ValueError:
            raise ValueError(
                f"Estimate: cannot add estimates of shapes {self.shape} and {other.shape}"
            ) from None
        vals: dict[str, Any] = {
            k: _maybe_scalar(np.add(getattr(self, k), getattr(other, k))) for k in _NUMERIC
        }
        same = self.hardware == other.hardware
        hw = self.hardware if same else f"{self.hardware}+{other.hardware}"
        return Estimate(**vals, label=_join(self.label, other.label), hardware=hw)

    __radd__ = __add__

    def __mul__(self, factor: Any) -> Estimate:
        if isinstance(factor, (Estimate, bool, np.bool_, str, bytes)):
            return NotImplemented
        try:
            raw = np.asarray(factor)
        except Exception:
            return NotImplemented
        if raw.dtype.kind not in "iuf":
            return NotImplemented
        f = raw.astype(np.float64)
        try:
            np.broadcast_shapes(self.shape, f.shape)
        except ValueError:
            raise ValueError(
                f"Estimate: cannot scale an estimate of shape {self.shape} by an array of "
                f"shape {f.shape}"
            ) from None
        if not np.all(np.isfinite(f)) or np.any(f < 0):
            raise ValueError(f"Estimate: a multiplier must be finite and >= 0, got {factor!r}")
        vals: dict[str, Any] = {
            k: _maybe_scalar(np.multiply(getattr(self, k), f)) for k in _NUMERIC
        }
        label = f"{_fmt_factor(factor)} x ({self.label})" if self.label else ""
        return Estimate(**vals, label=label, hardware=self.hardware)

    __rmul__ = __mul__

    def to_dict(self) -> dict[str, Any]:
        """Fields plus ``bound`` and ``intensity`` as a plain dict."""
        d: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "meta"
        }
        d["bound"] = self.bound
        d["intensity"] = self.intensity
        return d

    def to_pandas(self) -> Any:
        """A pandas DataFrame with one row per element (one row for a scalar estimate)."""
        import pandas as pd

        cols = {k: np.ravel(np.broadcast_to(getattr(self, k), self.shape)) for k in _NUMERIC}
        cols["bound"] = np.ravel(np.broadcast_to(self.bound, self.shape))
        cols["intensity"] = np.ravel(np.broadcast_to(self.intensity, self.shape))
        for key, value in self.meta.items():
            if np.shape(value) == self.shape:
                cols[key] = np.ravel(value)
        return pd.DataFrame(cols)

    def __repr__(self) -> str:
        where = f" on {self.hardware}" if self.hardware else ""
        what = self.label or "estimate"
        if self.shape == ():
            return (
                f"Estimate({what}{where}: {si(float(self.time_s), 's')}, {self.bound}-bound, "
                f"{si(float(self.flops), 'FLOP')}, {si(float(self.bytes), 'B')}, "
                f"{float(self.intensity):.4g} FLOP/B)"
            )
        t = np.asarray(self.time_s)
        return (
            f"Estimate({what}{where}: shape {self.shape}, time {si(float(t.min()), 's')} .. "
            f"{si(float(t.max()), 's')})"
        )


def _is_real(x: Any) -> bool:
    return isinstance(x, (numbers.Real, np.integer, np.floating)) and not isinstance(
        x, (bool, np.bool_)
    )


def _join(a: str, b: str) -> str:
    if a and b:
        return f"{a} + {b}"
    return a or b


def _fmt_factor(f: Any) -> str:
    arr = np.asarray(f)
    return f"{float(arr):g}" if arr.ndim == 0 else "array"


def from_scalars(values: tuple[float, ...], label: str, hardware: str,
                 meta: dict[str, Any]) -> Estimate:
    """An Estimate of Python floats (the core's six values), built without ``__init__``'s
    per-field frozen-dataclass writes: the same object ``Estimate(*values, label=...,
    hardware=..., meta=...)`` gives, for the scalar fast paths."""
    e = _new(Estimate)
    t, c, m, o, f, b = values
    e.__dict__.update(time_s=t, compute_s=c, memory_s=m, overhead_s=o, flops=f, bytes=b,
                      label=label, hardware=hardware, meta=meta)
    return e


_new = object.__new__


def from_columns(cols: tuple[np.ndarray, ...], shape: tuple[int, ...], **kw: Any) -> Estimate:
    """Build an Estimate from the core's six columns, reshaped to ``shape``."""
    vals: dict[str, Any] = {
        k: _maybe_scalar(np.asarray(c).reshape(shape)) for k, c in zip(_NUMERIC, cols, strict=True)
    }
    return Estimate(**vals, **kw)
