"""The result of every op: time, its parts, FLOPs and bytes; estimates add up."""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from ._format import si

if TYPE_CHECKING:
    import pandas as pd

#: An array of float64 values: what array inputs give in every field.
Array = npt.NDArray[np.float64]

Number = float | np.ndarray

#: ``float`` for an estimate of scalar inputs, :data:`Array` for array inputs.
T = TypeVar("T", float, Array)

#: Labels of sums are cut to this many characters (the repr of a long sum stays short).
_MAX_LABEL = 120


class HardwareMismatchWarning(UserWarning):
    """Estimates of different accelerators were added together."""

_NUMERIC = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")


def _maybe_scalar(a: Any) -> Number:
    arr = np.asarray(a, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


class _Bound:
    """``Estimate.bound``: a descriptor (not a property) so its type follows the estimate's,
    ``str`` on ``Estimate[float]`` and an array of ``str`` on ``Estimate[Array]``."""

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Bound: ...
    @overload
    def __get__(self, obj: Estimate[float], owner: type[Any]) -> str: ...
    @overload
    def __get__(self, obj: Estimate[Array], owner: type[Any]) -> npt.NDArray[np.str_]: ...

    def __get__(self, obj: Estimate[Any] | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        terms = np.stack(np.broadcast_arrays(
            np.asarray(obj.compute_s), np.asarray(obj.memory_s), np.asarray(obj.overhead_s)))
        picked = _BOUND_NAMES[np.argmax(terms, axis=0)]
        return str(picked) if picked.ndim == 0 else picked


_BOUND_NAMES = np.array(["compute", "memory", "overhead"])


@dataclass(frozen=True, eq=False)
class Estimate(Generic[T]):
    """Predicted time of one op (or a sum of ops), with the roofline terms behind it.

    ``Estimate[float]`` for scalar inputs (every field a ``float``), ``Estimate[Array]`` for
    array inputs (every field a float64 ndarray of the broadcast shape); type checkers see
    which from the op functions' overloads.

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
    Adding estimates of different accelerators warns (:class:`HardwareMismatchWarning`) and
    labels the sum's hardware ``"A+B"``: a step that runs on two devices is rarely what was
    meant. The label of a long sum is cut (``a + b + ... (10000 ops)``), so its repr stays
    short.
    """

    time_s: T
    compute_s: T
    memory_s: T
    overhead_s: T
    flops: T
    bytes: T
    label: str = ""
    hardware: str = ""
    meta: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def intensity(self) -> T:
        """Arithmetic intensity, FLOPs per byte of DRAM traffic (inf when no bytes move)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(
                np.asarray(self.bytes) > 0,
                np.asarray(self.flops) / np.maximum(np.asarray(self.bytes), 1e-300),
                np.inf,
            )
        return _maybe_scalar(out)  # type: ignore[return-value]

    #: "compute", "memory" or "overhead": whichever term is largest (``str`` for a scalar
    #: estimate, an array of ``str`` for an array estimate; type checkers see which).
    bound = _Bound()

    @property
    def shape(self) -> tuple[int, ...]:
        """Broadcast shape of the fields (``()`` for a scalar estimate)."""
        return tuple(np.shape(self.time_s))

    @overload
    def __add__(self: Estimate[float], other: Estimate[float] | int) -> Estimate[float]: ...
    @overload
    def __add__(self, other: Estimate[Any] | int) -> Estimate[Array]: ...

    def __add__(self, other: Any) -> Estimate[Any]:
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
        same = self.hardware == other.hardware or not (self.hardware and other.hardware)
        hw = (self.hardware or other.hardware) if same else f"{self.hardware}+{other.hardware}"
        if not same:
            warnings.warn(
                f"Estimate: adding estimates of different hardware ({self.hardware} and "
                f"{other.hardware}); the sum is labelled {hw!r}",
                HardwareMismatchWarning, stacklevel=2,
            )
        terms = _terms(self) + _terms(other)
        meta = {"_terms": terms}
        return Estimate(**vals, label=_join(self.label, other.label, terms), hardware=hw,
                        meta=meta)

    __radd__ = __add__

    @overload
    def __mul__(self: Estimate[float], factor: float) -> Estimate[float]: ...
    @overload
    def __mul__(self, factor: Any) -> Estimate[Array]: ...

    def __mul__(self, factor: Any) -> Estimate[Any]:
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

    def to_pandas(self) -> pd.DataFrame:
        """A pandas DataFrame with one row per element (one row for a scalar estimate).

        Columns: the op's inputs where the op recorded them (e.g. ``m``, ``k``, ``n``,
        ``batch``, ``dtype`` for :func:`roofline.gemm`), ``hardware``, the six numeric fields,
        ``bound``, ``intensity``, then the datasheet peaks the op ran against.
        """
        import pandas as pd

        cols: dict[str, Any] = {}
        for key, value in self.meta.get("inputs", {}).items():
            cols[key] = np.ravel(np.broadcast_to(np.asarray(value), self.shape))
        if self.hardware:
            cols["hardware"] = np.ravel(np.broadcast_to(np.asarray(self.hardware), self.shape))
        cols.update(
            {k: np.ravel(np.broadcast_to(getattr(self, k), self.shape)) for k in _NUMERIC})
        cols["bound"] = np.ravel(np.broadcast_to(self.bound, self.shape))
        cols["intensity"] = np.ravel(np.broadcast_to(self.intensity, self.shape))
        for key, value in self.meta.items():
            if key != "inputs" and not key.startswith("_") and np.shape(value) == self.shape:
                cols[key] = np.ravel(value)
        return pd.DataFrame(cols)

    def _repr_html_(self) -> str:
        from ._html import result_html

        where = f" on {self.hardware}" if self.hardware else ""
        title = f"{self.label or 'estimate'}{where}"
        if self.shape != ():
            return result_html(f"{title}: shape {self.shape}", [], self.to_pandas())
        return result_html(title, [
            ("time", f"{si(float(self.time_s), 's')} ({self.bound}-bound)"),
            ("compute", si(float(self.compute_s), "s")),
            ("memory", si(float(self.memory_s), "s")),
            ("overhead", si(float(self.overhead_s), "s")),
            ("work", si(float(self.flops), "FLOP")),
            ("DRAM traffic", si(float(self.bytes), "B")),
            ("intensity", f"{float(self.intensity):.4g} FLOP/B")])

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


def _terms(e: Estimate[Any]) -> int:
    """How many estimates were summed into ``e`` (1 for an op)."""
    return int(e.meta.get("_terms", 1))


def _join(a: str, b: str, terms: int = 2) -> str:
    """``a + b``, cut to :data:`_MAX_LABEL` characters as ``a + ... (N ops)``."""
    if not (a and b):
        return a or b
    cut = " + ... (" in a
    if cut:
        a = a[: a.index(" + ... (")]
    elif len(a) + len(b) + 3 <= _MAX_LABEL:
        return f"{a} + {b}"
    head = a if len(a) <= _MAX_LABEL // 2 else a[: _MAX_LABEL // 2].rstrip() + "..."
    return f"{head} + ... ({terms} ops)"


def _fmt_factor(f: Any) -> str:
    arr = np.asarray(f)
    return f"{float(arr):g}" if arr.ndim == 0 else "array"


_new = object.__new__


def from_scalars(values: tuple[float, ...], label: str, hardware: str,
                 meta: dict[str, Any]) -> Estimate[Any]:
    """An Estimate of Python floats (the core's six values), built without ``__init__``'s
    per-field frozen-dataclass writes: the same object ``Estimate(*values, label=...,
    hardware=..., meta=...)`` gives, for the scalar fast paths."""
    e = _new(Estimate)
    t, c, m, o, f, b = values
    e.__dict__.update(time_s=t, compute_s=c, memory_s=m, overhead_s=o, flops=f, bytes=b,
                      label=label, hardware=hardware, meta=meta)
    return e


def inputs_meta(shape: tuple[int, ...], dims: dict[str, np.ndarray],
                **names: Any) -> dict[str, Any]:
    """``meta["inputs"]`` of an op: its integer dimensions (flat validated arrays, reshaped to
    ``shape``) and named arguments such as ``dtype``; :meth:`Estimate.to_pandas` shows them."""
    out: dict[str, Any] = {k: np.asarray(v).reshape(shape).astype(np.int64) if np.size(v) > 1
                           else int(np.ravel(v)[0]) for k, v in dims.items()}
    out.update(names)
    return {"inputs": out}


def from_columns(cols: tuple[np.ndarray, ...], shape: tuple[int, ...], **kw: Any) -> Estimate[Any]:
    """Build an Estimate from the core's six columns, reshaped to ``shape``; ValueError when a
    time is not finite (inputs too extreme together)."""
    from ._checks import finite_result

    finite_result(str(kw.get("label", "estimate")), cols[0])
    vals: dict[str, Any] = {
        k: _maybe_scalar(np.asarray(c).reshape(shape)) for k, c in zip(_NUMERIC, cols, strict=True)
    }
    return Estimate(**vals, **kw)
