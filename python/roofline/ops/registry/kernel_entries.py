"""Entries of GPU work named by its kernel or event rather than an aten op: Inductor (Triton)
kernels, memset / device-to-device memcpy, and collectives (NCCL kernels of a trace and the
functional collectives of a live dispatch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...float8.casts import cast_kernels
from ..collectives import all_gather, all_reduce, all_to_all, reduce_scatter, send_recv
from ..elementwise import elementwise
from .call import Call, TensorArg
from .memory_entries import stream
from .pricer import Pricer
from .row_entries import row_op
from .table import Priced, register, register_family

# Inductor kernels whose name says they are a norm or softmax
_TRITON_ROWS = (("native_layer_norm", "layernorm"), ("rms_norm", "rmsnorm"),
                ("rsqrt", "rmsnorm"), ("_log_softmax", "softmax"), ("_softmax", "softmax"))


def _triton(call: Call, p: Pricer) -> Priced:
    """An Inductor kernel: with its inputs and outputs known (a program that records what
    the kernel fused: ``transformer.estimate(runtime="compiled")``, ``roofline.torch``'s
    compiled launch), one memory pass reading the inputs and writing the outputs; from a
    trace (arguments only), the row op its name says (``backend="compiled"``), else one pass
    over every tensor argument (its inputs and outputs)."""
    if call.outputs is not None:
        return stream(call, p, "kernel", "memory")
    call = _scattered_buffer(_token_rows(call))
    got = _log_softmax_stats(call, p)
    if got is not None:
        return got
    for key, fn in _TRITON_ROWS:
        if key in call.name:
            backward = "backward" in call.name
            x = _row_operand(call, call.tensor(1 if backward and fn != "softmax" else 0))
            if x is None or x.dtype_name is None or not x.shape:
                return None, f"{call.name}: no input shape / type to price"
            return _at_least_its_buffers(call, p, row_op(
                p, fn, x, x.shape[-1], backward, "compiled", fn != "softmax" and not backward))
    for special in (_column_cast, _looped_cast):
        got = special(call, p)
        if got is not None:
            return got
    return stream(call, p, "kernel", "memory")


def _at_least_its_buffers(call: Call, p: Pricer, got: Priced) -> Priced:
    """A row op Inductor fused with other work (a residual add, a scaled fp8 cast of its
    output, a gathered embedding): never faster than one streaming pass over every buffer
    the kernel takes (each moves at least once), whichever of the two is slower."""
    costs, how = got
    if not costs:
        return got
    alt, how_alt = stream(call, p, "kernel", "memory")
    if alt and float(alt[0][1].time_s) > float(costs[0][1].time_s):
        return [(costs[0][0], alt[0][1])], f"{how_alt}: the row op fused with more buffers"
    return got


def _token_rows(call: Call) -> Call:
    """An Inductor kernel that fuses an embedding touches the token rows of its (vocab x
    hidden) table, not the whole table its arguments record: the forward gathers them (read
    once), ``embedding_dense_backward`` scatter-adds one gradient row per token into the fp32
    accumulator a separate kernel zeroed (read and written: 2 x tokens x hidden elements).
    Tokens: the integer ids' element count. Other kernels unchanged."""
    if not call.name.startswith("triton_") or "embedding" not in call.name:
        return call
    per_token = 2 if "embedding_dense_backward" in call.name else 1
    ts = call.tensors()
    tokens = max((t.numel for t in ts if t.dtype_name is None and t.itemsize == 8), default=0)
    if tokens <= 0:
        return call
    out = []
    changed = False
    for x in call.inputs:
        if isinstance(x, TensorArg) and x.dtype_name is not None and len(x.shape) == 2 \
                and x.shape[0] > tokens and x.shape[1] > 1:
            x = TensorArg((per_token * tokens, x.shape[1]), x.dtype_name, x.itemsize)
            changed = True
        out.append(x)
    return dataclasses.replace(call, inputs=tuple(out)) if changed else call


