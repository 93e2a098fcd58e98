"""Row-wise ops: ``rl.rmsnorm``, ``rl.layernorm``, ``rl.softmax``, ``rl.cross_entropy``."""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from .. import _core
from .._checks import (
    ArrayLike,
    Scalar,
    broadcast,
    flag,
    one_of,
    positive_int_array,
)
from .._dtypes import dtype as parse_dtype
from .._dtypes import label
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike
from ..estimate import Array, Estimate, from_columns, inputs_meta
from ..explain import peak_meta
from ..hardware import HardwareLike

#: Implementations of the row-wise ops (``backend=``).
ROW_BACKENDS = {
    "fused": _core.RowBackend.fused,
    "eager": _core.RowBackend.eager,
    "compiled": _core.RowBackend.compiled,
}


def _row_op(
    fn: str,
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any,
    hardware: HardwareLike,
    backward: Any,
    save_stats: Any,
    efficiency: EfficiencyLike,
    backend: str,
    cols_name: str = "cols",
) -> Estimate[Any]:
    be = one_of(fn, "backend", backend, ROW_BACKENDS)
    dt = parse_dtype(fn, dtype)
    bwd = flag(fn, "backward", backward)
    stats = flag(fn, "save_stats", save_stats)
    arrays, shape = broadcast(
        fn,
        rows=positive_int_array(fn, "rows", rows),
        **{cols_name: positive_int_array(fn, cols_name, cols)},
    )
    hw, chw, ceff = resolve(hardware, efficiency)
    rows_a, cols_a = arrays
    cols_out = _core.row_op_sweep(getattr(_core.RowOp, fn), rows_a, cols_a, dt, bwd, stats, chw,
                                  ceff, be)
    what = f"{fn}{' backward' if bwd else ''}{'' if be.name == 'fused' else ' ' + be.name}"
    lab = f"{what} {label(dt)}"
    if np.ndim(rows) == 0 and np.ndim(cols) == 0:
        lab = f"{what} {int(rows)}x{int(cols)} {label(dt)}"
    return from_columns(cols_out, shape, label=lab, hardware=hw.name,
                        meta={**peak_meta(hw, _core.DType.fp32), **inputs_meta(
                            shape, dict(zip(("rows", cols_name), arrays, strict=True)),
                            dtype=label(dt))})


@overload
def rmsnorm(
    rows: Scalar,
    cols: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def rmsnorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def rmsnorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate one RMSNorm kernel, ``y = x / sqrt(mean(x²) + eps) * w``, over rows of ``cols``.

    Parameters
    ----------
    rows, cols : int or array_like of int
        Rows (tokens) and the normalized width (hidden size). Arrays broadcast.
    dtype : str
        Format of x, y, the weight and the gradients (``"bf16"``, ``"fp32"``, ...).
    hardware : Hardware or str, optional
        Accelerator (see :func:`gemm`).
    backward : bool
        The backward pass alone (dx and dw) instead of the forward.
    save_stats : bool
        Forward only: also write the fp32 ``rstd`` per row for a backward pass (training).
    backend : {"fused", "eager", "compiled"}
        Implementation. ``"fused"`` (default; what ``rl.transformer`` assumes): one good kernel
        whose tensors cross DRAM once. ``"eager"``: PyTorch's aten CUDA kernels (one vectorized
        kernel per norm that re-reads rows above 1024 columns; softmax: a warp-per-row kernel
        up to 1024 columns, else one 1024-thread CTA per row, re-reading rows too long for shared
        memory; cross entropy: log_softmax, which writes the full log-probabilities, plus
        nll_loss). ``"compiled"``: torch.compile's Inductor reduction (persistent up to 1024
        columns, looped above, re-reading the row). See Notes and docs/model.md.
    efficiency : {"default", "constant", "peak", "torchao"} or Efficiency
        Efficiency model.

    Notes
    -----
    With ``b`` bytes per element, R rows and C columns, one streaming kernel
    (``KernelKind::memory``: latency plus achievable bandwidth in the default model):

    - forward: reads ``R·C·b`` (x) + ``C·b`` (w); writes ``R·C·b`` (y) + ``4·R`` with
      ``save_stats``; FLOPs ``4·R·C`` (square, accumulate, two multiplies).
    - backward: reads ``2·R·C·b`` (dy, x) + ``C·b`` (w) + ``4·R`` (saved rstd); writes
      ``R·C·b`` (dx) + ``4·C`` (dw accumulated in fp32; per-CTA partial rows and their final
      reduction are not counted); FLOPs ``9·R·C``.

    FLOPs run at the fp32 vector peak; per-row work (rsqrt) is not counted. With the
    ``"fused"`` backend each tensor crosses DRAM once (rows fit on chip). ``"eager"`` and
    ``"compiled"`` keep these compulsory bytes (eager always writes the statistics) and add, in
    the default model only: re-reads of rows after their reduction (a fitted fraction of a DRAM
    pass while the rows in flight fit in half the L2, a full pass beyond), waves of rows over the
    SMs, transcendentals (exp, division) that follow a row's loads, and extra kernels (compiled
    backward: a second kernel for dw that reads dy and x again). The ``"peak"``, ``"constant"``
    and ``"torchao"`` presets see only the compulsory bytes, FLOPs and kernel count.
    """
    return _row_op("rmsnorm", rows, cols, dtype, hardware, backward, save_stats, efficiency,
                   backend)


@overload
def layernorm(
    rows: Scalar,
    cols: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def layernorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def layernorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate one LayerNorm kernel, ``y = (x - mean) / sqrt(var + eps) * w + b``.

    Parameters are those of :func:`rmsnorm` (``backend`` too); ``save_stats`` writes the fp32
    mean and rstd.

    Notes
    -----
    With ``b`` bytes per element, R rows and C columns, one streaming kernel:

    - forward: reads ``R·C·b`` (x) + ``2·C·b`` (weight, bias); writes ``R·C·b`` (y) +
      ``8·R`` (mean, rstd) with ``save_stats``; FLOPs ``7·R·C`` (sum; center, square,
      accumulate; scale, weight, bias).
    - backward: reads ``2·R·C·b`` (dy, x) + ``C·b`` (weight) + ``8·R`` (mean, rstd);
      writes ``R·C·b`` (dx) + ``8·C`` (dw and db accumulated in fp32); FLOPs ``13·R·C``.

    FLOPs run at the fp32 vector peak; per-row work is not counted.
    """
    return _row_op("layernorm", rows, cols, dtype, hardware, backward, save_stats, efficiency,
                   backend)


