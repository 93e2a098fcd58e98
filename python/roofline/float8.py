"""Will float8 (or MX / NVFP4 / blockwise) speed up a linear layer, and by how much?"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, overload

import numpy as np

from . import _core
from ._checks import (
    MAX_DIM,
    ArrayLike,
    Scalar,
    _show,
    broadcast,
    contains_bool,
    flag,
    one_of,
    positive_int_array,
)
from ._format import si
from ._params.resolve import require_peak, resolve, resolve_cached
from ._params.threads import get_num_threads
from .efficiency import EfficiencyLike
from .estimate import Array, Estimate, T, from_columns, inputs_meta
from .explain import peak_meta
from .hardware import HardwareLike

if TYPE_CHECKING:
    import pandas as pd

_R = _core.Recipe

#: Recipe names (torchao's) and aliases -> core recipe.
RECIPES: dict[str, Any] = {
    "tensorwise": _R.tensorwise,
    "rowwise": _R.rowwise,
    "rowwise_with_gw_hp": _R.rowwise_with_gw_hp,
    "mxfp8_cublas": _R.mxfp8_cublas,
    "mxfp8_cublas_rceil": _R.mxfp8_cublas_rceil,
    "mxfp8_emulated": _R.mxfp8_emulated,
    "mxfp8_cutlass": _R.mxfp8_cutlass,
    "mxfp8_32x32_flexible_gemm_layout": _R.mxfp8_32x32_flexible_gemm_layout,
    "mxfp8_32x32_weight": _R.mxfp8_32x32_weight,
    "mxfp4_cutlass": _R.mxfp4_cutlass,
    "mxfp4": _R.mxfp4,
    "nvfp4": _R.nvfp4,
    "nvfp4_static": _R.nvfp4_static,
    "nvfp4_no_global_scale": _R.nvfp4_no_global_scale,
    "blockwise": _R.blockwise,
    "blockwise_1x128_128x128": _R.blockwise,
}

MODES: dict[str, Any] = {
    "training": _core.LinearMode.training,
    "train": _core.LinearMode.training,
    "inference": _core.LinearMode.inference,
}

_FP4 = {"mxfp4_cutlass", "mxfp4", "nvfp4", "nvfp4_static", "nvfp4_no_global_scale"}


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


def recipe_names() -> list[str]:
    """Every recipe name :func:`linear` accepts."""
    return list(RECIPES)


def _recipe(fn: str, recipe: Any) -> Any:
    return one_of(fn, "recipe", recipe, RECIPES)


def _lowp_dtype(recipe_name: str) -> Any:
    return _core.DType.fp4_e2m1 if recipe_name in _FP4 else _core.DType.fp8_e4m3


@dataclass(frozen=True)
class Float8Linear(Generic[T]):
    """bf16 against low-precision time of one linear layer (or a broadcast array of them).

    ``Float8Linear[float]`` for scalar m, k, n; ``Float8Linear[Array]`` for arrays.

    Attributes
    ----------
    bf16_s : float or ndarray
        bf16 GEMMs (3 in training: output, grad_input, grad_weight; 1 in inference).
    fp8_gemm_s : float or ndarray
        The same GEMMs in the recipe's low-precision format.
    fp8_overhead_s : float or ndarray
        Cast kernels (amax, scaling, transposes) the recipe adds.
    """

    m: T
    k: T
    n: T
    recipe: str
    mode: str
    fuse_with_prev: bool
    hardware: str
    bf16_s: T
    fp8_gemm_s: T
    fp8_overhead_s: T
    _args: tuple[Any, ...] = ()

    @property
    def fp8_s(self) -> T:
        """Low-precision GEMMs plus cast overhead."""
        return self.fp8_gemm_s + self.fp8_overhead_s

    @property
    def time_s(self) -> T:
        """The low-precision layer's GPU time, :attr:`fp8_s` (what ``rl.testing`` compares)."""
        return self.fp8_s

    @property
    def speedup(self) -> T:
        """bf16 time over low-precision time (> 1: converting pays off)."""
        return self.bf16_s / self.fp8_s

    @property
    def worth_converting(self) -> Any:
        """True where the low-precision linear is faster than bf16."""
        return self.speedup > 1.0

    @property
    def wall_s(self) -> Any:
        """Wall time of the low-precision layer under torch.compile, launch overhead included.

        Notes
        -----
        The host model over this layer's kernels (its casts, then its low-precision GEMMs, as
        :meth:`step_kernel_times` lists them). Training: one step of a loop that repeats the
        compiled forward + backward (two regions, each entered for ``compiled_call_s`` plus
        ``compiled_launch_s`` per kernel): ``max(GPU time, host time)``
        (``_core.looped_wall_time`` with no head kernel). Inference: one compiled forward
        (``rl.wall_time``, one region). ``fp8_s`` stays GPU time; ``wall_s > fp8_s`` where the
        host cannot keep the GPU busy (small shapes). With the ``"peak"``, ``"constant"`` and
        ``"torchao"`` presets there is no host model and ``wall_s == fp8_s`` (up to the
        kernel gap floor).
        """
        return self._walls()[0]

    @property
    def bf16_wall_s(self) -> Any:
        """Wall time of the bf16 layer under torch.compile (as :attr:`wall_s`)."""
        return self._walls()[1]

    @property
    def launch_bound(self) -> Any:
        """True where launching kernels, not running them, sets the low-precision wall time."""
        return self._walls()[2]

    def step_kernel_times(self) -> tuple[np.ndarray, np.ndarray]:
        """GPU times (s) of the kernels of one step, in the order the host model launches them:
        the low-precision layer's (casts, then GEMMs) and the bf16 layer's (GEMMs).

        Only for a scalar estimate; index a sweep first.
        """
        if np.ndim(self.bf16_s) != 0:
            raise ValueError("Float8Linear.step_kernel_times: only for scalar m, k, n")
        return self._kernel_times(float(self.m), float(self.k), float(self.n))

    def _kernel_times(self, m: float, k: float, n: float) -> tuple[np.ndarray, np.ndarray]:
        rows = _core.float8_linear_kernels(m, k, n, *self._args)
        lowp = [r["time_s"] for r in rows if r["role"] == "cast"]
        lowp += [r["time_s"] for r in rows if r["role"] == "lowp_gemm"]
        bf16 = [r["time_s"] for r in rows if r["role"] == "bf16_gemm"]
        return np.array(lowp), np.array(bf16)

    def _walls(self) -> tuple[Any, Any, Any]:
        cached = self.__dict__.get("_wall_cache")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        terms = self._args[4].host
        mode = _core.LaunchMode.compiled
        if self.mode == "training":
            def wall(times: np.ndarray) -> Any:
                return _core.looped_wall_time(times, mode, 2, 0.0, terms)
        else:
            def wall(times: np.ndarray) -> Any:
                return _core.wall_time(times, mode, 1, terms)
        shape = np.shape(self.bf16_s)
        m, k, n = (np.broadcast_to(np.asarray(v, dtype=float), shape) for v in
                   (self.m, self.k, self.n))
        out = np.empty(shape), np.empty(shape), np.empty(shape, dtype=bool)
        for idx in np.ndindex(*shape):
            lowp, bf16 = self._kernel_times(float(m[idx]), float(k[idx]), float(n[idx]))
            w = wall(lowp)
            out[0][idx] = w[0]
            out[1][idx] = wall(bf16)[0]
            out[2][idx] = w[3]
        result: tuple[Any, Any, Any] = (
            (float(out[0]), float(out[1]), bool(out[2])) if not shape else out
        )
        object.__setattr__(self, "_wall_cache", result)
        return result

    def to_pandas(self) -> pd.DataFrame:
        """One row per shape: m, k, n, recipe, mode, fuse_with_prev, hardware, bf16_s,
        fp8_gemm_s, fp8_overhead_s, fp8_s, speedup (scalar estimates give one row)."""
        import pandas as pd

        shape = np.shape(self.bf16_s)

        def flat(v: Any, dtype: Any = None) -> np.ndarray:
            return np.ravel(np.broadcast_to(np.asarray(v, dtype=dtype), shape))

        return pd.DataFrame({
            "m": flat(self.m, np.int64), "k": flat(self.k, np.int64),
            "n": flat(self.n, np.int64), "recipe": flat(self.recipe),
            "mode": flat(self.mode), "fuse_with_prev": flat(self.fuse_with_prev),
            "hardware": flat(self.hardware), "bf16_s": flat(self.bf16_s),
            "fp8_gemm_s": flat(self.fp8_gemm_s), "fp8_overhead_s": flat(self.fp8_overhead_s),
            "fp8_s": flat(self.fp8_s), "speedup": flat(self.speedup),
        })

    def kernels(self) -> pd.DataFrame:
        """Per-kernel detail (pandas DataFrame): kernel, role, FLOPs, bytes, time and terms.

        Only for a scalar estimate; index a sweep first.
        """
        import pandas as pd

        if np.ndim(self.bf16_s) != 0:
            raise ValueError("Float8Linear.kernels: only for scalar m, k, n")
        return pd.DataFrame(_core.float8_linear_kernels(float(self.m), float(self.k),
                                                        float(self.n), *self._args))

    def __repr__(self) -> str:
        head = f"Float8Linear({self.recipe}, {self.mode}, on {self.hardware}"
        if np.ndim(self.bf16_s) == 0:
            return (
                f"{head}, m={int(self.m)} k={int(self.k)} n={int(self.n)}: bf16 "
                f"{si(float(self.bf16_s), 's')}, low-precision {si(float(self.fp8_gemm_s), 's')}"
                f" + casts {si(float(self.fp8_overhead_s), 's')}, speedup "
                f"{float(self.speedup):.3f}x)"
            )
        s = np.asarray(self.speedup)
        return f"{head}, shape {s.shape}: speedup {s.min():.3f}x .. {s.max():.3f}x)"


