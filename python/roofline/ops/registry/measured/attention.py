"""Attention rows: F.scaled_dot_product_attention per backend (prefill, backward, decode)."""

from __future__ import annotations

from typing import Any

from ...attention import attention
from ._num import seconds

_ARGS = ("batch", "heads", "q_len", "kv_len", "head_dim", "kv_heads", "v_head_dim", "causal",
         "backward", "dtype")


def predict_attention(row: dict[str, Any], hw: Any, eff: Any) -> list[tuple[str, float, float]]:
    a = {k: v for k, v in row["args"].items() if k in _ARGS}
    backend = row.get("backend") or "auto"
    t = attention(**a, backend=backend, hardware=hw, efficiency=eff).time_s
    return [(row["family"], row["measured"], seconds(t))]