#: Ops that write into a buffer at indexed positions (in place: the buffer is an argument).
_SCATTER_OPS = ("index_copy", "index_put", "scatter")

#: How much larger than the kernel's largest other floating operand an argument must be to be
#: the scattered-into buffer rather than a source (a KV cache: thousands of slots per token).
_SCATTER_RATIO = 4


def _scattered_buffer(call: Call) -> Call:
    """An Inductor kernel that ``index_copy`` / ``index_put`` / ``scatter``-writes into a
    buffer (HF StaticCache's ``index_copy_`` of the new K / V into the cache, functionalized
    and fused into the RoPE kernel) touches only the slots it writes: its grid covers the
    source elements, each read once and stored once into the buffer. A trace records the
    whole buffer as an argument: the one floating argument more than :data:`_SCATTER_RATIO` x
    the largest other floating operand stands for that many written elements (same dtype). H200
    decode at batch 64 (a 64 x 8 x 4097 x 128 bf16 cache, 64 x 1024 new elements): 1.2-1.8 us
    measured, not a pass over the 537 MB cache. Other kernels unchanged."""
    if not call.name.startswith("triton_") or not any(o in call.name for o in _SCATTER_OPS):
        return call
    floats = [t for t in call.tensors() if t.dtype_name is not None]
    big = max((t.numel for t in floats), default=0)
    rest = [t.numel for t in floats if t.numel != big]
    if len(floats) - len(rest) != 1 or not rest or big <= _SCATTER_RATIO * max(rest):
        return call
    src = max(rest)
    out = [TensorArg((src,), x.dtype_name, x.itemsize)
           if isinstance(x, TensorArg) and x.dtype_name is not None and x.numel == big else x
           for x in call.inputs]
    return dataclasses.replace(call, inputs=tuple(out))


def _log_softmax_stats(call: Call, p: Pricer) -> Priced | None:
    """The forward pass of a compiled log_softmax / cross-entropy over a long row, from a
    trace: Inductor's ``prepare_softmax_online`` kernel reads the logits once and writes only
    each row's max and sum of exponentials (the log-probabilities are never stored; the
    loss gathers them in a small kernel after it). That is the compiled cross-entropy
    forward (``rl.cross_entropy(rows, vocab, backend="compiled")``: one read of the logits,
    one CTA per row looping over the vocabulary), not a softmax that writes its output.
    None: not that kernel."""
    ops = _ops(call.name, "red")
    if ops is None or "backward" in call.name or "prepare_softmax_online" not in call.name \
            or "_log_softmax_" not in call.name:
        return None
    x = _row_operand(call, call.tensor(0))
    if x is None or x.dtype_name is None or len(x.shape) < 2 or x.shape[-1] < 2:
        return None
    vocab = x.shape[-1]
    rows = x.numel // vocab
    e = p.row("cross_entropy", rows, vocab, x.dtype_name, "compiled")
    return [("norm", e)], (f"{call.name}: log_softmax statistics (max, sum of exp) per row: "
                           f"rl.cross_entropy({rows}, {vocab}, dtype={x.dtype_name!r}, "
                           "backend='compiled')")


def _row_operand(call: Call, first: TensorArg | None) -> TensorArg | None:
    """The rows x cols operand of an Inductor row reduction (norm, softmax), from a trace.

    Inductor passes a fused kernel's buffers in its own order; a row reduction that writes a
    per-row statistic (rstd, mean, logsumexp: fp32, one element per row, shape ``(..., rows,
    1)``) often passes that buffer first. Then the operand is the largest argument with as
    many rows (its last dim the row length), not the statistic; otherwise ``first`` (the
    argument the aten op's position names) stands. A fused embedding's table (vocab rows) or
    token ids (integers) are never the operand."""
    if first is None or len(first.shape) < 2 or first.shape[-1] != 1 or \
            first.dtype_name is None:
        return first
    rows = first.numel
    same = [t for t in call.tensors() if t.dtype_name is not None and len(t.shape) >= 2
            and t.shape[-1] > 1 and t.numel == rows * t.shape[-1]]
    return max(same, key=lambda t: t.numel) if same else first


