"""Attention of every variant: MHA / GQA / MQA / MLA, causal, decode, flash or materialized."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _core
from .._checks import (
    MAX_DIM,
    ArrayLike,
    broadcast,
    flag,
    one_of,
    positive_float,
    positive_int_array,
)
from .._dtypes import DTYPES, label
from .._dtypes import dtype as parse_dtype
from .._params.resolve import require_peak, resolve, resolve_cached, resolve_hardware
from .._params.threads import get_num_threads
from ..efficiency import EfficiencyLike
from ..estimate import Estimate, from_columns, from_scalars
from ..explain import peak_meta
from ..hardware import HardwareLike
from . import _engine_backends as engines

__all__ = ["BACKENDS", "attention", "attention_backend", "attention_kernels", "attention_pairs"]

#: Backend names ``backend=`` accepts: ``"auto"`` (what ``F.scaled_dot_product_attention``
#: dispatches to), PyTorch's four SDPA backends, and ``"standard"`` (the idealized fused kernel
#: of the standard model: FlashAttention-2 at its README's speed, FlashMLA for MLA).
#: The seven sizes of an attention call, broadcast: batch, heads, kv_heads, q_len, kv_len,
#: head_dim, v_head_dim.
Sizes = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: (shared_kv, causal, flash, backward)
Flags = tuple[bool, bool, bool, bool]


def _scalars(arrays: Sizes) -> tuple[float, float, float, float, float, float, float]:
    """The sizes of a scalar call as floats."""
    b, h, kvh, q, kv, d, dv = (float(a.reshape(-1)[0]) for a in arrays)
    return b, h, kvh, q, kv, d, dv


BACKENDS: tuple[str, ...] = ("auto", "flash", "cudnn", "efficient", "math", "standard",
                             "flash_triton", "flex", *engines.ENGINE_BACKENDS)

_STANDARD = _core.AttentionBackend.standard
#: Resolution order of the codes below (index = code = the core's AttentionBackend value).
_ORDER = ("standard", "flash", "cudnn", "efficient", "math", "fa3", "flashinfer", "flash_triton",
          "flex")
_CORE_BACKEND = {name: getattr(_core.AttentionBackend, name) for name in _ORDER}

#: dtype spellings the scalar fast path takes: the floating formats (attention has no integer
#: one); anything else goes through the full validation.
_FLOAT_SPELLINGS = frozenset(k for k, v in DTYPES.items()
                             if not label(v).lower().startswith(("int", "uint")))


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _prepare(
    fn: str,
    batch: ArrayLike,
    heads: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    head_dim: ArrayLike,
    kv_heads: ArrayLike | None,
    v_head_dim: ArrayLike | None,
    shared_kv: Any,
) -> tuple[Sizes, tuple[int, ...]]:
    h = positive_int_array(fn, "heads", heads)
    d = positive_int_array(fn, "head_dim", head_dim)
    arrays, shape = broadcast(
        fn,
        batch=positive_int_array(fn, "batch", batch),
        heads=h,
        kv_heads=h if kv_heads is None else positive_int_array(fn, "kv_heads", kv_heads),
        q_len=positive_int_array(fn, "q_len", q_len),
        kv_len=positive_int_array(fn, "kv_len", kv_len),
        head_dim=d,
        v_head_dim=d if v_head_dim is None else positive_int_array(fn, "v_head_dim", v_head_dim),
    )
    b, hh, kvh, q, kv, dd, dv = arrays
    bad = np.mod(hh, kvh) != 0
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(
            f"{fn}: kv_heads must divide heads, got kv_heads={int(kvh[i])}, heads={int(hh[i])}"
        )
    if flag(fn, "shared_kv", shared_kv):
        bad = dv > dd
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(
                f"{fn}: shared_kv=True needs v_head_dim <= head_dim (V is a slice of K), got "
                f"v_head_dim={int(dv[i])}, head_dim={int(dd[i])}"
            )
    return (b, hh, kvh, q, kv, dd, dv), shape


def _int_sizes(batch: Any, heads: Any, q_len: Any, kv_len: Any, head_dim: Any,
               kv_heads: Any, v_head_dim: Any, shared_kv: Any) -> tuple[int, ...] | None:
    """``(batch, heads, kv_heads, q_len, kv_len, head_dim, v_head_dim)`` when every size is a
    Python int :func:`_prepare` accepts (in range, ``kv_heads`` dividing ``heads``,
    ``v_head_dim <= head_dim`` under a bool ``shared_kv``); None for anything else
    (``_prepare`` checks it and names what is wrong)."""
    kvh = heads if kv_heads is None else kv_heads
    dv = head_dim if v_head_dim is None else v_head_dim
    sizes = (batch, heads, kvh, q_len, kv_len, head_dim, dv)
    if any(type(x) is not int or not 0 < x <= MAX_DIM for x in sizes):
        return None
    if heads % kvh or type(shared_kv) is not bool or (shared_kv and dv > head_dim):
        return None
    return sizes


def _dropout(fn: str, dropout_p: Any) -> bool:
    """Whether the call applies dropout: ``dropout_p`` checked as a probability in [0, 1]."""
    return positive_float(fn, "dropout_p", dropout_p, allow_zero=True, low=0.0, high=1.0) > 0


def _flags(fn: str, shared_kv: Any, causal: Any, flash: Any, backward: Any) -> Flags:
    """The four switches of an attention call, checked: (shared_kv, causal, flash, backward)."""
    return (flag(fn, "shared_kv", shared_kv), flag(fn, "causal", causal), flag(fn, "flash", flash),
            flag(fn, "backward", backward))


def _float_format(fn: str, dt: Any, dtype: Any) -> None:
    """Attention takes floating formats only (Q, K, V and softmax): no integer dtype."""
    if label(dt).lower().startswith(("int", "uint")):
        raise ValueError(f"{fn}: dtype must be a floating format (bf16, fp16, fp32, fp8, ...), "
                         f"got {dtype!r}")


def _arch(hw: Any) -> Any:
    """The core's SDPA architecture of ``hw`` (which backends exist there)."""
    from .._params.architecture import architecture

    return getattr(_core.SdpaArch, architecture(hw))


