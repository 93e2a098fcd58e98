"""Entries of the public ops as measurement rows name them (``gemm``, ``attention``,
``rmsnorm``, ``cast``, ``launch``, ...): the row's predictor (:mod:`.measured`), whether it
takes arrays for its numeric arguments (a batch of rows predicted in one call), and the fit
group a row falls in (which parameters of the default model it decides)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import _core
from ..._dtypes import dtype as parse_dtype
from ..._params.timing import per_call_timing
from ..rows import cross_entropy, layernorm, rmsnorm, softmax
from .measured.attention import predict_attention
from .measured.float8 import (
    predict_cast,
    predict_inference_speedup,
    predict_linear,
    predict_linear_train,
    predict_training_speedup,
)
from .measured.gemm import predict_gemm, predict_grouped_gemm
from .measured.host import predict_launch
from .measured.row_ops import predict_elementwise, row_predictor
from .table import Entry, add, lookup

__all__ = ["peak_class", "row_entry"]


def peak_class(dtype: Any) -> str | None:
    """Peak class a dtype name computes at (``"bf16"``, ``"fp8"``, ...), None if unknown."""
    try:
        return str(_core.peak_class(parse_dtype("calibrate", dtype)).name)
    except (KeyError, TypeError, ValueError):
        return None


def _gemm_group(row: dict[str, Any]) -> str | None:
    cls = peak_class(row["args"].get("dtype", "bf16"))
    return f"gemm_{cls}" if cls else None


def _row_group(row: dict[str, Any]) -> str:
    return "row_compiled" if str(row["family"]).endswith("_compiled") else "row_eager"


def _attention_group(row: dict[str, Any]) -> str:
    a = row["args"]
    kind = "decode" if a.get("q_len") == 1 else "attention"
    bwd = "_bwd" if a.get("backward") else ""
    return f"{kind}_{row.get('backend') or 'auto'}{bwd}"


def _fixed(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: name


def _per_call(predictor: Callable[..., Any]) -> Callable[..., Any]:
    """``predictor`` pricing inside :func:`~roofline._params.timing.per_call_timing`: its rows
    were timed per call back to back (do_bench), whose launch gaps the fitted streaming
    latency holds; a profiler's kernel times and a program's GPU time do not."""
    def predict(row: dict[str, Any], hw: Any, eff: Any) -> Any:
        with per_call_timing():
            return predictor(row, hw, eff)
    predict.__doc__ = predictor.__doc__
    return predict


def _public(name: str, op: str, predictor: Callable[..., Any], vector: bool,
            group: Callable[[dict[str, Any]], str | None], per_call: bool = True) -> None:
    run = _per_call(predictor) if per_call else predictor
    add(name, entry=lambda n: Entry(n, "public", op, None, run, vector, group))


_public("gemm", "gemm", predict_gemm, True, _gemm_group)
_public("grouped_gemm", "grouped_gemm", predict_grouped_gemm, True, _fixed("grouped_gemm"))
_public("elementwise", "elementwise", predict_elementwise, True, _fixed("elementwise"))
_public("rmsnorm", "rmsnorm", row_predictor(rmsnorm, "cols"), True, _row_group)
_public("layernorm", "layernorm", row_predictor(layernorm, "cols"), True, _row_group)
_public("softmax", "softmax", row_predictor(softmax, "cols"), True, _row_group)
_public("cross_entropy", "cross_entropy", row_predictor(cross_entropy, "vocab"), True,
        _row_group)
_public("attention", "attention", predict_attention, True, _attention_group)
_public("cast", "float8.cast", predict_cast, True, _fixed("cast"))
# profiler kernel times (GPU time); its do_bench wall comparison prices per call itself
_public("linear_train_kernels", "float8.linear", predict_linear, True, _fixed("float8_linear"),
        per_call=False)
_public("launch", "launch_overhead", predict_launch, False, _fixed("launch"))
_public("linear_train", "float8.linear", predict_linear_train, False, _fixed("linear_e2e"))
_public("float8_training_speedup", "float8.linear", predict_training_speedup, False,
        _fixed("linear_e2e"))
_public("float8_inference_speedup", "float8.linear", predict_inference_speedup, False,
        _fixed("linear_e2e"))


def row_entry(op: Any) -> Entry | None:
    """The entry of a measurement row's ``op`` (None: no public op models it)."""
    e = lookup(str(op))
    return e if e is not None and e.kind == "public" else None
