"""Entries of norms and softmax: the row ops (:func:`roofline.layernorm`, ``rmsnorm``,
``softmax``) with aten's kernels (``backend="eager"``) over rows x the normalized size."""

from __future__ import annotations

import math
from typing import Any

from .call import Call, TensorArg, int_list
from .pricer import Pricer
from .table import Priced, register

# op -> (row op, backward, index of x in the inputs, name of x in the schema)
_ROWS: dict[str, tuple[str, bool, int, str]] = {
    "aten::native_layer_norm": ("layernorm", False, 0, "input"),
    "aten::native_layer_norm_backward": ("layernorm", True, 1, "input"),
    "aten::_fused_rms_norm": ("rmsnorm", False, 0, "input"),
    "aten::_fused_rms_norm_backward": ("rmsnorm", True, 1, "input"),
    "aten::rms_norm": ("rmsnorm", False, 0, "input"),
    "aten::_softmax": ("softmax", False, 0, "self"),
    "aten::_safe_softmax": ("softmax", False, 0, "self"),
    "aten::_log_softmax": ("softmax", False, 0, "self"),
    "aten::_softmax_backward_data": ("softmax", True, 0, "grad_output"),
    "aten::_log_softmax_backward_data": ("log_softmax", True, 0, "grad_output"),
}


def row_op(p: Pricer, fn: str, x: TensorArg, cols: int, backward: bool, backend: str,
           save_stats: bool) -> Priced:
    """A row op over ``x`` with ``cols`` elements per row; a memory-bound pass when the row op
    has no model for x's type."""
    kind = "softmax" if fn in ("softmax", "log_softmax") else "norm"
    numel = x.numel
    if numel == 0:
        return [], f"{fn}: empty"
    rows = max(numel // max(cols, 1), 1)
    if x.dtype_name is not None:
        kw: dict[str, Any] = {"backward": backward}
        if save_stats:
            kw["save_stats"] = True
        e = p.row(fn, rows, cols, x.dtype_name, backend, **kw)
        log = fn == "log_softmax"
        return [(kind, e)], (f"rl.{'softmax' if log else fn}({rows}, {cols}, "
                             f"dtype={x.dtype_name!r}, backward={backward}, backend={backend!r})"
                             + ("; log_softmax: one kernel, no dy*y kernel" if log else ""))
    b = x.nbytes
    # forward: read x, write y; backward: read x (or y) and dy, write dx
    reads, writes = (2 * b, b) if backward else (b, b)
    label = f"{fn}{' bwd' if backward else ''}"
    return [(kind, p.traffic(reads, writes, 5.0 * numel, label))], f"{label}: memory-bound pass"


def _cols(call: Call, fn: str, x: TensorArg) -> int:
    """Elements per row: the normalized shape (norms) or the size along ``dim`` (softmax)."""
    if fn in ("softmax", "log_softmax"):
        dim = call.arg("dim", 2 if call.name.endswith("_data") else 1, -1)
        try:
            return x.shape[int(dim)] if x.shape else 1
        except (ValueError, IndexError, OverflowError, TypeError):
            return x.shape[-1] if x.shape else 1
    shape = int_list(call.arg("normalized_shape", 1 if call.name.endswith("norm") else 2))
    if shape and all(s > 0 for s in shape) and x.numel % math.prod(shape) == 0:
        return math.prod(shape)  # (a recorded shape that cannot be x's trailing dims: last dim)
    return x.shape[-1] if x.shape else 1


def _row(call: Call, p: Pricer) -> Priced:
    fn, backward, x_i, x_name = _ROWS[call.name]
    x = call.arg(x_name)
    if not isinstance(x, TensorArg):
        x = call.tensor(x_i)
    if x is None or not x.shape:
        return None, f"{call.name}: no input shape / type to price"
    # a norm's forward writes its statistics (mean / rstd) when it returns them: aten's
    # native_layer_norm and _fused_rms_norm do (a trace records no outputs: the aten op's)
    save = fn not in ("softmax", "log_softmax") and not backward and (
        call.outputs is None or len(call.outputs) > 1)
    return row_op(p, fn, x, _cols(call, fn, x), backward, "eager", save)


for _name in _ROWS:
    register(_name, kind="row", op=_ROWS[_name][0].removeprefix("log_"))(_row)