@overload
def linear(
    m: Scalar,
    k: Scalar,
    n: Scalar,
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    mode: str = "training",
    fuse_with_prev: bool = False,
    *,
    efficiency: EfficiencyLike = "default",
) -> Float8Linear[float]: ...
@overload
def linear(
    m: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    mode: str = "training",
    fuse_with_prev: bool = False,
    *,
    efficiency: EfficiencyLike = "default",
) -> Float8Linear[Array]: ...


def linear(
    m: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    mode: str = "training",
    fuse_with_prev: bool = False,
    *,
    efficiency: EfficiencyLike = "default",
) -> Float8Linear[Any]:
    """Estimate a linear ``y = x @ w`` (x: m x k, w: k x n) in bf16 and in a float8 recipe.

    Parameters
    ----------
    m, k, n : int or array_like of int
        Tokens, input features, output features (broadcast).
    recipe : str
        ``tensorwise``, ``rowwise``, ``rowwise_with_gw_hp``, ``mxfp8_cublas``,
        ``mxfp8_cublas_rceil``, ``mxfp8_emulated``, ``mxfp8_cutlass``,
        ``mxfp8_32x32_flexible_gemm_layout``, ``mxfp8_32x32_weight``, ``mxfp4_cutlass``
        (``mxfp4``), ``nvfp4``, ``nvfp4_static``, ``nvfp4_no_global_scale``, ``blockwise``.
    mode : {"training", "train", "inference"}
        Training: output, grad_input and grad_weight GEMMs plus casts of input, weight and
        grad_output. Inference: the forward GEMM plus the activation cast (weights are
        pre-quantized).
    fuse_with_prev : bool
        The bf16 read of activations / gradients fuses into the op that produced them.
    efficiency : {"default", "peak", "torchao"} or Efficiency
        ``"torchao"`` reproduces torchao's float8 roofline exactly (also its byte counts).

    Notes
    -----
    Each kernel takes max(compute, memory, floor); times are summed per role. With
    ``"peak"`` / ``"torchao"`` / custom efficiencies the cast kernels follow torchao's float8
    roofline (amax passes, per-layout casts, transposes); the default model also counts
    block-scale bytes exactly (ceil per block, 1 byte per e8m0/e4m3 scale, 4 per fp32 scale).

    For ``tensorwise``, ``rowwise`` and ``rowwise_with_gw_hp`` the default model lists the
    kernels torch.compile generates for torchao instead (see :func:`cast`): tensorwise = an
    amax per operand, a dual-layout cast of input and grad_output (row- and column-major fp8
    from one read), the weight cast and its transposed copy; rowwise = per operand a fused
    row-amax cast (looped rows read twice) and a column amax + column-scaled transposed cast;
    rowwise_with_gw_hp = the row casts plus the weight's tensorwise transposed cast (its
    grad_weight GEMM runs in bf16). The fp8 GEMMs carry their scaling (tensorwise: scalar
    scales; rowwise: per-row / per-column scales).
    """
    if (type(m) is int and type(k) is int and type(n) is int and 0 < m <= MAX_DIM
            and 0 < k <= MAX_DIM and 0 < n <= MAX_DIM and hardware is not None
            and type(recipe) is str and recipe in RECIPES and type(mode) is str
            and mode in MODES and type(fuse_with_prev) is bool):
        return _linear_scalar(m, k, n, recipe, hardware, mode, fuse_with_prev, efficiency)
    fn = "float8.linear"
    rec = _recipe(fn, recipe)
    md = one_of(fn, "mode", mode, MODES)
    fuse_with_prev = flag(fn, "fuse_with_prev", fuse_with_prev)
    (mm, kk, nn), shape = broadcast(
        fn,
        m=positive_int_array(fn, "m", m),
        k=positive_int_array(fn, "k", k),
        n=positive_int_array(fn, "n", n),
    )
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, _core.DType.bf16)
    require_peak(fn, hw, _lowp_dtype(rec.name))
    try:
        bf16, lowp, cast = _core.float8_linear_sweep(
            mm, kk, nn, rec, md, fuse_with_prev, chw, ceff, get_num_threads()
        )
    except ValueError as exc:
        raise ValueError(f"{fn}: {exc}") from None

    def shaped(a: np.ndarray) -> Any:
        a = a.reshape(shape)
        return float(a) if a.ndim == 0 else a

    scalar = shape == ()
    return Float8Linear(
        m=float(mm[0]) if scalar else mm.reshape(shape),
        k=float(kk[0]) if scalar else kk.reshape(shape),
        n=float(nn[0]) if scalar else nn.reshape(shape),
        recipe=rec.name,
        mode=md.name,
        fuse_with_prev=fuse_with_prev,
        hardware=hw.name,
        bf16_s=shaped(bf16),
        fp8_gemm_s=shaped(lowp),
        fp8_overhead_s=shaped(cast),
        _args=(rec, md, fuse_with_prev, chw, ceff),
    )


