"""Elementwise, norm, softmax and cross-entropy rows (eager aten or torch.compile)."""

from __future__ import annotations

from typing import Any

from ...elementwise import elementwise
from ._num import seconds


def _backend(row: dict[str, Any]) -> str:
    """The row's ``backend`` ("eager" / "compiled") when present, else from the family name
    (files written before rows carried it: a ``_compiled`` suffix means compiled)."""
    backend = row.get("backend")
    if isinstance(backend, str) and backend:
        return backend
    return "compiled" if str(row["family"]).endswith("_compiled") else "eager"


def predict_elementwise(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = row["args"]
    # silu(x) then * y: two eager kernels back to back (the row's reads, writes are totals).
    kernels = 2 if a.get("name") == "silu_mul" else 1
    t = elementwise(a["numel"], a["reads"], a["writes"], dtype=a["dtype"], hardware=hw,
                       efficiency=eff, kernels=kernels).time_s
    return [(row["family"], row["measured"], seconds(t))]


def row_predictor(fn: Any, size: str) -> Any:
    """The predictor of a row op's rows (``size``: the name of its row-length argument)."""
    def predict(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
        a = row["args"]
        kwargs = {"backward": True} if a.get("backward") else {}
        t = fn(a["rows"], a[size], dtype=a["dtype"], hardware=hw, efficiency=eff,
               backend=_backend(row), **kwargs).time_s
        return [(row["family"], row["measured"], seconds(t))]

    return predict

