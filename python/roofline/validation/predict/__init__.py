"""Predictors: op name -> function(row, hardware, efficiency) -> [(family, measured, predicted)].

One module per area; each exports ``PREDICTORS`` for the ops it models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import attention, float8, gemm, host, row_ops

Predictor = Callable[[dict[str, Any], Any, Any], list[tuple[str, float, float]]]

PREDICTORS: dict[str, Predictor] = {
    **gemm.PREDICTORS,
    **attention.PREDICTORS,
    **row_ops.PREDICTORS,
    **float8.PREDICTORS,
    **host.PREDICTORS,
}