# Inductor names a fused kernel ``triton_{poi,red,per}_fused_`` + its ops, sorted, joined by
# ``_`` (then an index): torchao's power-of-two scale is ``exp2(floor(log2(...)))`` and
# ``reciprocal``, its transposed output ``t`` / ``transpose``.
_SCALE_OPS = frozenset({"exp2", "floor", "log2", "reciprocal"})


def _ops(name: str, kind: str) -> frozenset[str] | None:
    """The op-name tokens of an Inductor kernel ``triton_<kind>_fused_...``; None otherwise."""
    prefix = f"triton_{kind}_fused_"
    return frozenset(name[len(prefix):].split("_")) if name.startswith(prefix) else None


def _column_cast(call: Call, p: Pricer) -> Priced | None:
    """torchao's column-scaled cast written transposed (rowwise recipe, dim 1), from a trace:
    the largest 2-D bf16 argument (d0 x d1, its batch dims folded into d0) is read with its
    1-element-per-column scales and written transposed in fp8. Its rate is the cast model's
    column-scaled cast (``rl.float8.cast_kernels(d0, d1, "rowwise", transpose=True)``: reads
    strided across rows, partial sectors), so the trace and ``rl.float8.linear`` agree; the
    traffic is every recorded input plus the fp8 copy and fp32 scales. None: not that kernel."""
    ops = _ops(call.name, "poi")
    if ops is None or not _SCALE_OPS <= ops or not ops & {"t", "transpose"} or "clone" in ops:
        # ``clone``: a contiguous copy written in the layout it reads (the ``t`` is a view of
        # an already transposed operand): coalesced, one streaming pass (50-60 % of the DRAM
        # roofline in the H200 float8 traces, against 8-12 % for the transposing casts)
        return None
    dims = _largest_bf16(call)
    if dims is None:
        return None
    d0, d1 = dims
    read = sum(t.nbytes for t in call.tensors())
    return _at_cast_rate(call, p, read, d0 * d1 + 4 * d1, d0, d1, True,
                         "torchao column-scaled cast written transposed")


def _largest_bf16(call: Call) -> tuple[int, int] | None:
    """(d0, d1) of the largest 2-D-or-more bf16 argument, batch dims folded into d0."""
    ts = [t for t in call.tensors() if t.dtype_name == "bf16" and len(t.shape) >= 2]
    if not ts:
        return None
    x = max(ts, key=lambda t: t.numel)
    d1 = x.shape[-1]
    d0 = x.numel // max(d1, 1)
    return (d0, d1) if d0 > 1 and d1 > 1 else None


def _at_cast_rate(call: Call, p: Pricer, read: int, written: int, d0: int, d1: int,
                  transpose: bool, what: str) -> Priced:
    """``read`` + ``written`` bytes at the rate of the cast model's last kernel of a rowwise
    cast of d0 x d1 (never faster than one streaming pass)."""
    base = p.traffic(read, written, 0.0, call.base)

    def make() -> Any:
        row = cast_kernels(d0, d1, "rowwise", p.hardware, transpose=transpose,
                           efficiency=p.efficiency).iloc[-1]
        per_byte = float(row["memory_s"]) / float(row["bytes_read"] + row["bytes_written"])
        mem = per_byte * (read + written)
        if mem <= float(base.memory_s):
            return base
        return dataclasses.replace(base, memory_s=mem,
                                   time_s=float(base.time_s) + mem - float(base.memory_s))

    e = p.cached((what, d0, d1, read, written, call.base), make)
    return [("memory", e)], (
        f"{call.name}: {what}, {d0}x{d1} bf16: {read} B read, {written} B written at the "
        f"float8 cast model's rate (rl.float8.cast_kernels(..., 'rowwise', "
        f"transpose={transpose}))")


