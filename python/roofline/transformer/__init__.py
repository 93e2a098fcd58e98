"""Whole transformers: built-in configs, per-op step estimates and memory per GPU.

>>> import roofline as rl
>>> cfg = rl.transformer.config("Llama-3-8B")
>>> r = rl.transformer.estimate(cfg, phase="decode", batch=8, kv_len=4096, hardware="H100 SXM")
>>> r.to_pandas()          # pandas: one row per (layer, op)
"""

from __future__ import annotations

from .config import TransformerConfig, config, from_hf, list_configs
from .estimate import PHASES, estimate
from .planner import dollars_per_million_tokens, gpu_hours, plan, serve
from .report import ModelEstimate

__all__ = [
    "PHASES",
    "ModelEstimate",
    "TransformerConfig",
    "config",
    "dollars_per_million_tokens",
    "estimate",
    "from_hf",
    "gpu_hours",
    "list_configs",
    "plan",
    "serve",
]
