"""torchao's compiled bf16 -> float8 cast of one tensor: its kernels, GPU and wall time."""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from .. import _core
from .._checks import ArrayLike, Scalar, broadcast, flag, one_of, positive_int_array
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike
from ..estimate import Array, Estimate, T, from_columns, inputs_meta
from ..explain import peak_meta
from ..hardware import HardwareLike

__all__ = ["GRANULARITIES", "CastEstimate", "cast", "cast_kernels"]

#: Scale granularities of :func:`cast` (torchao's names; ``axiswise`` = ``rowwise``).
GRANULARITIES: dict[str, Any] = {
    "tensorwise": _core.CastGranularity.tensorwise,
    "rowwise": _core.CastGranularity.rowwise,
    "axiswise": _core.CastGranularity.rowwise,
}


@overload
def cast(
    rows: Scalar,
    cols: Scalar,
    granularity: str = "tensorwise",
    hardware: HardwareLike = None,
    *,
    transpose: bool = False,
    efficiency: EfficiencyLike = "default",
) -> CastEstimate[float]: ...
@overload
def cast(
    rows: ArrayLike,
    cols: ArrayLike,
    granularity: str = "tensorwise",
    hardware: HardwareLike = None,
    *,
    transpose: bool = False,
    efficiency: EfficiencyLike = "default",
) -> CastEstimate[Array]: ...


def cast(
    rows: ArrayLike,
    cols: ArrayLike,
    granularity: str = "tensorwise",
    hardware: HardwareLike = None,
    *,
    transpose: bool = False,
    efficiency: EfficiencyLike = "default",
) -> CastEstimate[Any]:
    """Estimate torchao's compiled bf16 -> float8 (e4m3) cast of a rows x cols tensor.

    The kernels torch.compile (Inductor) generates for torchao's
    ``hp_tensor_to_float8_dynamic``: the amax, the scale and the cast, as they run.

    Parameters
    ----------
    rows, cols : int or array_like of int
        Shape of the bf16 tensor (broadcast).
    granularity : {"tensorwise", "rowwise", "axiswise"}
        One fp32 scale for the tensor, or one per row (``axiswise`` is torchao's name for
        rowwise; power-of-two scales as torchao's rowwise recipe rounds them).
    transpose : bool
        Write the column-major copy: tensorwise casts it through shared memory; rowwise then
        scales per column (torchao's ``axiswise_dim=0``, as for grad_weight's operands).
    efficiency : {"default", "peak", "torchao"} or Efficiency
        The default model uses the fitted cast terms (``data/terms/cast.json``); other presets
        count the idealized kernels at their streaming rate.

    Returns
    -------
    Estimate
        GPU time of all kernels (``time_s``); host time of the compiled call is not included.

    Notes
    -----
    Default model, n = rows·cols, B = streaming bandwidth, f_* the cast terms:

    - tensorwise: split amax reading 2n bytes at f_amax·B, a one-block kernel reducing the
      partial maxima to the scale, then the cast (2n read, n written) at B, or at
      f_transpose·B when transposed.
    - rowwise: one kernel fusing the row amax with the cast; a row longer than 1024 elements
      is reduced in a loop and read again (4n bytes read), n + 4·rows written, at f_row·B.
      Fewer than 2 x SMs rows longer than 8192 elements: Inductor splits the row amax into
      three launches (partial row maxima; a reduce reading 8·rows and writing 4·rows bytes;
      the row-scaled cast), the same tensor bytes.
      Transposed: a split column amax (2n at f_amax·B), its final reduction, and a
      column-scaled transposed cast (2n read, n + 4·cols written) at f_column·B.

    Every kernel also pays the streaming latency of the default model.
    """
    fn = "float8.cast"
    gran = one_of(fn, "granularity", granularity, GRANULARITIES)
    transpose = flag(fn, "transpose", transpose)
    (rr, cc), shape = broadcast(
        fn,
        rows=positive_int_array(fn, "rows", rows),
        cols=positive_int_array(fn, "cols", cols),
    )
    hw, chw, ceff = resolve(hardware, efficiency)
    cols_out = _core.float8_cast_sweep(rr, cc, gran, transpose, chw, ceff)
    name = str(granularity).strip().lower()
    what = f"float8 cast {name}{' transposed' if transpose else ''}"
    est = from_columns(cols_out, shape, label=what, hardware=hw.name,
                       meta={**peak_meta(hw, _core.DType.fp32), **inputs_meta(
                           shape, {"rows": rr, "cols": cc}, granularity=name)})
    est.meta["_cast"] = (rr, cc, gran, transpose, chw, ceff)
    return CastEstimate(est.time_s, est.compute_s, est.memory_s, est.overhead_s, est.flops,
                        est.bytes, est.label, est.hardware, est.meta)


class CastEstimate(Estimate[T]):
    """:class:`~roofline.Estimate` of a compiled float8 cast, with the wall time of one call."""

    @property
    def wall_s(self) -> Any:
        """Wall time of one call of the compiled cast repeated back to back (GPU time plus the
        host time the GPU cannot hide).

        Notes
        -----
        ``rl.wall_time``'s host model for a call repeated without synchronization (the host
        runs ahead): ``max(GPU time, compiled_region_s + kernels · compiled_launch_s)``, the
        kernels those of :func:`cast_kernels`. ``time_s`` stays GPU time. With the ``"peak"``,
        ``"constant"`` and ``"torchao"`` presets there are no host terms and ``wall_s`` is the
        GPU time (up to the kernel gap floor).
        """
        cached = self.meta.get("_wall")
        if cached is not None:
            return cached
        rr, cc, gran, transpose, chw, ceff = self.meta["_cast"]
        out = np.empty(len(rr))
        for i, (r, c) in enumerate(zip(rr, cc, strict=True)):
            rows = _core.float8_cast_kernels(float(r), float(c), gran, transpose, chw, ceff)
            out[i] = _core.repeated_wall_time(np.array([k["time_s"] for k in rows]),
                                              _core.LaunchMode.compiled, 1, ceff.host)[0]
        shape = np.shape(self.time_s)
        wall: Any = float(out[0]) if not shape else out.reshape(shape)
        self.meta["_wall"] = wall
        return wall


def cast_kernels(
    rows: int,
    cols: int,
    granularity: str = "tensorwise",
    hardware: HardwareLike = None,
    *,
    transpose: bool = False,
    efficiency: EfficiencyLike = "default",
) -> Any:
    """Per-kernel detail of :func:`cast` for one shape (pandas DataFrame)."""
    import pandas as pd

    fn = "float8.cast_kernels"
    gran = one_of(fn, "granularity", granularity, GRANULARITIES)
    transpose = flag(fn, "transpose", transpose)
    r = np.ravel(positive_int_array(fn, "rows", rows))
    c = np.ravel(positive_int_array(fn, "cols", cols))
    if r.size != 1 or c.size != 1:
        raise ValueError(f"{fn}: rows and cols must be scalars, got {rows!r} and {cols!r}")
    hw, chw, ceff = resolve(hardware, efficiency)
    return pd.DataFrame(_core.float8_cast_kernels(float(r[0]), float(c[0]), gran,
                                                  transpose, chw, ceff))