def _linear_scalar(m: int, k: int, n: int, recipe: str, hardware: Any, mode: str,
                   fuse_with_prev: bool, efficiency: EfficiencyLike) -> Float8Linear:
    """:func:`linear` for Python ints already checked, exact recipe / mode spellings and
    explicit hardware: the same result, without numpy."""
    fn = "float8.linear"
    rec, md = RECIPES[recipe], MODES[mode]
    hw, chw, ceff, memo = resolve_cached(hardware, efficiency)
    key = ("float8", recipe, mode, fuse_with_prev)  # spellings: core enums hash slowly
    info = memo.get(key)
    if info is None:
        require_peak(fn, hw, _core.DType.bf16)
        require_peak(fn, hw, _lowp_dtype(rec.name))
        try:
            one = _core.Float8LinearOne(rec, md, fuse_with_prev, chw, ceff)
        except ValueError as exc:
            raise ValueError(f"{fn}: {exc}") from None
        info = memo[key] = (one, rec.name, md.name)
    one, rec_name, md_name = info
    bf16, lowp, cast = one(m, k, n)
    out = object.__new__(Float8Linear)
    out.__dict__.update(m=float(m), k=float(k), n=float(n), recipe=rec_name,
                        mode=md_name, fuse_with_prev=fuse_with_prev,
                        hardware=hw.name, bf16_s=bf16, fp8_gemm_s=lowp, fp8_overhead_s=cast,
                        _args=(rec, md, fuse_with_prev, chw, ceff))
    return out


