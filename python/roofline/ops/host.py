"""Host (launch) overhead: the wall time of kernels launched from PyTorch.

``time_s`` everywhere in this package is GPU time. A GPU only runs what the host has launched,
and launching costs CPU time: an eager op spends ~12 µs in Python, the dispatcher and the
driver; a ``torch.compile`` wrapper launches its kernels with less per kernel but a fixed cost
per call; a CUDA graph issues all its kernels with one launch. When kernels are shorter than
their launches, the GPU waits and the wall time exceeds the GPU time: the sequence is
*launch-bound*. :func:`wall_time` predicts that wall time, :func:`launch_overhead` the pure
launch cost of ``n`` empty kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .._checks import _show, one_of, positive_int_array
from .._format import si
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike
from ..hardware import HardwareLike

__all__ = ["HOST_CLASSES", "LAUNCH_MODES", "MAX_KERNELS", "TooManyKernelsError", "WallTime",
           "calls_wall", "eager_program_wall",
           "host_terms", "launch_overhead",
           "wall_time"]

#: Launch modes: how the host issues kernels.
LAUNCH_MODES = ("eager", "compiled", "graph")

#: Most kernels one call accepts (a sequence is materialized in memory).
MAX_KERNELS = 10_000_000


class TooManyKernelsError(ValueError):
    """A kernel sequence longer than :data:`MAX_KERNELS` (a caller that builds the sequence
    itself, such as ``transformer.estimate``, names its own argument instead)."""

_MODES = {
    "eager": _core.LaunchMode.eager,
    "compiled": _core.LaunchMode.compiled,
    "graph": _core.LaunchMode.graph,
}


@dataclass(frozen=True)
class WallTime:
    """Wall time of a kernel sequence and the parts that set it.

    Attributes
    ----------
    wall_s : float
        Seconds from the first launch to the end of the last kernel.
    gpu_s : float
        GPU time: the sum over kernels of ``max(kernel time, kernel_gap_s)``.
    host_s : float
        Launch time: host time from the first launch to the last, at least the latency of
        one call (``kernel_latency_s``, or ``graph_launch_s`` for a graph).
    launch_bound : bool
        More than half of ``wall_s`` is launching (host issue, an idle GPU, the minimum time
        per kernel) rather than the kernels' own time.
    mode : str
        ``"eager"``, ``"compiled"`` or ``"graph"``.
    kernels : int
        Kernels in the sequence.
    hardware : str
        The accelerator whose terms were used.
    """

    wall_s: float
    gpu_s: float
    host_s: float
    launch_bound: bool
    mode: str
    kernels: int
    hardware: str = ""

    @property
    def bound(self) -> str:
        """``"launch"`` when launch-bound, else ``"gpu"``."""
        return "launch" if self.launch_bound else "gpu"

    def __float__(self) -> float:
        return self.wall_s

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(f"{self.kernels} kernels, {self.mode} on {self.hardware}", [
            ("wall time", f"{si(self.wall_s, 's')} ({self.bound}-bound)"),
            ("GPU time", si(self.gpu_s, "s")), ("launches (host)", si(self.host_s, "s"))])

    def __repr__(self) -> str:
        return (f"WallTime({self.kernels} kernels, {self.mode} on {self.hardware}: wall "
                f"{si(self.wall_s, 's')}, GPU {si(self.gpu_s, 's')}, launches "
                f"{si(self.host_s, 's')}, {self.bound}-bound)")


class StepWall:
    """Mixin for whole-step results with a GPU ``time_s`` and an optional :class:`WallTime`.

    ``wall_s`` is the host model's wall time (``time_s`` when there is none) and
    ``launch_bound`` says whether launching is more than half of it.
    """

    wall: WallTime | None

    @property
    def time_s(self) -> float:
        """GPU time of the step (defined by the result class)."""
        raise NotImplementedError

    @property
    def wall_s(self) -> float:
        """Predicted wall time of the step: GPU time plus what the host's launches add (never
        below :attr:`time_s`: the wall covers every kernel the GPU time counts)."""
        return max(self.wall.wall_s, self.time_s) if self.wall is not None else self.time_s

    @property
    def launch_bound(self) -> bool:
        """True when launching (host overhead) is more than half of :attr:`wall_s`."""
        return self.wall.launch_bound if self.wall is not None else False


def host_terms(hardware: HardwareLike = None, *,
               efficiency: EfficiencyLike = "default") -> dict[str, float]:
    """The host terms the model uses on ``hardware`` (seconds, by name).

    ``eager_launch_s`` (host time per eager op), ``compiled_launch_s`` (per kernel launched by
    a ``torch.compile`` wrapper), ``compiled_call_s`` (per compiled-region call after the
    first), ``graph_launch_s`` (floor of one CUDA graph replay), ``kernel_gap_s`` (minimum GPU
    time of a kernel run back to back), ``kernel_latency_s`` (floor of one launch on an
    idle stream), ``compiled_forward_s`` (per inference call of a compiled ``nn.Module``
    forward) and ``torchao_call_s`` (extra per region of a torchao low-precision linear; see
    :func:`roofline.float8.linear`). The ``"peak"``, ``"constant"`` and ``"torchao"`` presets
    have all of them at zero: no launch overhead.
    """
    _, _, ceff = resolve(hardware, efficiency)
    t = ceff.host
    return {k: float(getattr(t, k)) for k in (
        "eager_launch_s", "compiled_launch_s", "compiled_call_s", "graph_launch_s",
        "kernel_gap_s", "kernel_latency_s", "compiled_forward_s", "torchao_call_s")}


def _regions(fn: str, regions: Any, mode: str, kernels: int) -> int:
    if isinstance(regions, (bool, np.bool_)) or not isinstance(regions, (int, np.integer)):
        raise TypeError(f"{fn}: regions must be a positive integer, got {_show(regions)}")
    r = int(regions)
    if r < 1:
        raise ValueError(f"{fn}: regions must be a positive integer, got {_show(regions)}")
    if r != 1 and mode != "compiled":
        raise ValueError(f"{fn}: regions applies to mode='compiled' only, got regions={r} "
                         f"with mode={mode!r}")
    if r > kernels:
        raise ValueError(f"{fn}: regions must be <= the number of kernels ({kernels}), "
                         f"got {r}")
    return r


def _kernel_times(fn: str, value: Any) -> np.ndarray:
    if isinstance(value, (str, bytes)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: kernel_times_s must be a sequence of seconds, got {_show(value)}")
    if np.isscalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0):
        raise TypeError(f"{fn}: kernel_times_s must be a sequence of seconds (one per kernel), "
                        f"got the scalar {_show(value)}")
    if isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in value):
        raise TypeError(f"{fn}: kernel_times_s must hold numbers, got {_show(value)}")
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise TypeError(f"{fn}: kernel_times_s must be a sequence of seconds, "
                        f"got {_show(value)}") from exc
    if arr.dtype.kind not in "iuf" or arr.ndim != 1:
        raise TypeError(f"{fn}: kernel_times_s must be a 1-d sequence of seconds, "
                        f"got {_show(value)}")
    if arr.size == 0:
        raise ValueError(f"{fn}: kernel_times_s must hold at least one kernel, got {_show(value)}")
    if arr.size > MAX_KERNELS:
        raise TooManyKernelsError(f"{fn}: kernel_times_s holds {arr.size} kernels, at most "
                                  f"{MAX_KERNELS} are accepted")
    out = arr.astype(np.float64)
    bad = ~np.isfinite(out) | (out < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{fn}: kernel_times_s must be finite non-negative seconds, got "
                         f"{_show(out[i])} at kernel_times_s[{i}]")
    return np.ascontiguousarray(out)


def wall_time(kernel_times_s: Any, mode: str = "eager", hardware: HardwareLike = None, *,
              efficiency: EfficiencyLike = "default", regions: int = 1) -> WallTime:
    """Wall time of kernels with the given GPU times, launched in order on one stream.

    Parameters
    ----------
    kernel_times_s : sequence of float
        GPU time of each kernel in launch order (seconds), e.g. the ``time_s`` of this
        package's estimates.
    mode : {"eager", "compiled", "graph"}
        ``"eager"``: PyTorch dispatches one op per kernel. ``"compiled"``: ``torch.compile``
        regions launch their kernels from a generated wrapper. ``"graph"``: one CUDA graph
        replay issues every kernel.
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    efficiency : str or Efficiency
        ``"default"`` uses the fitted host terms; ``"peak"``, ``"constant"``, ``"torchao"``
        and custom :class:`~roofline.Efficiency` objects have none (wall = sum of times).
    regions : int
        ``mode="compiled"`` only: the kernels come from this many compiled-region calls in a
        row (split evenly; e.g. 2 for a forward and its backward).

    Returns
    -------
    WallTime
        ``wall_s``, ``gpu_s``, ``host_s``, ``launch_bound`` (``float(w)`` is ``wall_s``).

    Notes
    -----
    The host issues kernel ``i`` at ``A_i`` after the first launch, while the GPU runs the
    kernels in order, each for ``g_j = max(t_j, kernel_gap_s)``. Kernel ``n`` then ends at

        ``wall = max(floor, max_i (A_i + sum_{j >= i} g_j))``,

    exact for a FIFO stream and a host that never waits on the GPU: the wall is set by the
    launch after which the GPU never idles again. ``A_i`` grows by ``eager_launch_s`` per
    eager kernel; by ``compiled_launch_s`` per compiled kernel plus ``compiled_call_s`` at
    each region boundary; not at all in a graph. ``floor`` is the latency of one call
    (``kernel_latency_s``; ``graph_launch_s`` for a graph replay). The host work before the
    first launch (the first op's Python call, the first region's guards) is assumed to
    overlap earlier GPU work, as in a training or benchmark loop; this is what CUDA events
    or a profiler around the call measure. Monotone in every kernel time and term.
    """
    fn = "wall_time"
    times = _kernel_times(fn, kernel_times_s)
    key = one_of(fn, "mode", mode, {m: m for m in LAUNCH_MODES})
    r = _regions(fn, regions, key, times.size)
    hw, _, ceff = resolve(hardware, efficiency)
    wall, gpu, host, bound = _core.wall_time(times, _MODES[key], r, ceff.host)
    return WallTime(float(wall), float(gpu), float(host), bool(bound), key, int(times.size),
                    hw.name)


def launch_overhead(kernels: Any, mode: str = "eager", hardware: HardwareLike = None, *,
                    efficiency: EfficiencyLike = "default", regions: int = 1) -> Any:
    """Wall time of ``kernels`` launches of kernels that do no work: the pure launch cost.

    Parameters
    ----------
    kernels : int or array of int
        Kernels launched back to back (positive, at most :data:`MAX_KERNELS`).
    mode : {"eager", "compiled", "graph"}
        How they are launched (see :func:`wall_time`).
    hardware, efficiency, regions
        As for :func:`wall_time`.

    Returns
    -------
    float or ndarray
        Seconds from the first launch to the end of the last kernel, for empty kernels.

    Notes
    -----
    :func:`wall_time` of ``kernels`` zero-time kernels. Eager: ``max(kernel_latency_s,
    (N - 1)·eager_launch_s + kernel_gap_s)`` (one tiny kernel takes its latency; a chain is
    as fast as the host issues it). Graph: ``max(graph_launch_s, N·kernel_gap_s)``.
    Compiled: the same maximum over prefixes with ``compiled_launch_s`` between launches
    and ``compiled_call_s`` more at each region boundary (about ``(N - 1)·compiled_launch_s
    + (regions - 1)·compiled_call_s``). This is what a chain of tiny ops costs; for real
    kernels use :func:`wall_time`.
    """
    fn = "launch_overhead"
    n = positive_int_array(fn, "kernels", kernels)
    if (n > MAX_KERNELS).any():
        bad = n.flat[int(np.flatnonzero(n > MAX_KERNELS)[0])]
        raise ValueError(f"{fn}: kernels must be at most {MAX_KERNELS}, got {int(bad)}")
    key = one_of(fn, "mode", mode, {m: m for m in LAUNCH_MODES})
    _, _, ceff = resolve(hardware, efficiency)
    out = np.empty(n.shape)
    for idx, count in np.ndenumerate(n):
        c = int(count)
        r = _regions(fn, regions, key, c)
        out[idx] = _core.wall_time(np.zeros(c), _MODES[key], r, ceff.host)[0]
    return float(out) if out.ndim == 0 else out


#: Host call classes of an eager program, in the core's ``HostOp`` order: a torch call that
#: launches nothing (``view``), one launching elementwise / reduction / copy kernels
#: (``kernel``), one launching a GEMM (``gemm``), SDPA (``attention``), one ``nn.Module``
#: call (``module``), one backward node run by the autograd engine (``backward``).
HOST_CLASSES = ("view", "kernel", "gemm", "attention", "module", "backward")
assert len(HOST_CLASSES) == _core.host_op_classes()


def eager_program_wall(kernel_times_s: Any, host_counts: Any, tail_counts: Any,
                       hardware: HardwareLike = None, *,
                       efficiency: EfficiencyLike = "default") -> WallTime:
    """Per-step wall time of an eager program in a loop of steps.

    ``host_counts[i]`` holds the host calls by class (:data:`HOST_CLASSES`) made before
    kernel ``i`` is launched, ``tail_counts`` those after the last kernel. The core's
    ``program_wall_time`` prices each class with the host terms (``op_*_launches``,
    ``module_call_launches``, ``step_call_launches`` once per step, in units of
    ``eager_launch_s``) and runs the host issue against the GPU stream: the wall is never
    below the kernels' time.
    """
    hwo, _, ceff = resolve(hardware, efficiency)
    times = np.ascontiguousarray(kernel_times_s, dtype=np.float64)
    counts = np.ascontiguousarray(host_counts, dtype=np.float64).reshape(times.size,
                                                                          len(HOST_CLASSES))
    tail = np.ascontiguousarray(tail_counts, dtype=np.float64)
    wall, gpu, host, bound = _core.program_wall_time(times, counts, tail, ceff.host)
    return WallTime(float(wall), float(gpu), float(host), bool(bound), "eager",
                    int(times.size), hwo.name)


def calls_wall(kernel_times_s: Any, host_counts: Any, hardware: HardwareLike = None, *,
               efficiency: EfficiencyLike = "default") -> WallTime:
    """Wall time of one kernel sequence launched from an idle stream, host calls by class.

    ``host_counts[i]`` holds the host calls by class (:data:`HOST_CLASSES`) the framework
    makes before kernel ``i`` is launched (row 0, the reference launch, is not charged). The
    core's ``calls_wall_time`` prices each class with the host terms (``op_*_launches``,
    ``module_call_launches``, in units of ``eager_launch_s``) and runs the host issue against
    the GPU stream as :func:`wall_time` does (no step entry, no loop): the wall is never below
    the kernels' time.
    """
    hwo, _, ceff = resolve(hardware, efficiency)
    times = np.ascontiguousarray(kernel_times_s, dtype=np.float64)
    counts = np.ascontiguousarray(host_counts, dtype=np.float64).reshape(times.size,
                                                                          len(HOST_CLASSES))
    wall, gpu, host, bound = _core.calls_wall_time(times, counts, ceff.host)
    return WallTime(float(wall), float(gpu), float(host), bool(bound), "eager",
                    int(times.size), hwo.name)
