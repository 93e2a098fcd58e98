"""The micro-batch terms of a training step, read off its priced program.

:func:`train_terms` turns one micro-batch's priced :class:`~.program.Program` (its rows,
columns and layer groups) into what :func:`.layout_step.train_step` composes a step from and
the planner re-composes other layouts from: per-layer and head times
(:func:`.training.micro_batch_terms`), the recomputed share of each op
(:func:`.recompute.op_recompute_share`, or of the recomputed modules), the activations an
op-level recomputation keeps, the low-precision weights' per-step refresh
(:func:`.param_refresh.refresh_terms`) and bf16 weights' per-step cast
(:func:`.param_refresh.weight_cast_s`), the gradient NaN checks
(:func:`.grad_checks.grad_check_s`), the embedding / head parameters, and, for
Megatron-Core's eager dropless MoE, the host time its syncs expose
(:func:`.moe_sync.moe_host_terms`), llm-foundry's flash-attn unpad syncs
(:func:`.unpad_sync.unpad_sync_s`), and with ``par["moe_a2a_overlap"]`` the all-to-all
time Megatron-Core's combined 1F1B hides (:func:`.moe_overlap.a2a_overlap_terms`).
"""

from __future__ import annotations

from typing import Any

from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from .config import TransformerConfig
from .grad_checks import grad_check_s
from .memory import weight_params
from .moe_overlap import a2a_overlap_terms
from .moe_sync import moe_host_terms
from .param_refresh import refresh_terms, weight_cast_s
from .program import Program
from .recompute import (
    module_dropped_elements,
    module_recompute_share,
    op_recompute_share,
    op_saved_elements,
)
from .training import micro_batch_terms
from .unpad_sync import unpad_sync_s

__all__ = ["train_terms"]


def train_terms(cfg: TransformerConfig, ops: Program, cols: dict[str, Any],
                groups: list[Any], memory: dict[str, Any], hw: Hardware,
                efficiency: EfficiencyLike, *, tp: int, ep: int, local: int, act_bytes: float,
                weight_bytes: float, f8_recipe: str | None, par: dict[str, Any],
                moe_host: bool, graphed: Any, balancing: Any
                ) -> tuple[Any, Any, dict[str, float]]:
    """``(op_share, module_share, base)`` of one training micro-batch of ``local`` tokens per
    GPU: the recomputed share of each op, that of the recomputed modules
    (``par["recompute_modules"]``; None without), and the micro-batch terms ``base``
    (``par``: the checked training arguments). Routed experts are split by ``ep`` (``tp``
    without expert parallelism); ``moe_host`` adds the MoE host terms."""
    modules = par["recompute_modules"]
    expert_p = cfg.param_counts()["experts"] / (ep if ep > 1 else tp)
    rows3 = [(g, name, kind) for g, name, kind, _ in ops.rows]
    kv_heads = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1
    share = op_recompute_share(rows3, groups, cfg.num_heads // tp, kv_heads, cfg.mlp_gated)
    mod_share = module_recompute_share(rows3, groups, modules) if modules else None
    base = micro_batch_terms(
        rows3, cols, groups, ops.saved_by, memory, expert_p, expert_p * weight_bytes,
        cfg.num_layers, cfg.hidden_size, local, act_bytes, op_share=share, mod_share=mod_share)
    base["saved_op"] = op_saved_elements(ops, groups, share, local, cfg.hidden_size)
    drops = module_dropped_elements(ops, groups, modules) if modules else {}
    base.update({f"mod_drop_{c}": v for c, v in drops.items()})  # what the modules free
    linear_p = weight_params(cfg, tp, ep, "train")[0]
    base.update(refresh_terms(f8_recipe, linear_p, expert_p, weight_bytes, base, hw,
                              efficiency))
    base["weight_cast_s"] = weight_cast_s(f8_recipe, linear_p, par, hw, efficiency)
    base["grad_check_s"] = grad_check_s(cfg, tp, par, act_bytes, hw, efficiency)
    base["train_metrics"] = float(par.get("train_metrics", 0))  # Composer's, synced per batch
    counts = cfg.param_counts()
    base["embed_params"] = counts["embedding"] / tp
    base["head_params"] = counts["lm_head"] / tp
    if moe_host:
        base.update(moe_host_terms(ops, cols["time_s"], groups, hw, efficiency, graphed,
                                   balancing, int(base["heavy_group"])))
    if ops.unpad is not None:  # llm-foundry's flash-attn unpad syncs (flash_varlen)
        base["host_s"] = base.get("host_s", 0.0) + unpad_sync_s(
            ops, cols["time_s"], groups, hw, efficiency, int(par["recompute"]),
            int(par["recompute_every"]))
    if par.get("moe_a2a_overlap"):  # the all-to-all the combined 1F1B hides per layer pair
        base.update(a2a_overlap_terms(ops, cols["time_s"], groups, int(base["heavy_group"]), hw,
                                      (efficiency, graphed, balancing) if moe_host else None))
    return share, mod_share, base