ShapesLike = (
    str | Iterable[tuple[int, int, int]] | dict[str, tuple[int, int, int]] | np.ndarray
)


def shapes(name: str) -> list[tuple[str, tuple[int, int, int]]]:
    """torchao float8_roofline's named shape sets as (name, (M, K, N)) pairs.

    ``pow2``: M = K = N = 1024 .. 16384; ``pow2_extended``: those and 1.5x each;
    ``sweep``: every (M, K, N) in 256 .. 32768 (powers of two, 512 shapes); ``square``:
    256 .. 32768 cubes; ``llama``: Llama-2 70B linears at M = 16384.
    """
    key = one_of("float8.shapes", "shapes", name, {s: s for s in SHAPE_SETS})
    return SHAPE_SETS[key]()


def _pow2() -> list[tuple[str, tuple[int, int, int]]]:
    return [(str(i), (2**p,) * 3) for i, p in enumerate(range(10, 15))]


def _pow2_extended() -> list[tuple[str, tuple[int, int, int]]]:
    out = []
    for i, p in enumerate(range(10, 15)):
        out.append((str(2 * i), (2**p,) * 3))
        v = 2**p + 2 ** (p - 1)
        out.append((str(2 * i + 1), (v, v, v)))
    return out


def _sweep() -> list[tuple[str, tuple[int, int, int]]]:
    vals = [2**p for p in range(8, 16)]
    return [(str(i), (m, k, n)) for i, (m, k, n) in
            enumerate((m, k, n) for m in vals for k in vals for n in vals)]


