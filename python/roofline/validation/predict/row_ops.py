"""Elementwise, norm, softmax and cross-entropy rows (eager aten or torch.compile)."""

from __future__ import annotations

from typing import Any

import roofline as rl

from ._num import seconds


def _backend(row: dict[str, Any]) -> str:
    """The row's ``backend`` ("eager" / "compiled") when present, else from the family name
    (files written before rows carried it: a ``_compiled`` suffix means compiled)."""
    backend = row.get("backend")
    if isinstance(backend, str) and backend:
        return backend
    return "compiled" if str(row["family"]).endswith("_compiled") else "eager"


def _elementwise(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    # silu(x) then * y: two eager kernels back to back (the row's reads, writes are totals).
    kernels = 2 if a.get("name") == "silu_mul" else 1
    t = rl.elementwise(a["numel"], a["reads"], a["writes"], dtype=a["dtype"], hardware=hw,
                       efficiency=eff, kernels=kernels).time_s
    return [(row["family"], row["measured"], seconds(t))]


def _row(fn: Any, size: str) -> Any:
    def predict(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
        a = row["args"]
        kwargs = {"backward": True} if a.get("backward") else {}
        t = fn(a["rows"], a[size], dtype=a["dtype"], hardware=hw, efficiency=eff,
               backend=_backend(row), **kwargs).time_s
        return [(row["family"], row["measured"], seconds(t))]

    return predict


PREDICTORS = {
    "elementwise": _elementwise,
    "rmsnorm": _row(rl.rmsnorm, "cols"),
    "layernorm": _row(rl.layernorm, "cols"),
    "softmax": _row(rl.softmax, "cols"),
    "cross_entropy": _row(rl.cross_entropy, "vocab"),
}
