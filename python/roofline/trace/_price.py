"""Price one traced op (its aten name, recorded shapes and types) with the public API.

Every prediction is an existing ``rl.*`` call; this module only maps shapes to arguments:

- ``aten::mm / addmm / bmm / baddbmm / matmul / linear`` → :func:`roofline.gemm` (input dtype
  from ``Input type``); ``aten::_scaled_mm`` → ``rl.gemm(dtype="fp8", scaling=tensorwise |
  rowwise)`` from the scale shapes, ``out_dtype`` from the recorded ScalarType.
- SDPA ops (cuDNN, flash, memory-efficient; forward and backward) →
  :func:`roofline.attention` with ``backend=`` the one that ran and ``causal`` from the recorded
  ``is_causal`` (``custom_mask_type`` for the efficient kernels).
- ``native_layer_norm``, ``_fused_rms_norm``, ``_softmax``, ``_log_softmax`` and their backward
  ops → the row ops with ``backend="eager"``; an Inductor kernel whose name says it is a norm or
  softmax → the same row op with ``backend="compiled"``.
- Everything else with shapes (elementwise, copies, cat, reductions, Inductor pointwise and
  reduction kernels, ``nll_loss``) → one memory-bound pass over the bytes it must move,
  :func:`roofline.elementwise` on those bytes; see :func:`moved_bytes` for the byte rules.
- memset / memcpy (device to device) → the same pass over the event's own ``bytes``;
  NCCL kernels → :mod:`roofline.collectives` from the recorded message size and group size.

Anything else (no shapes, unknown types, host transfers) is unpriced, with the reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from ..estimate import Estimate
from ..ops import collectives, elementwise, gemm, layernorm, rmsnorm, softmax
from ..ops.attention import attention

__all__ = ["ELEMENT", "has_shapes", "moved_bytes", "price_event", "price_op"]

#: Kineto ``Input type`` → (roofline dtype name or None, bytes per element).
ELEMENT: dict[str, tuple[str | None, int]] = {
    "c10::BFloat16": ("bf16", 2), "c10::Half": ("fp16", 2), "float": ("fp32", 4),
    "double": ("fp64", 8), "c10::Float8_e4m3fn": ("fp8", 1), "c10::Float8_e5m2": ("e5m2", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1), "c10::Float8_e5m2fnuz": ("e5m2", 1),
    "c10::Float8_e8m0fnu": (None, 1), "c10::Float4_e2m1fn_x2": (None, 1), "bool": (None, 1),
    "unsigned char": (None, 1), "signed char": ("int8", 1), "short int": (None, 2),
    "int": (None, 4), "long int": (None, 8), "c10::complex<float>": (None, 8),
    "c10::complex<double>": (None, 16),
}

#: ScalarType codes (as ``Concrete Inputs`` records a dtype argument) → roofline dtype.
_SCALAR_TYPE = {5: "fp16", 6: "fp32", 15: "bf16", 23: "fp8", 24: "e5m2"}

_GEMM = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
         "aten::linear", "aten::_scaled_mm"}

# SDPA ops: (backend, query/key layout "bhle" or "blhe", backward, index of is_causal in the
# recorded inputs, True when that input is the efficient kernels' custom_mask_type)
_DROPOUT_INDEX = {
    "aten::_scaled_dot_product_cudnn_attention": 5, "aten::_cudnn_attention_forward": 9,
    "aten::_scaled_dot_product_cudnn_attention_backward": 13,
    "aten::_cudnn_attention_backward": 13, "aten::_scaled_dot_product_flash_attention": 3,
    "aten::_flash_attention_forward": 7, "aten::_scaled_dot_product_flash_attention_backward": 10,
    "aten::_flash_attention_backward": 10, "aten::_scaled_dot_product_efficient_attention": 5,
    "aten::_efficient_attention_forward": 8,
    "aten::_scaled_dot_product_efficient_attention_backward": 9,
    "aten::_efficient_attention_backward": 11,
}
_ATTENTION: dict[str, tuple[str, str, bool, int, bool]] = {
    "aten::_scaled_dot_product_cudnn_attention": ("cudnn", "bhle", False, 6, False),
    "aten::_cudnn_attention_forward": ("cudnn", "bhle", False, 10, False),
    "aten::_scaled_dot_product_cudnn_attention_backward": ("cudnn", "bhle", True, 14, False),
    "aten::_cudnn_attention_backward": ("cudnn", "bhle", True, 14, False),
    "aten::_scaled_dot_product_flash_attention": ("flash", "bhle", False, 4, False),
    "aten::_flash_attention_forward": ("flash", "blhe", False, 8, False),
    "aten::_scaled_dot_product_flash_attention_backward": ("flash", "bhle", True, 11, False),
    "aten::_flash_attention_backward": ("flash", "blhe", True, 11, False),
    "aten::_scaled_dot_product_efficient_attention": ("efficient", "bhle", False, 6, False),
    "aten::_efficient_attention_forward": ("efficient", "blhe", False, 9, True),
    "aten::_scaled_dot_product_efficient_attention_backward":
        ("efficient", "bhle", True, 11, False),
    "aten::_efficient_attention_backward": ("efficient", "blhe", True, 14, True),
}

# row ops: (roofline function, backward)
_ROWS = {
    "aten::native_layer_norm": ("layernorm", False),
    "aten::native_layer_norm_backward": ("layernorm", True),
    "aten::_fused_rms_norm": ("rmsnorm", False),
    "aten::_fused_rms_norm_backward": ("rmsnorm", True),
    "aten::_softmax": ("softmax", False),
    "aten::_softmax_backward_data": ("softmax", True),
    "aten::_log_softmax": ("softmax", False),
    "aten::_log_softmax_backward_data": ("softmax", True),
}
_ROW_FUNCS: dict[str, Callable[..., Any]] = {"layernorm": layernorm, "rmsnorm": rmsnorm,
                                           "softmax": softmax}
_TRITON_ROWS = (("native_layer_norm", "layernorm"), ("rms_norm", "rmsnorm"),
                ("rsqrt", "rmsnorm"), ("_log_softmax", "softmax"), ("_softmax", "softmax"))

_WRITE_ONLY = {"aten::fill_", "aten::zero_", "aten::ones_like", "aten::zeros_like",
               "aten::full_like", "aten::normal_", "aten::uniform_", "aten::bernoulli_",
               "aten::random_", "aten::exponential_"}
_COPY = {"aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"}
_UNARY_COPY = {"aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to",
               "aten::_unsafe_view", "aten::reshape"}
_CAT = {"aten::cat", "aten::stack", "aten::concat", "aten::concatenate", "aten::_cat"}
_REDUCE = {"aten::sum", "aten::mean", "aten::amax", "aten::amin", "aten::max", "aten::min",
           "aten::norm", "aten::linalg_vector_norm", "aten::var", "aten::std",
           "aten::var_mean", "aten::std_mean", "aten::argmax", "aten::argmin", "aten::any",
           "aten::all", "aten::prod", "aten::nll_loss_forward", "aten::nll_loss2d_forward"}

Priced = tuple[Estimate | None, str]


def _numel(dims: Any) -> int:
    return math.prod(int(d) for d in dims)


def _tensors(dims: Any, types: Any) -> list[tuple[list[int], int]]:
    """(dims, bytes per element) of every tensor input; tensor lists are flattened."""
    out: list[tuple[list[int], int]] = []
    if not isinstance(dims, list):
        return out
    types = types if isinstance(types, list) else []
    for i, d in enumerate(dims):
        t = types[i] if i < len(types) else ""
        if isinstance(d, list) and d and all(isinstance(x, list) for x in d):  # TensorList
            size = ELEMENT.get(str(t).replace("GenericList", ""), (None, 0))[1]
            for sub in d:
                out.append((list(sub), size or _first_size(types)))
            continue
        if t in ELEMENT and isinstance(d, list):
            out.append((list(d), ELEMENT[t][1]))
    return out


def _first_size(types: list[Any]) -> int:
    return next((ELEMENT[t][1] for t in types if t in ELEMENT), 2)


def moved_bytes(op: str, dims: Any, types: Any) -> int | None:
    """DRAM bytes a memory-bound op must move, from its recorded input shapes.

    Rules: every tensor input is read once and the output (the broadcast of the inputs, in the
    first input's dtype) written once; write-only ops (``fill_``, ``*_like``, RNG) write their
    first tensor; ``copy_`` reads ``src`` and writes ``self``; ``clone``/``contiguous``/
    ``_to_copy`` read and write their input (the output dtype is taken as the input's); ``cat``
    reads its inputs and writes their sum; reductions (and ``nll_loss``) read their inputs and
    write nothing worth counting; ``native_dropout`` also writes a one-byte mask; Inductor
    kernels (``triton_*``) move every tensor argument once (their arguments are their inputs
    and outputs). ``None`` when no tensor input has a recorded size.
    """
    ts = _tensors(dims, types)
    if not ts:
        return None
    sizes = [_numel(d) * b for d, b in ts]
    if op.startswith("triton_") or op in _COPY:
        return sum(sizes)
    if op in _WRITE_ONLY:
        return sizes[0]
    if op in _UNARY_COPY:
        return 2 * sizes[0]
    if op in _CAT:
        return 2 * sum(sizes)
    if op in _REDUCE:
        return sum(sizes)
    out_numel = max(_numel(d) for d, _ in ts)
    written = out_numel * ts[0][1]
    if op == "aten::native_dropout":
        written += out_numel  # the bool mask
    return sum(sizes) + written


def _dtype(t: Any) -> str | None:
    return ELEMENT.get(str(t), (None, 0))[0]


def _bool_at(concrete: Any, index: int) -> bool | None:
    if isinstance(concrete, list) and index < len(concrete):
        v = str(concrete[index]).strip()
        if v in ("True", "False"):
            return v == "True"
        if re.fullmatch(r"-?\d+", v):
            return int(v) != 0
    return None


def _float_at(concrete: Any, index: int) -> float | None:
    if isinstance(concrete, list) and 0 <= index < len(concrete):
        try:
            return float(concrete[index])
        except (TypeError, ValueError):
            return None
    return None


def has_shapes(dims: Any, types: Any) -> bool:
    """Whether an op recorded the size of at least one tensor input (0-d tensors count)."""
    if not isinstance(dims, list):
        return False
    types = types if isinstance(types, list) else []
    for i, d in enumerate(dims):
        if isinstance(d, list) and (d or (i < len(types) and types[i] in ELEMENT)):
            return True
    return False


def _gemm(op: str, dims: list[Any], types: list[Any], concrete: Any, hw: Any,
          eff: Any) -> Priced:
    def shape(i: int) -> list[int]:
        return list(dims[i]) if i < len(dims) and isinstance(dims[i], list) else []

    a_i = 1 if op in ("aten::addmm", "aten::baddbmm") else 0
    a, b = shape(a_i), shape(a_i + 1)
    dt = _dtype(types[a_i] if a_i < len(types) else "")
    if dt is None:
        return None, f"{op}: input type {types[a_i] if a_i < len(types) else '?'} not priced"
    kw: dict[str, Any] = {}
    if op == "aten::linear":
        if len(a) < 1 or len(b) != 2:
            return None, f"{op}: unexpected shapes {dims}"
        m, k, n, batch = _numel(a[:-1]), a[-1], b[0], 1
    elif op == "aten::matmul" and len(a) >= 2 and len(b) == 2:
        m, k, n, batch = _numel(a[:-1]), a[-1], b[1], 1
    elif len(a) == 2 and len(b) == 2:
        m, k, n, batch = a[0], a[1], b[1], 1
    elif len(a) >= 3 and len(b) >= 3 and a[:-2] == b[:-2]:
        m, k, n, batch = a[-2], a[-1], b[-1], _numel(a[:-2])
    else:
        return None, f"{op}: unexpected shapes {dims}"
    if op == "aten::_scaled_mm":
        sa = shape(2)
        if _numel(sa) <= 1:
            kw["scaling"] = "tensorwise"
        elif sa and sa[0] == m and _numel(sa) == m:
            kw["scaling"] = "rowwise"
        else:
            return None, f"{op}: block-scaled inputs (scale_a {sa}) not mapped"
        dt = "fp8"  # e4m3 and e5m2 run at the same fp8 rate
        code = concrete[6] if isinstance(concrete, list) and len(concrete) > 6 else ""
        if str(code).isdigit() and int(code) in _SCALAR_TYPE:
            kw["out_dtype"] = _SCALAR_TYPE[int(code)]
    e = gemm(m, k, n, dtype=dt, hardware=hw, batch=batch, efficiency=eff, **kw)
    return e, f"rl.gemm({m}, {k}, {n}, dtype={dt!r}" + (f", batch={batch}" if batch > 1 else "") \
        + "".join(f", {key}={v!r}" for key, v in kw.items()) + ")"


def _attention(op: str, dims: list[Any], types: list[Any], concrete: Any, hw: Any,
               eff: Any) -> Priced:
    backend, layout, backward, causal_i, mask_type = _ATTENTION[op]
    q_i = 1 if backward else 0
    try:
        q, k, v = (list(dims[q_i + j]) for j in range(3))
    except (IndexError, TypeError):
        return None, f"{op}: unexpected shapes {dims}"
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None, f"{op}: expected 4-d q, k, v, got {q}, {k}, {v}"
    if layout == "blhe":
        q, k, v = ([t[0], t[2], t[1], t[3]] for t in (q, k, v))
    dt = _dtype(types[q_i] if q_i < len(types) else "")
    if dt is None:
        return None, f"{op}: input type not priced"
    causal = bool(_bool_at(concrete, causal_i) or False)
    e = attention(q[0], q[1], q[2], k[2], q[3], kv_heads=k[1], v_head_dim=v[3], causal=causal,
                  backward=backward, dtype=dt, hardware=hw, efficiency=eff, backend=backend)
    how = (f"rl.attention({q[0]}, {q[1]}, {q[2]}, {k[2]}, {q[3]}, kv_heads={k[1]}, "
           f"v_head_dim={v[3]}, causal={causal}, backward={backward}, dtype={dt!r}, "
           f"backend={backend!r})")
    p = _float_at(concrete, _DROPOUT_INDEX.get(op, -1))
    if p:
        how += f"; dropout_p={p:g} is not in the model"
    return e, how


def _row(fn: str, backward: bool, backend: str, dims: list[Any], types: list[Any],
         hw: Any, eff: Any, what: str) -> Priced:
    x_i = 1 if backward and fn != "softmax" else 0
    x = dims[x_i] if x_i < len(dims) and isinstance(dims[x_i], list) else []
    dt = _dtype(types[x_i] if x_i < len(types) else "")
    if len(x) < 1 or dt is None:
        return None, f"{what}: no input shape / type to price"
    cols = int(x[-1])
    rows = max(1, _numel(x[:-1]))
    kw: dict[str, Any] = {"backward": backward}
    if fn != "softmax" and not backward:
        kw["save_stats"] = True
    e = _ROW_FUNCS[fn](rows, cols, dtype=dt, hardware=hw, backend=backend, efficiency=eff,
                       **kw)
    return e, (f"rl.{fn}({rows}, {cols}, dtype={dt!r}, backward={backward}, "
               f"backend={backend!r})")


def _stream(nbytes: int, hw: Any, eff: Any, what: str) -> Priced:
    e = elementwise(max(1, int(nbytes)), reads=1, writes=0, dtype="int8", hardware=hw,
                    efficiency=eff)
    return e, f"{what}: one memory-bound pass over {nbytes} B (rl.elementwise)"


def price_op(op: str, dims: Any, types: Any, concrete: Any, hw: Any, eff: Any) -> Priced:
    """The estimate of one op instance from its recorded inputs, and how it was priced (or why
    it was not)."""
    if not has_shapes(dims, types):
        return None, f"{op or 'kernel'}: no shapes recorded (profile with record_shapes=True)"
    types = types if isinstance(types, list) else []
    if op in _GEMM:
        return _gemm(op, dims, types, concrete, hw, eff)
    if op in _ATTENTION:
        return _attention(op, dims, types, concrete, hw, eff)
    if op in _ROWS:
        fn, backward = _ROWS[op]
        return _row(fn, backward, "eager", dims, types, hw, eff, op)
    if op.startswith("triton_"):
        for key, fn in _TRITON_ROWS:
            if key in op:
                return _row(fn, "backward" in op, "compiled", dims, types, hw, eff, op)
    nbytes = moved_bytes(op, dims, types)
    if nbytes is None:
        return None, f"{op}: input types {types} not priced"
    return _stream(nbytes, hw, eff, op)


_NCCL = (("allreduce", "all_reduce"), ("all_reduce", "all_reduce"),
         ("reducescatter", "reduce_scatter"), ("reduce_scatter", "reduce_scatter"),
         ("allgather", "all_gather"), ("all_gather", "all_gather"),
         ("alltoall", "all_to_all"), ("all_to_all", "all_to_all"),
         ("sendrecv", "send_recv"), ("send", "send_recv"), ("recv", "send_recv"))
_NCCL_DTYPE = {"BFloat16": 2, "Half": 2, "Float": 4, "Double": 8, "Int": 4, "Long": 8,
               "Char": 1, "Byte": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}


def _collective(name: str, chain_args: list[dict[str, Any]], hw: Any) -> Priced:
    info = next((a for a in chain_args if "Collective name" in a), None)
    if info is None:
        return None, "NCCL kernel: no collective record (message size, group size) in the trace"
    coll = str(info.get("Collective name", "")).lower()
    fn = next((f for key, f in _NCCL if key in coll), None)
    ranks = info.get("Group size")
    size = _NCCL_DTYPE.get(str(info.get("dtype", "")))
    if fn is None or not isinstance(ranks, int) or size is None:
        return None, f"NCCL {coll or name}: collective / group size / dtype not recognised"
    n_in = int(info.get("In msg nelems", 0) or 0)
    n_out = int(info.get("Out msg nelems", 0) or 0)
    nbytes = size * (n_out if fn == "all_gather" else n_in)
    if nbytes <= 0 or ranks < 2:
        return None, f"NCCL {coll}: empty message or a single rank"
    if fn == "send_recv":
        e = collectives.send_recv(nbytes, hardware=hw)
        return e, f"rl.collectives.send_recv({nbytes})"
    e = getattr(collectives, fn)(nbytes, ranks, hardware=hw)
    return e, f"rl.collectives.{fn}({nbytes}, {ranks})"


def price_event(kind: str, name: str, args: dict[str, Any], chain_args: list[dict[str, Any]],
                hw: Any, eff: Any) -> Priced | None:
    """Price a GPU event that carries its own size (memset, memcpy, NCCL), else ``None``."""
    if kind == "memset":
        nbytes = args.get("bytes")
        if isinstance(nbytes, (int, float)) and nbytes > 0:
            e = elementwise(int(nbytes), reads=0, writes=1, dtype="int8", hardware=hw,
                            efficiency=eff)
            return e, f"memset: {int(nbytes)} B written (rl.elementwise)"
        return None, "memset: no byte count in the trace"
    if kind == "memcpy":
        nbytes = args.get("bytes")
        if "DtoD" not in name:
            return None, f"{name}: host transfers are not modeled"
        if isinstance(nbytes, (int, float)) and nbytes > 0:
            e = elementwise(int(nbytes), reads=1, writes=1, dtype="int8", hardware=hw,
                            efficiency=eff)
            return e, f"memcpy DtoD: {int(nbytes)} B read and written (rl.elementwise)"
        return None, "memcpy: no byte count in the trace"
    if kind == "collective":
        return _collective(name, [args, *chain_args], hw)
    return None