def _square() -> list[tuple[str, tuple[int, int, int]]]:
    return [(str(i), (2**p,) * 3) for i, p in enumerate(range(8, 16))]


def _llama() -> list[tuple[str, tuple[int, int, int]]]:
    m = 4 * 4096
    return [
        ("attn.wqkv", (m, 8192, 1280)),
        ("attn.w0", (m, 1024, 8192)),
        ("ffn.w13", (m, 8192, 7168)),
        ("ffn.w2", (m, 3584, 8192)),
    ]


SHAPE_SETS = {
    "pow2": _pow2,
    "pow2_extended": _pow2_extended,
    "sweep": _sweep,
    "square": _square,
    "llama": _llama,
}


def _shape_table(spec: ShapesLike) -> tuple[list[str], np.ndarray]:
    fn = "float8.sweep"
    if isinstance(spec, str):
        pairs = shapes(spec)
        return [p[0] for p in pairs], np.array([p[1] for p in pairs], dtype=np.float64)
    what = "a shape-set name, a list of (M, K, N), a dict name -> (M, K, N) or an (n, 3) array"
    if isinstance(spec, dict):
        names = [str(k) for k in spec]
        rows = list(spec.values())
    elif isinstance(spec, (np.ndarray, list, tuple)) or (
        isinstance(spec, Iterable) and not isinstance(spec, (bytes, Mapping))
    ):
        rows = list(spec)
        names = [str(i) for i in range(len(rows))]
    else:
        raise TypeError(f"{fn}: shapes must be {what}, got {spec!r}")
    if contains_bool(rows):
        raise TypeError(f"{fn}: shapes must hold positive integers, got a bool in {_show(rows)}")
    try:
        arr = np.asarray(rows)
    except ValueError:
        raise ValueError(
            f"{fn}: shapes must be {what}; every entry needs three dimensions, got {_show(rows)}"
        ) from None
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise ValueError(
            f"{fn}: shapes must be a shape-set name or a non-empty list of (M, K, N), "
            f"got array of shape {arr.shape}"
        )
    return names, positive_int_array(fn, "shapes", arr)