def _resolve_backend(fn: str, backend: Any, flash: bool) -> str:
    """The requested backend name, with ``flash=False`` meaning ``"math"``."""
    name = one_of(fn, "backend", backend, {b: b for b in BACKENDS})
    if not flash:
        if name == "standard":
            return "standard"  # the standard model's materialized formulas
        if name not in ("auto", "math"):
            raise ValueError(
                f"{fn}: flash=False means backend='math' (materialized scores), got "
                f"backend={backend!r}; drop flash=False or pass backend='math'"
            )
        return "math"
    return str(name)


def attention_backend(
    batch: ArrayLike,
    heads: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    head_dim: ArrayLike,
    kv_heads: ArrayLike | None = None,
    v_head_dim: ArrayLike | None = None,
    shared_kv: bool = False,
    causal: bool = False,
    backward: bool = False,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
) -> Any:
    """The backend ``backend="auto"`` resolves to: what ``F.scaled_dot_product_attention`` runs.

    Returns a backend name (``"cudnn"``, ``"flash"``, ``"efficient"``, ``"math"`` or
    ``"standard"``) for scalar sizes, an array of names otherwise.

    Notes
    -----
    PyTorch (``sdp_utils.cpp``, torch >= 2.10 with cuDNN > 9.15) tries the backends in order and
    takes the first whose constraints hold:

    1. **cuDNN** first on compute capability 9.x / 10.x (Hopper, datacenter Blackwell): fp16 /
       bf16, head dims <= 128 (or 192 / 128) and multiples of 8, ``kv_len != 1``.
    2. **flash** (FlashAttention-2), sm80 - sm121: fp16 / bf16, equal head dims <= 256, no
       backward with head dim in (192, 224] on sm86/89/120.
    3. **efficient** (CUTLASS memory-efficient), sm50 and newer: fp16 / bf16 / fp32 (bf16 from
       sm80), head dims multiples of 8 (4 for fp32).
    4. **math**: separate kernels, scores through DRAM.

    ``causal`` is bottom-right aligned; SDPA's ``is_causal`` is top-left, so with
    ``q_len != kv_len`` (and ``q_len > 1``) the mask runs through
    ``torch.nn.attention.bias.causal_lower_right``, whose dispatch skips cuDNN and tries flash
    (FlashAttention-2's own bottom-right mask; SDPA's non-square check only guards top-left),
    efficient, then math with the materialized mask.

    On ROCm there is no cuDNN; flash and efficient are AOTriton kernels sharing one head-dim
    check (equal head dims up to 512; efficient: multiples of 8, 4 in fp32), and
    ``backend="auto"`` is this dispatch itself, forward and backward alike.
    ``shared_kv`` (MLA in FlashMLA's absorbed form), formats SDPA does not take (fp8, fp4)
    and accelerators without a CUDA/ROCm SDPA (TPU, Gaudi) resolve to ``"standard"``: the
    idealized fused kernel (FlashMLA-style decode, FlashAttention-2-style prefill).
    The architecture comes from the accelerator's name (H100/H200/H800/H20/GH200: Hopper;
    B200/B300/GB200: Blackwell; A100/A10: Ampere; L4/L40S/RTX 4090: Ada; V100: Volta;
    unknown NVIDIA names: Ampere rules).
    """
    fn = "attention_backend"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    dt = parse_dtype(fn, dtype)
    _float_format(fn, dt, dtype)
    flags = [flag(fn, n, v) for n, v in
             (("shared_kv", shared_kv), ("causal", causal), ("backward", backward))]
    hw = resolve_hardware(hardware)
    _, _, _, q, kv, d, dv = arrays
    shared, causal_, backward_ = flags
    codes = _core.sdpa_backend_sweep(q, kv, d, dv, shared, causal_, backward_, dt, _arch(hw))
    names = np.array(_ORDER, dtype=object)[codes].reshape(shape)
    return str(names) if names.ndim == 0 else names