@overload
def softmax(
    rows: Scalar,
    cols: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def softmax(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def softmax(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate one row-wise softmax kernel over ``rows`` rows of ``cols`` elements.

    Parameters are those of :func:`rmsnorm` (no statistics: the backward needs only y), with
    ``backend`` as there.

    Notes
    -----
    Forward: reads ``R·C·b`` (x), writes ``R·C·b`` (y), FLOPs ``5·R·C`` (max, subtract, exp,
    sum, scale; exp counted as one FLOP). Backward, ``dx = y·(dy - Σ dy·y)``: reads
    ``2·R·C·b`` (y, dy), writes ``R·C·b`` (dx), FLOPs ``4·R·C``. ``"fused"``: one streaming
    kernel; a row crosses DRAM once (online softmax keeps very long rows to one pass as well).
    ``"eager"`` (aten): rows of at most 1024 elements and 4096 bytes run a warp-per-row kernel;
    longer rows one 1024-thread CTA per row and SM, from shared memory up to ~48 KiB rows, else
    reading the row three times (max, sum of exp, output); three transcendentals per element
    (two exps and a division); the backward first multiplies dy·y in a separate kernel.
    ``"compiled"``: one Inductor reduction; above 1024 columns a looped one that reads the row
    again for the output; three transcendentals per element (online max/sum, then the output).
    """
    return _row_op("softmax", rows, cols, dtype, hardware, backward, False, efficiency, backend)


def log_softmax_eager(rows: ArrayLike, cols: ArrayLike, dtype: Any = "bf16",
                      hardware: HardwareLike = None, *, backward: bool = False,
                      backend: str = "eager", efficiency: EfficiencyLike = "default"
                      ) -> Estimate[Any]:
    """:func:`softmax`'s kernels for ``log_softmax`` (what ``_log_softmax`` /
    ``_log_softmax_backward_data`` launch); the same forward. The backward is one kernel,
    ``dx = dy - exp(y)·Σ dy`` (aten's ``log_softmax_backward_cuda_out`` has no ``dy·y``
    kernel, unlike softmax's): reads ``2·R·C·b`` (dy, y), writes ``R·C·b`` (dx); the eager
    block kernel reads dy again after its sum when the row is not cached (one exp per
    element). Internal: priced by the op registry, not a public row op."""
    return _row_op("log_softmax", rows, cols, dtype, hardware, backward, False, efficiency,
                   backend)


@overload
def cross_entropy(
    rows: Scalar,
    vocab: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def cross_entropy(
    rows: ArrayLike,
    vocab: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def cross_entropy(
    rows: ArrayLike,
    vocab: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate a fused cross-entropy kernel over logits of shape ``rows x vocab``.

    Parameters
    ----------
    rows, vocab : int or array_like of int
        Tokens and vocabulary size. Arrays broadcast.
    dtype : str
        Format of the logits and of their gradient.
    backward : bool
        The backward pass alone: the gradient of the logits.
    save_stats : bool
        Forward only: also write the fp32 log-sum-exp per row for the backward.
    backend : {"fused", "eager", "compiled"}
        ``"fused"`` (default): the kernel below. ``"eager"``: ``F.cross_entropy`` as aten runs
        it, log_softmax (writes the R·V log-probabilities; rows above ~24 K bf16 logits are read
        three times) plus nll_loss; the backward fills a zero gradient, scatters the labels and
        runs log_softmax's backward (3 kernels). ``"compiled"``: Inductor's fused reduction
        (online log-sum-exp in fp32: two exps per logit) plus the mean over rows (2 kernels).

    Notes
    -----
    With ``b`` bytes per logit and R rows of V logits, labels int64, loss fp32, one
    streaming kernel:

    - forward: reads ``R·V·b`` (logits) + ``8·R`` (labels); writes ``4·R`` (loss) + ``4·R``
      (log-sum-exp) with ``save_stats``; FLOPs ``4·R·V`` (max, subtract, exp, sum).
    - backward: reads ``R·V·b`` (logits) + ``8·R`` (labels) + ``4·R`` (log-sum-exp) +
      ``4·R`` (per-row loss gradient; a mean reduction reads one scalar instead); writes
      ``R·V·b`` (the logits' gradient); FLOPs ``4·R·V`` (subtract lse, exp, subtract the
      one-hot label, scale).

    FLOPs run at the fp32 vector peak. Chunked / fused-linear cross entropy (Liger), which
    never materializes the logits, is a GEMM plus this kernel's per-chunk traffic.
    """
    return _row_op(
        "cross_entropy", rows, vocab, dtype, hardware, backward, save_stats, efficiency,
        backend, cols_name="vocab",
    )