def _looped_cast(call: Call, p: Pricer) -> Priced | None:
    """torchao's amax and scaled cast fused in one looped Inductor reduction, from a trace: the
    first loop reduces the amax over the reduction axis, the second reads the operand again to
    scale and store (Inductor names a reduction kept in registers ``per``; ``red`` loops), and
    the tiles in flight exceed the L2, so the re-read is a second DRAM pass. Traffic: every
    recorded argument plus that re-read of the largest bf16 operand, at the cast model's
    looped row-cast rate (``row_fraction``). None: not that kernel."""
    ops = _ops(call.name, "red")
    if ops is None or not _SCALE_OPS | {"amax"} <= ops:
        return None
    dims = _largest_bf16(call)
    if dims is None:
        return None
    d0, d1 = dims
    read = sum(t.nbytes for t in call.tensors()) + 2 * d0 * d1
    return _at_cast_rate(call, p, read, 0, d0, d1, False,
                         "amax + scaled cast in one looped reduction (operand read twice)")


register_family("Inductor (Triton) kernels", lambda c: c.name.startswith("triton_"), "kernel",
                "elementwise", _triton)


@register("cuda::memset", kind="kernel", op="elementwise")
def memset(call: Call, p: Pricer) -> Priced:
    """A memset event: its recorded bytes written."""
    n = int(call.arg("bytes", default=0))
    e = p.cached(("memset", n), lambda: elementwise(
        n, reads=0, writes=1, dtype="int8", hardware=p.hardware, efficiency=p.efficiency))
    return [("memory", e)], f"memset: {n} B written (rl.elementwise)"


@register("cuda::memcpy_dtod", kind="kernel", op="elementwise")
def memcpy(call: Call, p: Pricer) -> Priced:
    """A device-to-device memcpy event: its recorded bytes read and written."""
    n = int(call.arg("bytes", default=0))
    e = p.cached(("memcpy", n), lambda: elementwise(
        n, reads=1, writes=1, dtype="int8", hardware=p.hardware, efficiency=p.efficiency))
    return [("memory", e)], f"memcpy DtoD: {n} B read and written (rl.elementwise)"


_COLLECTIVES: dict[str, Callable[..., Any]] = {
    "all_reduce": all_reduce, "all_gather": all_gather, "reduce_scatter": reduce_scatter,
    "all_to_all": all_to_all,
}


def _collective(fn: str) -> Callable[[Call, Pricer], Priced]:
    def price(call: Call, p: Pricer) -> Priced:
        """A collective over ``args["nbytes"]`` (the gathered output for all-gather, else the
        input) and ``args["ranks"]``."""
        nb, ranks = call.arg("nbytes"), call.arg("ranks")
        if nb is None and call.outputs is not None:
            src = call.outputs if fn == "all_gather" else [call.arg("input")]
            nb = sum(t.nbytes for t in src if t is not None)
        if nb is None or ranks is None:
            return None, f"{call.name}: message size / group size unknown"
        if int(nb) == 0:
            return [], f"{call.name}: empty message"
        if fn == "send_recv":
            return [("collective", send_recv(int(nb), hardware=p.hardware))], \
                f"rl.collectives.send_recv({int(nb)})"
        e = _COLLECTIVES[fn](int(nb), int(ranks), hardware=p.hardware)
        return [("collective", e)], f"rl.collectives.{fn}({int(nb)}, {int(ranks)})"

    return price


for _fn, _names in {
    "all_reduce": ("nccl::all_reduce", "_c10d_functional::all_reduce",
                   "_c10d_functional::all_reduce_", "c10d_functional::all_reduce",
                   "c10d::all_reduce"),
    "all_gather": ("nccl::all_gather", "_c10d_functional::all_gather_into_tensor",
                   "c10d_functional::all_gather_into_tensor"),
    "reduce_scatter": ("nccl::reduce_scatter", "_c10d_functional::reduce_scatter_tensor",
                       "c10d_functional::reduce_scatter_tensor"),
    "all_to_all": ("nccl::all_to_all", "_c10d_functional::all_to_all_single",
                   "c10d_functional::all_to_all_single"),
    "send_recv": ("nccl::send_recv",),
}.items():
    register(*_names, kind="collective", op=_fn)(_collective(_fn))