#: Backends that cannot run on an architecture at all (whatever the shape): cuDNN attention
#: is NVIDIA's (sm80 and newer); FlashAttention-2 needs sm80+ (or ROCm's AOTriton); CPUs
#: (architecture "other") run PyTorch's CPU flash kernel but neither cuDNN nor the CUTLASS one.
_IMPOSSIBLE = {
    "rocm": ("cudnn", "flash_triton"),
    "volta": ("cudnn", "flash", "flash_triton", "flex"),
    "other": ("cudnn", "efficient", "flash_triton", "flex"),
}

#: Accelerator vendors without any PyTorch SDPA kernel (TPU via XLA, Gaudi via its own).
_NO_SDPA_VENDORS = ("Google", "Intel")


def impossible_backends(hw: Any) -> tuple[str, ...]:
    """The fused SDPA backends that cannot run on ``hw`` at all."""
    from .._params.architecture import architecture

    arch = architecture(hw)
    if arch == "other" and getattr(hw, "vendor", "") in _NO_SDPA_VENDORS:
        return ("cudnn", "flash", "efficient", "flash_triton", "flex")
    return _IMPOSSIBLE.get(arch, ())


def _check_exists(fn: str, name: str, hw: Any) -> None:
    """ValueError when backend ``name`` does not exist on ``hw``'s architecture."""
    from .._params.architecture import architecture

    arch = architecture(hw)
    if name in impossible_backends(hw):
        why = {"cudnn": "cuDNN attention runs on NVIDIA GPUs of sm80 and newer",
               "flash": "FlashAttention-2 needs an NVIDIA sm80+ or an AMD ROCm GPU",
               "efficient": "the memory-efficient kernel needs an NVIDIA or AMD GPU",
               "flash_triton": "Triton FlashAttention needs an NVIDIA sm80+ GPU",
               "flex": "FlexAttention's Triton template needs an sm80+ or ROCm GPU"}[name]
        raise ValueError(f"{fn}: backend={name!r} does not exist on {hw.name} "
                         f"({getattr(hw, 'vendor', '') or arch}): {why}; pass backend='auto', "
                         f"'math' or 'standard'")


def _fixed_code(fn: str, backend: Any, flash: bool, ceff: Any, hw: Any = None) -> int | None:
    """The backend code (index in ``_ORDER``) every element runs on, or None for ``"auto"``
    under the shape-aware model (the least over its candidates, per element)."""
    name = _resolve_backend(fn, backend, flash)
    if name in engines.ENGINE_BACKENDS:
        return _ORDER.index(engines.core_name(name))
    if hw is not None:
        _check_exists(fn, name, hw)
    if name == "auto" or (name == "math" and backend == "auto"):
        if not ceff.shape_aware:
            # "peak", "constant", "torchao" and plain Efficiency objects keep the standard
            # formulas (fused kernel, or materialized scores for flash=False) exactly.
            return 0
        if name == "auto":
            return None
    return _ORDER.index(name)


