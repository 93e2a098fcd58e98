"""PyTorch integration: a model's step time and float8 speedup, without running it.

>>> import torch, roofline.torch as rlt
>>> model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU())
>>> rep = rlt.estimate(model, torch.empty(8, 2048, 4096, device="meta"), hardware="H100 SXM")
>>> rep.time_s, rep.by_op(), rep.top_ops(5)

This subpackage imports torch; ``import roofline`` does not.
"""

from __future__ import annotations

from ._estimate import COLUMNS, OpRecord, TorchEstimate, UnmodeledOpsWarning, estimate
from ._float8 import Float8Speedup, float8_speedup

__all__ = ["COLUMNS", "Float8Speedup", "OpRecord", "TorchEstimate", "UnmodeledOpsWarning",
           "estimate", "float8_speedup"]
