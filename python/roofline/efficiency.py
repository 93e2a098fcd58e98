"""Efficiency presets: how far below the datasheet roofline kernels run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._checks import positive_float

if TYPE_CHECKING:
    from .hardware import Hardware

#: torchao's achievable fractions and per-kernel floor (roofline_utils, torchao 0.18).
TORCHAO_COMPUTE_FRACTION = 0.78
TORCHAO_MEMORY_FRACTION = 0.92
TORCHAO_KERNEL_FLOOR_S = 2e-6


@dataclass(frozen=True)
class Efficiency:
    """A custom efficiency model: constant achievable fractions and a per-kernel floor.

    Parameters
    ----------
    compute_fraction : float
        Achievable fraction of the dense peak FLOP/s, in (0, 1].
    memory_fraction : float
        Achievable fraction of the DRAM bandwidth, in (0, 1].
    kernel_floor_s : float
        Minimum time of one kernel in seconds (launch and latency floor), >= 0.
    torchao_conventions : bool
        Count bytes exactly as torchao's ``roofline_utils`` does (floor division of MX scale
        reads, no scale writes in training casts, blockwise GEMM scales ignored).

    Notes
    -----
    A kernel takes ``max(flops / (peak * compute_fraction), bytes / (bw * memory_fraction),
    kernels * kernel_floor_s)``: compute and memory overlap perfectly, and the floor models
    launch latency.
    """

    compute_fraction: float = 1.0
    memory_fraction: float = 1.0
    kernel_floor_s: float = 0.0
    torchao_conventions: bool = False

    def __post_init__(self) -> None:
        for name in ("compute_fraction", "memory_fraction"):
            v = positive_float("Efficiency", name, getattr(self, name))
            if v > 1:
                raise ValueError(f"Efficiency: {name} must be in (0, 1], got {v!r}")
            object.__setattr__(self, name, v)
        floor_s = positive_float(
            "Efficiency", "kernel_floor_s", self.kernel_floor_s, allow_zero=True
        )
        object.__setattr__(self, "kernel_floor_s", floor_s)
        if not isinstance(self.torchao_conventions, bool):
            raise TypeError(
                f"Efficiency: torchao_conventions must be a bool, got {self.torchao_conventions!r}"
            )


EfficiencyLike = str | Efficiency

PRESETS = ("default", "calibrated", "constant", "torchao", "peak")

#: Presets served by the shape-aware model of ``roofline._params.shape_aware`` (not an Efficiency).
SHAPE_AWARE_PRESETS = ("default", "calibrated")


_default: EfficiencyLike = "calibrated"


def set_default_efficiency(value: EfficiencyLike | None) -> None:
    """Choose what ``efficiency="default"`` means (None restores the calibrated model).

    Parameters
    ----------
    value : {"calibrated", "constant", "torchao", "peak"}, Efficiency or None
        Any preset name except ``"default"`` itself, or a custom :class:`Efficiency`.
    """
    global _default
    if value is None:
        _default = "calibrated"
        return
    if isinstance(value, str):
        key = value.strip().lower()
        if key == "default" or key not in PRESETS:
            from ._errors import UnknownNameError, close_matches

            raise UnknownNameError(
                f"set_default_efficiency: value must be one of {PRESETS[1:]}, an Efficiency or "
                f"None, got {value!r}", close_matches(key, PRESETS[1:], n=3)
            )
        _default = key
        return
    if not isinstance(value, Efficiency):
        raise TypeError(
            f"set_default_efficiency: value must be a preset name, an Efficiency or None, "
            f"got {value!r}"
        )
    _default = value


def default_efficiency() -> EfficiencyLike:
    """What ``efficiency="default"`` currently means (``"calibrated"`` unless changed)."""
    return _default


def is_shape_aware(efficiency: EfficiencyLike) -> bool:
    """True when ``efficiency`` selects the shape-aware model (``"default"`` as currently set).

    Only the shape-aware model carries the implementation-aware terms (library latencies,
    backends, host launch costs); the constant-fraction presets and Efficiency objects do not.
    """
    if isinstance(efficiency, str) and efficiency.strip().lower() == "default":
        efficiency = default_efficiency()
    return isinstance(efficiency, str) and efficiency.strip().lower() in SHAPE_AWARE_PRESETS


def preset(name: EfficiencyLike, hw: Hardware | None = None) -> Efficiency:
    """Return the :class:`Efficiency` a preset name stands for on ``hw``.

    ``"peak"`` is the datasheet roofline (fractions 1, no floor). ``"torchao"`` uses torchao's
    constants (78 % / 92 % / 2 µs, or the hardware's own ``achievable_*_fraction`` when it is a
    torchao table entry that has them) and torchao's byte conventions. ``"constant"`` is the
    same constants with this package's exact byte counts. ``"default"`` (= ``"calibrated"``)
    is the shape-aware model; it is not a constant-fraction :class:`Efficiency`, so it is
    resolved by the op functions themselves and this function raises ``ValueError`` for it.
    """
    if isinstance(name, Efficiency):
        return name
    if not isinstance(name, str):
        raise TypeError(
            f"efficiency must be one of {PRESETS} or an Efficiency, got {name!r}"
        )
    key = name.strip().lower()
    if key == "peak":
        return Efficiency(1.0, 1.0, 0.0, False)
    if key == "torchao":
        cf = getattr(hw, "achievable_flops_fraction", None) or TORCHAO_COMPUTE_FRACTION
        mf = getattr(hw, "achievable_mem_fraction", None) or TORCHAO_MEMORY_FRACTION
        return Efficiency(cf, mf, TORCHAO_KERNEL_FLOOR_S, True)
    if key == "constant":
        return Efficiency(
            TORCHAO_COMPUTE_FRACTION, TORCHAO_MEMORY_FRACTION, TORCHAO_KERNEL_FLOOR_S, False
        )
    if key in SHAPE_AWARE_PRESETS:
        raise ValueError(
            f"efficiency preset {name!r} is the shape-aware model, not a constant-fraction "
            "Efficiency; pass it by name to the op functions"
        )
    from ._errors import UnknownNameError, close_matches

    close = close_matches(key, PRESETS, n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownNameError(
        f"unknown efficiency preset {name!r}{hint} (choose one of {PRESETS} or an Efficiency)",
        close,
    )


def to_core(eff: Efficiency) -> Any:
    """Convert to the core's struct."""
    from . import _core

    return _core.Efficiency(
        eff.compute_fraction, eff.memory_fraction, eff.kernel_floor_s, eff.torchao_conventions
    )