def attention(
    batch: ArrayLike,
    heads: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    head_dim: ArrayLike,
    kv_heads: ArrayLike | None = None,
    v_head_dim: ArrayLike | None = None,
    shared_kv: bool = False,
    causal: bool = False,
    flash: bool = True,
    backward: bool = False,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    backend: str = "auto",
    dropout_p: float = 0.0,
    page_tokens: int | None = None,
) -> Estimate[Any]:
    """Estimate one attention call ``softmax(Q K^T / sqrt(d)) V`` (forward, or its backward).

    Parameters
    ----------
    batch : int or array_like of int
        Sequences.
    heads : int or array_like of int
        Query heads.
    q_len : int or array_like of int
        Queries per sequence: the prompt for prefill / training, 1 for decode (a few for
        speculative decoding or chunked prefill).
    kv_len : int or array_like of int
        Keys per sequence: cached tokens plus the new ones (``kv_len >= q_len`` in decode).
    head_dim : int or array_like of int
        Query/key head dimension (576 for MLA in FlashMLA's absorbed form).
    kv_heads : int or array_like of int, optional
        Key/value heads; must divide ``heads``. Default ``heads`` (MHA); fewer is GQA, 1 is
        MQA (and absorbed MLA).
    v_head_dim : int or array_like of int, optional
        Value/output head dimension; default ``head_dim`` (512 for absorbed MLA).
    shared_kv : bool
        V is the first ``v_head_dim`` columns of K (absorbed MLA: one latent cache), so the
        flash kernel reads the cache once for both.
    causal : bool
        Causal mask, bottom-right aligned: query ``i`` of ``q_len`` sees keys
        ``0 .. kv_len - q_len + i``. With ``q_len == kv_len`` this is the usual lower triangle.
    flash : bool
        ``False`` asks for materialized scores: ``backend="math"`` (with ``"standard"``: the
        standard model's materialized kernels; an error with a fused backend). Under the
        ``"peak"``, ``"constant"`` and ``"torchao"`` presets it is the standard QK^T GEMM,
        softmax, PV GEMM in the input precision, as before.
    backward : bool
        Estimate the backward pass only (dQ, dK, dV); add the forward for a training step.
    dtype : str
        Format of Q, K, V (``"bf16"``, ``"fp16"``, ``"fp8"``, ...). Outputs, scores and
        gradients are 16-bit when the inputs are narrower.
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    efficiency : {"default", "peak", "torchao"} or Efficiency
        Efficiency model; each kernel gets its own launch floor.
    backend : {"auto", "flash", "cudnn", "efficient", "math", "standard", "flash_triton", "flex", \
"fa3", "flashinfer", "flashmla"}
        Implementation. ``"auto"`` (default) is what ``F.scaled_dot_product_attention`` runs on
        that accelerator, dtype and shape (see :func:`attention_backend`: cuDNN on Hopper and
        datacenter Blackwell for fp16/bf16, FlashAttention-2 on Ampere/Ada/ROCm, memory-efficient
        where neither applies, math as the last resort). ``"flash"`` = FlashAttention-2 as SDPA
        runs it, ``"cudnn"`` = cuDNN fused attention, ``"efficient"`` = CUTLASS memory-efficient
        attention, ``"math"`` = SDPA's math path (separate kernels, scores through DRAM; 16-bit
        inputs are upcast and computed in fp32 as PyTorch >= 2.5 does), ``"standard"`` = the
        idealized fused kernel of the standard model (FlashAttention-2 at its README's speed,
        FlashMLA for MLA), which ``"auto"`` also picks for ``shared_kv``, for formats SDPA does
        not take (fp8) and for accelerators without CUDA/ROCm SDPA. Under the non-shape-aware
        presets ``"auto"`` keeps the standard formulas. Kernels outside SDPA (never picked by
        ``"auto"``): ``"flex"`` = PyTorch FlexAttention's Triton template (torch 2.8): FA2's
        work units at ``universal.flex.fwd_ratio`` / ``bwd_ratio`` of its forward / backward
        rate (published flex-vs-FA2 measurements); dense or causal here, its BlockMask's
        skipped blocks are :mod:`roofline.transformer.flex`'s; ``"flash_triton"`` = Tri Dao's
        Triton FlashAttention (llm-foundry's
        ``attn_impl: triton``): FA2's work at ``universal.flash_triton.ratio`` of its rate (A100,
        FA2's README charts); ``"fa3"`` = FlashAttention-3 (Hopper only; bf16/fp16 forward and
        backward, fp8 forward; head dims <= 256): warp-specialized TMA producer and two wgmma
        consumer warpgroups whose softmax ping-pongs against each other's GEMMs, tiles per head dim
        from its ``tile_size.h`` (``docs/serving_kernels.md``); ``"flashinfer"`` = FlashInfer's
        paged-KV kernels (decode: GQA heads packed into 16-row mma.sync tiles, split-KV; prefill:
        FA3's kernels on Hopper); ``"flashmla"`` = FlashMLA's MLA decode (absorbed form only,
        Hopper).
    dropout_p : float
        Dropout probability on the attention weights (``F.scaled_dot_product_attention``'s
        ``dropout_p``, training). A fused kernel draws random bits per score on the integer
        pipe: FlashAttention-2's Philox scheme, ``60/16 + 3`` instructions per score (one
        Philox-4x32-10 call per 16 scores, then extract, compare, select) at 64 integer lanes
        per SM per clock, added to the kernel's critical path; the backward regenerates the
        mask once. The math path (and the standard materialized kernels) run a separate dropout
        pass writing the probabilities and a one-byte mask (and its backward). The value of
        ``p`` does not change the time, only whether dropout runs; the non-shape-aware presets
        price only the materialized passes.
    page_tokens : int, optional
        Tokens per page of a paged KV cache (vLLM's / SGLang's block size) for ``"fa3"``,
        ``"flashinfer"`` and ``"flashmla"``; None = a contiguous cache. FA3 loads pages with
        TMA only when a page holds whole key blocks and the packed query rows exceed one tile;
        otherwise it gathers rows through the page table with narrower blocks and no TMA.

    Returns
    -------
    Estimate
        Floats for scalar inputs, arrays of the broadcast shape otherwise.

    Raises
    ------
    ValueError
        A non-positive or non-integral size, ``kv_heads`` not dividing ``heads``,
        ``shared_kv`` with ``v_head_dim > head_dim``, or ``flash=False`` with a fused backend.
    TypeError
        A flag that is not a bool, a size that is not a number, a backend that is not a string.
    KeyError
        An unknown backend name (the message lists close matches).

    Notes
    -----
    With ``B`` = batch, ``H`` = heads, ``G`` = kv_heads, ``d`` / ``dv`` the head dims and
    ``P`` the query-key pairs per (sequence, head) — ``q·kv``, or with the causal mask
    ``q·kv - q(q-1)/2`` when ``q <= kv`` (``q(q+1)/2`` when ``q == kv``, i.e. about half) and
    ``kv(kv+1)/2`` when ``q > kv`` — the FLOP convention counts matrix multiplies only, two
    FLOPs per multiply-add, as FlashAttention's benchmarks do:

    - flash forward: ``2·B·H·P·(d + dv)`` (``4·B·H·s²·d`` for ``q = kv = s``, ``d = dv``);
    - flash backward: ``2·B·H·P·(3d + 2dv)`` = 2.5x the forward for ``d = dv`` (it recomputes
      ``QK^T`` and runs four more GEMMs);
    - materialized: every score is computed (the mask is applied after the GEMM), forward
      ``2·B·H·q·kv·(d + dv)``, backward twice that (no recomputation).

    Softmax arithmetic (exp, max, sum) is not counted. Bytes assume every operand crosses
    DRAM exactly once per kernel: Q and O ``B·H·q·d`` elements, K and V ``B·G·kv·d`` — the KV
    cache is read once per kv head, not per query head, and with ``shared_kv`` once for K and
    V together — plus an fp32 log-sum-exp per query row (flash). Materialized attention also
    writes and reads the ``B·H·q·kv`` score and probability matrices; its GEMMs group the
    ``H/G`` query heads of one kv head so K and V are still read once. The backward pass
    writes dK / dV once per kv head (one latent gradient with ``shared_kv``) and, for flash,
    accumulates dQ in fp32 (FlashAttention-2's preprocess, main and dQ-conversion kernels).
    The default model ignores tile quantization of short sequences and exp throughput.

    Per backend the shape-aware model (``docs/model.md``, "Attention as SDPA runs it") keeps
    the same work units and changes only physics: the rate as a fraction of the GEMM rate
    (``mma.sync`` code - FlashAttention-2, memory-efficient - vs Hopper's native ``wgmma`` -
    cuDNN), tiles (cuDNN decode 16 x 128, memory-efficient 64 x 64 without split-KV), the
    backward's per-unit cost and a fixed GPU time per call. cuDNN's GQA backward writes dK / dV
    per query head in fp32 and reduces them per kv head in an extra kernel.
    """
    if (hardware is not None and type(dropout_p) in (int, float) and dropout_p == 0
            and type(dtype) is str and dtype in _FLOAT_SPELLINGS and type(shared_kv) is bool
            and type(causal) is bool and type(flash) is bool and type(backward) is bool
            and type(backend) is str and backend not in engines.PAGED_BACKENDS
            and page_tokens is None):
        fast = _attention_scalar(batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim,
                                 shared_kv, causal, flash, backward, dtype, hardware, efficiency,
                                 backend)
        if fast is not None:
            return fast
    fn = "attention"
    sized = _int_sizes(batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv)
    arrays, shape = (cast(Sizes, tuple(np.array([x], dtype=np.float64) for x in sized)), ()) \
        if sized else _prepare(fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim,
                               shared_kv)
    dt = parse_dtype(fn, dtype)
    _float_format(fn, dt, dtype)
    flags = _flags(fn, shared_kv, causal, flash, backward)
    drop = _dropout(fn, dropout_p)
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    code = _fixed_code(fn, backend, flags[2], ceff, hw)
    page = _engine(fn, backend, page_tokens, hw, dt, dtype, arrays, flags)
    if code is None:
        cols, winners = _core.attention_auto_sweep(*arrays, *flags, dt, chw, ceff, _arch(hw),
                                                   get_num_threads(), drop)
        names = sorted({_ORDER[int(c)] for c in np.unique(winners)})
    else:
        cols = _sweep(arrays, flags, dt, chw, ceff, code, page, drop)
        ran = str(backend).strip().lower()
        names = [ran if ran in engines.ENGINE_BACKENDS else _ORDER[code]]
    kind = "/".join(names) + (" bwd" if flags[3] else "")
    return from_columns(cols, shape, label=f"attention {kind} {label(dt)}", hardware=hw.name,
                        meta=peak_meta(hw, dt))