#: ``columns="torchao"``: our column names -> torchao float8_roofline's.
TORCHAO_COLUMNS = {
    "name": "name", "m": "fwd_M", "k": "fwd_K", "n": "fwd_N", "bf16_s": "r_bf16_gemm_s",
    "fp8_gemm_s": "r_fp8_gemm_s", "fp8_overhead_s": "r_fp8_ovhd_s",
    "fp8_s": "r_fp8_gemm_and_ovhd_s", "speedup": "r_fp8_gemm_and_ovhd_spdp",
}


def sweep(
    shapes: ShapesLike = "pow2",
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    mode: str = "training",
    fuse_with_prev: bool = False,
    *,
    efficiency: EfficiencyLike = "default",
    columns: Literal["roofline", "torchao"] = "roofline",
) -> pd.DataFrame:
    """float8 linear estimates for a set of shapes, as a pandas DataFrame (one row per shape).

    Parameters
    ----------
    shapes : str, list of (M, K, N), dict name -> (M, K, N), or (n, 3) array
        A named set (``pow2``, ``pow2_extended``, ``sweep``, ``square``, ``llama``) or
        explicit shapes.
    recipe, hardware, mode, fuse_with_prev, efficiency
        As for :func:`linear`.
    columns : {"roofline", "torchao"}
        ``"roofline"`` (default): ``name`` (the shape's name: ``"8192x8192x8192"``, a
        ``llama`` layer such as ``"ffn.w13"``, or your dict key), ``m``, ``k``, ``n``,
        ``recipe``, ``mode``, ``hardware``, ``bf16_s``, ``fp8_gemm_s``, ``fp8_overhead_s``,
        ``fp8_s``, ``speedup`` (the attributes of :class:`Float8Linear`).
        ``"torchao"``: torchao float8_roofline's table, names and all: ``name`` (torchao's
        row index for the numbered sets), ``fwd_M``, ``fwd_K``, ``fwd_N``,
        ``r_bf16_gemm_s``, ``r_fp8_gemm_s``, ``r_fp8_ovhd_s``, ``r_fp8_gemm_and_ovhd_s``,
        ``r_fp8_gemm_and_ovhd_spdp`` (``r_`` = roofline, ``spdp`` = speedup).

    Returns
    -------
    pandas.DataFrame
    """
    import pandas as pd

    style = one_of("float8.sweep", "columns", columns, {"roofline": "roofline",
                                                         "torchao": "torchao"})
    names, table = _shape_table(shapes)
    r = linear(table[:, 0], table[:, 1], table[:, 2], recipe, hardware, mode, fuse_with_prev,
               efficiency=efficiency)
    dims = table.astype(np.int64)
    if style == "torchao":
        return pd.DataFrame({
            "name": names, "fwd_M": dims[:, 0], "fwd_K": dims[:, 1], "fwd_N": dims[:, 2],
            "r_bf16_gemm_s": r.bf16_s, "r_fp8_gemm_s": r.fp8_gemm_s,
            "r_fp8_ovhd_s": r.fp8_overhead_s, "r_fp8_gemm_and_ovhd_s": r.fp8_s,
            "r_fp8_gemm_and_ovhd_spdp": r.speedup,
        })
    numbered = names == [str(i) for i in range(len(names))]
    if numbered:
        names = [f"{m}x{k}x{n}" for m, k, n in dims.tolist()]
    frame = r.to_pandas()
    frame.insert(0, "name", names)
    return frame.drop(columns=["fuse_with_prev"])
