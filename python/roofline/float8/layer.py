"""Will float8 (or MX / NVFP4 / blockwise) speed up one linear layer, and by how much:
bf16 against low-precision GEMMs plus casts, GPU and wall time (:class:`Float8Linear`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, overload

import numpy as np

from .. import _core
from .._checks import MAX_DIM, ArrayLike, Scalar, broadcast, flag, one_of, positive_int_array
from .._format import si
from .._params.resolve import require_peak, resolve, resolve_cached
from .._params.threads import get_num_threads
from ..efficiency import EfficiencyLike
from ..estimate import Array, T
from ..hardware import HardwareLike
from .recipes import MODES, RECIPES, check_recipe, check_te_support, core_recipe, lowp_dtype

#: How the linear's kernels are launched (``launch=``): eager ATen ops, ``torch.compile``
#: regions (what torchao's float8 users run, the default), or a CUDA graph replay.
LAUNCHES = {"eager": _core.LaunchMode.eager, "compiled": _core.LaunchMode.compiled,
            "graph": _core.LaunchMode.graph}

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Float8Linear", "linear"]


@dataclass(frozen=True)
class Float8Linear(Generic[T]):
    """bf16 against low-precision time of one linear layer (or a broadcast array of them).

    ``Float8Linear[float]`` for scalar m, k, n; ``Float8Linear[Array]`` for arrays.

    GPU times (``bf16_s``, ``fp8_s``, :attr:`gpu_speedup`) count kernels only. The verdict
    (:attr:`speedup`, :attr:`worth_converting`) uses the wall time of one call as the program
    launches it (:attr:`launch`): at small shapes the host, not the GPU, sets the time, and a
    torchao low-precision linear costs more host time per call than a plain one.

    Attributes
    ----------
    bf16_s : float or ndarray
        bf16 GEMMs (3 in training: output, grad_input, grad_weight; 1 in inference).
    fp8_gemm_s : float or ndarray
        The same GEMMs in the recipe's low-precision format.
    fp8_overhead_s : float or ndarray
        Cast kernels (amax, scaling, transposes) the recipe adds.
    launch : str
        ``"eager"``, ``"compiled"`` or ``"graph"``: how :attr:`wall_s`, :attr:`bf16_wall_s`,
        :attr:`speedup` and :attr:`worth_converting` assume the call is launched.
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
    launch: str = "compiled"
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
        """bf16 wall time over low-precision wall time per call, launched as :attr:`launch`
        says (> 1: converting pays off): ``bf16_wall_s / wall_s``.

        Where the GPU sets both times this is :attr:`gpu_speedup`; where the host does (small
        m), it is the ratio of the two calls' host times, below 1 for a torchao linear (its
        regions cost ``torchao_call_s`` more to enter, its activation cast is one more launch).
        With the ``"peak"``, ``"constant"`` and ``"torchao"`` presets (no host model) it equals
        :attr:`gpu_speedup`.
        """
        w = self._walls()
        return w[1] / w[0]  # type: ignore[no-any-return]

    @property
    def gpu_speedup(self) -> T:
        """bf16 GPU time over low-precision GPU time, ``bf16_s / fp8_s`` (kernels only: what
        torchao's float8 roofline calls the speedup)."""
        return self.bf16_s / self.fp8_s

    @property
    def worth_converting(self) -> Any:
        """True where the low-precision linear's call is faster than bf16's
        (:attr:`speedup` > 1, launched as :attr:`launch` says)."""
        return self.speedup > 1.0

    @property
    def wall_s(self) -> Any:
        """Time of one call of the low-precision layer repeated in a loop, launched as
        :attr:`launch` says, host time included.

        Notes
        -----
        ``_core.linear_call_wall_time`` over this layer's kernels (its casts, then its
        low-precision GEMMs, as :meth:`step_kernel_times` lists them): the host issues kernel
        ``i`` at ``A_i`` = the sum of the launch costs and region entries before it, the loop
        repeats the call without synchronizing, so one call costs ``max(GPU time, host time
        per call)`` with host time per call = ``n x launch + regions x entry``:

        - ``"compiled"``: launch = ``compiled_launch_s``; entry = ``compiled_call_s`` per
          region in training (forward, backward), ``compiled_forward_s`` for an inference
          forward; plus ``torchao_call_s`` per region for the low-precision (torchao) layer.
        - ``"eager"``: launch = ``eager_launch_s`` per kernel of the same list (eager ATen runs
          the casts unfused, in more kernels, so this is a lower bound) plus ``torchao_call_s``
          per region for the torchao layer.
        - ``"graph"``: one CUDA graph replay (``graph_launch_s``) per call; no host cost per
          kernel or region.

        ``fp8_s`` stays GPU time; ``wall_s > fp8_s`` where the host cannot keep the GPU busy
        (small shapes). With the ``"peak"``, ``"constant"`` and ``"torchao"`` presets every
        host term is 0 and ``wall_s == fp8_s``.
        """
        return self._walls()[0]

    @property
    def bf16_wall_s(self) -> Any:
        """Time of one call of the bf16 layer in a loop, launched as :attr:`launch` says (as
        :attr:`wall_s`, a plain ``nn.Linear``: no ``torchao_call_s``)."""
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
        mode = LAUNCHES[self.launch]
        training = self.mode == "training"

        def wall(times: np.ndarray, torchao: bool) -> Any:
            return _core.linear_call_wall_time(times, mode, training, torchao, 0.0, terms)

        shape = np.shape(self.bf16_s)
        m, k, n = (np.broadcast_to(np.asarray(v, dtype=float), shape) for v in
                   (self.m, self.k, self.n))
        out = np.empty(shape), np.empty(shape), np.empty(shape, dtype=bool)
        for idx in np.ndindex(*shape):
            lowp, bf16 = self._kernel_times(float(m[idx]), float(k[idx]), float(n[idx]))
            w = wall(lowp, True)
            out[0][idx] = w[0]
            out[1][idx] = wall(bf16, False)[0]
            out[2][idx] = w[3]
        result: tuple[Any, Any, Any] = (
            (float(out[0]), float(out[1]), bool(out[2])) if not shape else out
        )
        object.__setattr__(self, "_wall_cache", result)
        return result

    def to_pandas(self) -> pd.DataFrame:
        """One row per shape: m, k, n, recipe, mode, fuse_with_prev, hardware, bf16_s,
        fp8_gemm_s, fp8_overhead_s, fp8_s, gpu_speedup, launch, bf16_wall_s, wall_s, speedup
        (scalar estimates give one row)."""
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
            "fp8_s": flat(self.fp8_s), "gpu_speedup": flat(self.gpu_speedup),
            "launch": flat(self.launch), "bf16_wall_s": flat(self.bf16_wall_s),
            "wall_s": flat(self.wall_s), "speedup": flat(self.speedup),
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

    def _repr_html_(self) -> str:
        from .._html import result_html

        title = f"float8 {self.recipe} {self.mode} linear ({self.launch}) on {self.hardware}"
        if np.ndim(self.bf16_s) != 0:
            return result_html(f"{title}: shape {np.shape(self.bf16_s)}", [], self.to_pandas())
        return result_html(f"{title}, m={int(self.m)} k={int(self.k)} n={int(self.n)}", [
            ("bf16 GEMM", si(float(self.bf16_s), "s")),
            ("low-precision GEMM", si(float(self.fp8_gemm_s), "s")),
            ("casts", si(float(self.fp8_overhead_s), "s")),
            ("GPU speedup", f"{float(self.gpu_speedup):.3f}x"),
            ("per call (wall)", f"{si(float(self.bf16_wall_s), 's')} bf16 vs "
                                f"{si(float(self.wall_s), 's')}"),
            ("speedup", f"{float(self.speedup):.3f}x"),
        ])

    def __repr__(self) -> str:
        head = f"Float8Linear({self.recipe}, {self.mode}, {self.launch}, on {self.hardware}"
        if np.ndim(self.bf16_s) == 0:
            return (
                f"{head}, m={int(self.m)} k={int(self.k)} n={int(self.n)}: bf16 "
                f"{si(float(self.bf16_s), 's')}, low-precision {si(float(self.fp8_gemm_s), 's')}"
                f" + casts {si(float(self.fp8_overhead_s), 's')} "
                f"(GPU {float(self.gpu_speedup):.3f}x), per call "
                f"{si(float(self.bf16_wall_s), 's')} vs {si(float(self.wall_s), 's')}"
                f": speedup {float(self.speedup):.3f}x)"
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
    launch: str = "compiled",
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
    launch: str = "compiled",
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
    launch: str = "compiled",
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
        (``mxfp4``), ``nvfp4``, ``nvfp4_static``, ``nvfp4_no_global_scale``, ``blockwise``
        (torchao's names), and Transformer Engine's recipes as Megatron-Core runs them on
        sm100 / sm103 (B200, GB200, B300, GB300): ``tensorwise_te`` (Float8CurrentScaling: an
        amax read and one fp8 copy per activation, since those GPUs' fp8 GEMMs take any
        layout) and ``mxfp8_te`` (MXFP8BlockScaling: one quantize kernel writes both 1x32
        layouts, and every GEMM first swizzles each operand's e8m0 scales, TE 2.x before
        GEMM-ready scales); both keep fp8 weights (Megatron-Bridge's ``fp8_param_gather``),
        re-quantized by the optimizer step, so no weight cast runs per call. Transformer
        Engine's DelayedScaling on sm90 (H100 / H200, TN-only fp8 GEMMs): ``delayed_te``
        (TE 1.x as Megatron-Core runs it: one ``fp8_cast_transpose_fused`` per activation and
        per grad_output, reading bf16 once (``2·m·k`` bytes) and writing the row-major and
        transposed fp8 copies (``2·m·k``), the amax recorded in the same kernel and the scale
        taken from the amax history, so no amax pass; the weight's fp8 copies are cached for
        the step by ``is_first_microbatch``, its once-per-step cast-transpose not priced per
        call) and ``delayed_te_uncached`` (the same, plus the weight's cast-transpose, ``2·k·n``
        read and written, in every call: TE modules called without ``is_first_microbatch``,
        as llm-foundry's ``fc_type: te``). On sm90 also ``blockwise_te`` (Float8BlockScaling,
        Megatron-Bridge's FP8-SC: one kernel per activation writes the 1x128-scaled rows and
        the transposed copy, ``2·m·k`` read, ``2·m·k`` plus fp32 scales written; weights
        quantized once per step) and ``tensorwise_te`` resolves to ``tensorwise_te_sm90``
        where fp8 GEMMs are TN-only (compute capability 8.9, 9.x, 12.x: L40S, H100, H200,
        RTX 5090): the amax, then one cast-transpose writing both fp8 copies. ``mxfp8_te``
        raises ValueError below compute capability 10.0 and on 12.x (TE 2.9). TE's CUDA
        kernels at the streaming rate. Not modelled by ``efficiency="torchao"``.
        ``tensorwise_static`` (inference only): fp8 weights and a calibrated per-tensor input
        scale, as TensorRT-LLM's ``FP8Linear`` runs (TensorRT's quantize layer with a fixed
        scale): one quantize kernel (bf16 read, fp8 write) and the tensorwise fp8 GEMM, no
        amax pass; training raises ValueError.
    mode : {"training", "train", "inference"}
        Training: output, grad_input and grad_weight GEMMs plus casts of input, weight and
        grad_output. Inference: the forward GEMM plus the activation cast (weights are
        pre-quantized).
    fuse_with_prev : bool
        The bf16 read of activations / gradients fuses into the op that produced them.
    efficiency : {"default", "peak", "torchao"} or Efficiency
        ``"torchao"`` reproduces torchao's float8 roofline exactly (also its byte counts).
    launch : {"compiled", "eager", "graph"}
        How the program launches the layer, for :attr:`~Float8Linear.wall_s`,
        :attr:`~Float8Linear.speedup` and :attr:`~Float8Linear.worth_converting`:
        ``"compiled"`` (default: ``torch.compile``, as torchao's float8 training and
        inference are run), ``"eager"`` (ATen ops one by one), ``"graph"`` (a CUDA graph
        replay, e.g. ``torch.compile(mode="reduce-overhead")`` or a serving engine's decode
        graph). GPU times (``bf16_s``, ``fp8_s``) do not depend on it.

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
    row-amax cast (looped rows read twice; fewer than 2 x SMs rows longer than 8192 elements:
    Inductor's split reduction, the same bytes in three launches: partial row amax, final
    reduce + scale, row-scaled cast) and a column amax + column-scaled transposed cast;
    rowwise_with_gw_hp = the row casts plus the weight's tensorwise transposed cast (its
    grad_weight GEMM runs in bf16). The fp8 GEMMs carry their scaling (tensorwise: scalar
    scales; rowwise: per-row / per-column scales).

    The host terms (``rl.host_terms()``; fitted by ``benchmarks/fit_host.py`` on H100 do_bench
    timings of torchao 0.17 linears, torch 2.11) make a torchao call cost ~0.1 ms more host
    time per region than a plain compiled ``nn.Linear``; so at small m a compiled float8
    inference call (dynamic rowwise activations) runs slower than bf16 although its GPU time
    is shorter, as measured (m <= 1024 on H100: 2-5x slower).
    """
    if (type(m) is int and type(k) is int and type(n) is int and 0 < m <= MAX_DIM
            and 0 < k <= MAX_DIM and 0 < n <= MAX_DIM and hardware is not None
            and type(recipe) is str and recipe in RECIPES and type(mode) is str
            and mode in MODES and type(fuse_with_prev) is bool and type(launch) is str
            and launch in LAUNCHES):
        return _linear_scalar(m, k, n, recipe, hardware, mode, fuse_with_prev, efficiency,
                              launch)
    fn = "float8.linear"
    rec = check_recipe(fn, recipe)
    md = one_of(fn, "mode", mode, MODES)
    launch = one_of(fn, "launch", launch, {k: k for k in LAUNCHES})
    fuse_with_prev = flag(fn, "fuse_with_prev", fuse_with_prev)
    (mm, kk, nn), shape = broadcast(
        fn,
        m=positive_int_array(fn, "m", m),
        k=positive_int_array(fn, "k", k),
        n=positive_int_array(fn, "n", n),
    )
    hw, chw, ceff = resolve(hardware, efficiency)
    check_te_support(fn, recipe, hw)
    rec = core_recipe(rec.name, hw)  # Float8CurrentScaling on TN-only fp8 GEMMs (sm90)
    require_peak(fn, hw, _core.DType.bf16)
    require_peak(fn, hw, lowp_dtype(rec.name))
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
        launch=launch,
        _args=(rec, md, fuse_with_prev, chw, ceff),
    )


def _linear_scalar(m: int, k: int, n: int, recipe: str, hardware: Any, mode: str,
                   fuse_with_prev: bool, efficiency: EfficiencyLike,
                   launch: str = "compiled") -> Float8Linear[Any]:
    """:func:`linear` for Python ints already checked, exact recipe / mode spellings and
    explicit hardware: the same result, without numpy."""
    fn = "float8.linear"
    md = MODES[mode]
    hw, chw, ceff, memo = resolve_cached(hardware, efficiency)
    key = ("float8", recipe, mode, fuse_with_prev)  # spellings: core enums hash slowly
    info = memo.get(key)
    if info is None:
        check_te_support(fn, recipe, hw)
        rec = core_recipe(recipe, hw)
        require_peak(fn, hw, _core.DType.bf16)
        require_peak(fn, hw, lowp_dtype(rec.name))
        try:
            one = _core.Float8LinearOne(rec, md, fuse_with_prev, chw, ceff)
        except ValueError as exc:
            raise ValueError(f"{fn}: {exc}") from None
        info = memo[key] = (one, rec, md.name)
    one, rec, md_name = info
    rec_name = rec.name
    bf16, lowp, cast = one(m, k, n)
    out = object.__new__(Float8Linear)
    out.__dict__.update(m=float(m), k=float(k), n=float(n), recipe=rec_name,
                        mode=md_name, fuse_with_prev=fuse_with_prev,
                        hardware=hw.name, bf16_s=bf16, fp8_gemm_s=lowp, fp8_overhead_s=cast,
                        launch=launch, _args=(rec, md, fuse_with_prev, chw, ceff))
    return out