def _attention_scalar(batch: Any, heads: Any, q_len: Any, kv_len: Any, head_dim: Any,
                      kv_heads: Any, v_head_dim: Any, shared_kv: bool, causal: bool, flash: bool,
                      backward: bool, dtype: str, hardware: Any, efficiency: EfficiencyLike,
                      backend: str) -> Estimate[Any] | None:
    """:func:`attention` for Python-int sizes, bool flags, a floating dtype spelling and
    explicit hardware: one core call, no numpy. None where the input needs the full path (a
    size out of range, kv_heads not dividing heads, ...; it raises there) or the result is not
    a finite time (the full path raises its error)."""
    sized = _int_sizes(batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv)
    if sized is None:
        return None
    kvh, dv = sized[2], sized[6]
    hw, chw, ceff, memo = resolve_cached(hardware, efficiency)
    key = ("attention", dtype)  # the spelling: a core enum hashes slowly
    info = memo.get(key)
    if info is None:
        dt = DTYPES[dtype]
        require_peak("attention", hw, dt)
        info = memo[key] = (label(dt), peak_meta(hw, dt),
                            _core.AttentionOne(chw, ceff, dt, _arch(hw)))
    name, meta, one = info
    if backend == "auto" and flash:
        code = None if ceff.shape_aware else 0
    else:
        code = _fixed_code("attention", backend, flash, ceff, hw)
    if code is None:
        values = one(batch, heads, kvh, q_len, kv_len, head_dim, dv, shared_kv, causal, True,
                     backward, _STANDARD, True)
    else:
        kind = _ORDER[code]
        values = one(batch, heads, kvh, q_len, kv_len, head_dim, dv, shared_kv, causal,
                     flash if kind == "standard" else kind != "math", backward,
                     _CORE_BACKEND[kind], False)
    if not 0.0 <= values[0] < math.inf:
        return None
    ran = _ORDER[values[6]] + (" bwd" if backward else "")
    return from_scalars(values[:6], f"attention {ran} {name}", hw.name, dict(meta))


