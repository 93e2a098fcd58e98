"""Fusion and op graphs: what fusing, batching or re-associating ops saves.

>>> import roofline as rl
>>> c = rl.fusion.epilogue_fusion(4096, 4096, 4096, op="relu", hardware="H100 SXM")
>>> c.saving, c.speedup            # fraction of time saved, baseline / fused
>>> print(c)                       # both plans side by side: time, bytes, FLOPs, launches

Build your own graph with :class:`Graph` (``input``, ``gemm``, ``elementwise``) and estimate
it unfused or with fusion groups; :func:`compare` puts two plans side by side. Every time comes
from the package's op functions (``rl.gemm``, ``rl.elementwise``, ``rl.attention``) under one
hardware and efficiency model; this layer only decides which bytes reach DRAM and how many
kernels launch.
"""

from __future__ import annotations

from .graph import Graph, Op, Tensor
from .report import Comparison, Kernel, Plan, compare, concat
from .transforms import (
    ChainOrders,
    batch_gemms,
    epilogue_fusion,
    flash_attention,
    fuse_projections,
    horizontal_fusion,
    matmul_chain,
)

__all__ = [
    "ChainOrders",
    "Comparison",
    "Graph",
    "Kernel",
    "Op",
    "Plan",
    "Tensor",
    "batch_gemms",
    "compare",
    "concat",
    "epilogue_fusion",
    "flash_attention",
    "fuse_projections",
    "horizontal_fusion",
    "matmul_chain",
]
