"""The op functions: each prices one kind of kernel (or a few that always run together).

``gemm``, ``grouped_gemm`` and ``weight_only_gemm`` (:mod:`.gemm`, :mod:`.grouped_gemm`,
:mod:`.weight_only_gemm`), ``elementwise``
(:mod:`.elementwise`), the row ops ``rmsnorm``, ``layernorm``, ``softmax``, ``cross_entropy``
(:mod:`.rows`), ``attention`` (:mod:`.attention`), the collectives (:mod:`.collectives`) and the
host side, ``wall_time`` / ``launch_overhead`` (:mod:`.host`). Every path that prices a program
(``roofline.torch``, ``roofline.trace``, ``roofline.transformer``, validation, calibration)
calls these functions.
"""

from __future__ import annotations

from . import collectives
from .attention import attention, attention_backend
from .collectives import all_gather, all_reduce, all_to_all, reduce_scatter, send_recv
from .elementwise import elementwise
from .gemm import gemm
from .grouped_gemm import grouped_gemm
from .host import WallTime, launch_overhead, wall_time
from .rows import ROW_BACKENDS, cross_entropy, layernorm, rmsnorm, softmax
from .weight_only_gemm import weight_only_gemm

__all__ = [
    "ROW_BACKENDS",
    "WallTime",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "attention",
    "attention_backend",
    "collectives",
    "cross_entropy",
    "elementwise",
    "gemm",
    "grouped_gemm",
    "launch_overhead",
    "layernorm",
    "reduce_scatter",
    "rmsnorm",
    "send_recv",
    "softmax",
    "wall_time",
    "weight_only_gemm",
]