def _sweep(arrays: Sizes, flags: Flags, dt: Any, chw: Any, ceff: Any,
           code: int, page: float = 0.0, dropout: bool = False) -> Any:
    """One core sweep with every element on backend ``_ORDER[code]``."""
    name = _ORDER[code]
    # The standard model keeps its flash flag; every SDPA backend but math is a fused kernel.
    flash = flags[2] if name == "standard" else name != "math"
    return _core.attention_sweep(*arrays, flags[0], flags[1], flash, flags[3], dt, chw, ceff,
                                 _CORE_BACKEND[name], dropout, page)


def _engine(fn: str, backend: Any, page_tokens: Any, hw: Any, dt: Any, dtype: Any,
            arrays: Sizes, flags: Flags) -> float:
    """Checks of an engine kernel (FA3, FlashInfer, FlashMLA) and ``page_tokens`` as a float
    (0: a contiguous cache)."""
    name = str(backend).strip().lower()
    if name in engines.ENGINE_BACKENDS:
        engines.check(fn, name, hw, dt, dtype, arrays, flags[0], flags[3])
    return engines.check_page_tokens(fn, page_tokens, name)


def attention_kernels(
    batch: int,
    heads: int,
    q_len: int,
    kv_len: int,
    head_dim: int,
    kv_heads: int | None = None,
    v_head_dim: int | None = None,
    shared_kv: bool = False,
    causal: bool = False,
    flash: bool = True,
    backward: bool = False,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    backend: str = "auto",
    dropout_p: float = 0.0,
    page_tokens: int | None = None,
) -> list[dict[str, Any]]:
    """Every kernel of one (scalar) attention call: name, FLOPs, bytes read/written, times,
    ``launches`` (an entry may stand for several launches of one kind, e.g. the math path's
    three upcasts).

    Same arguments (``backend=`` included) and formulas as :func:`attention`; returns a list of
    dicts (one per kernel, with the resolved ``"backend"``) that ``pandas.DataFrame`` accepts.
    """
    fn = "attention_kernels"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    if shape != ():
        raise ValueError(f"{fn}: sizes must be scalars, got arrays of shape {shape}")
    dt = parse_dtype(fn, dtype)
    _float_format(fn, dt, dtype)
    flags = _flags(fn, shared_kv, causal, flash, backward)
    drop = _dropout(fn, dropout_p)
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    code = _fixed_code(fn, backend, flags[2], ceff, hw)
    page = _engine(fn, backend, page_tokens, hw, dt, dtype, arrays, flags)
    if code is None:
        one = _core.AttentionOne(chw, ceff, dt, _arch(hw))
        code = int(one(*_scalars(arrays), *flags, _STANDARD, True)[6])
    name = _ORDER[code]
    flash_flag = flags[2] if name == "standard" else name != "math"
    rows: list[dict[str, Any]] = _core.attention_kernels(
        *_scalars(arrays), flags[0], flags[1], flash_flag, flags[3], dt, chw, ceff,
        _CORE_BACKEND[name], drop, page
    )
    for row in rows:
        row["backend"] = name
    return rows


def attention_pairs(q_len: ArrayLike, kv_len: ArrayLike, causal: bool = False) -> Any:
    """Query-key pairs scored per (sequence, head).

    Notes
    -----
    ``q·kv`` without a mask. Causal (bottom-right aligned, query ``i`` sees
    ``kv - q + i + 1`` keys, clipped to ``[0, kv]``): ``q·kv - q(q-1)/2`` for ``q <= kv``,
    ``kv(kv+1)/2`` for ``q > kv``.
    """
    fn = "attention_pairs"
    (q, kv), shape = broadcast(
        fn, q_len=positive_int_array(fn, "q_len", q_len),
        kv_len=positive_int_array(fn, "kv_len", kv_len),
    )
    c = flag(fn, "causal", causal)
    out = np.array([_core.attention_pairs(a, b, c) for a, b in zip(q, kv, strict=True)])
    out = out.reshape(shape)
    return float(out) if out.ndim == 0 else out
