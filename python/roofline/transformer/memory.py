"""Memory per GPU of a transformer step: weights sharded by tensor and expert parallelism, the
KV cache, and for training the gradients, optimizer state and saved activations (before the
ZeRO / pipeline composition of :mod:`roofline.transformer.training`)."""

from __future__ import annotations

import functools
from collections import Counter

from .. import _core
from ..hardware import Hardware
from .config import TransformerConfig
from .program import Program
from .training import OPTIMIZERS

__all__ = ["memory", "weight_params"]


@functools.lru_cache(maxsize=64)
def _attention_kinds(cfg: TransformerConfig) -> tuple[tuple[str, int], ...]:
    """(attention kind, layers of that kind) of the model (an integer sum of spans per kind
    is the sum over its layers)."""
    return tuple(Counter(cfg.layer_attention()).items())


def weight_params(cfg: TransformerConfig, tp: int, ep: int, phase: str,
                  kv_bytes: float = 2.0) -> tuple[float, float, float]:
    """(linear weights, other weights, KV-cache bytes per token) per GPU: the linear layers'
    (attention, MLP, experts, MTP) sharded by tensor / expert parallelism, the rest (router,
    norms, embedding and head) replicated or vocabulary-split."""
    c = cfg.param_counts()
    heads_frac = (cfg.num_heads // tp) / cfg.num_heads
    if cfg.is_mla:
        hid, lat, rope = cfg.hidden_size, cfg.kv_lora_rank, cfg.qk_rope_head_dim
        replicated = hid * (cfg.q_lora_rank + lat + rope) if cfg.q_lora_rank else hid * (lat + rope)
        attn = replicated + (cfg.attention_params() - replicated) * heads_frac
        kv_token = cfg.kv_cache_bytes_per_token(kv_bytes)
    else:
        d, hid = cfg.head_dim, cfg.hidden_size
        kvh = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1
        h = cfg.num_heads // tp
        attn = hid * (h + 2 * kvh) * d + h * d * hid
        kv_token = 2.0 * kvh * d * kv_bytes
    expert_split = ep if ep > 1 else tp
    linear = (cfg.num_layers * attn + c["mlp"] / tp + c["experts"] / expert_split
              + c["shared_experts"] / tp)
    other = c["router"] + c["norms"] + (c["embedding"] + c["lm_head"]) / tp
    if phase == "train" and cfg.mtp_layers:  # the MTP modules train with the model
        m = cfg.mtp_param_counts()
        linear += (m["attention"] * attn / cfg.attention_params() + m["mlp"] / tp
                   + m["experts"] / expert_split + m["shared_experts"] / tp + m["eh_proj"])
        other += m["router"] + m["norms"]
    return linear, other, kv_token


def memory(cfg: TransformerConfig, hw: Hardware, batch: int, kv: int, tp: int, ep: int,
           phase: str, weight_bytes: float, kv_bytes: float, ops: Program,
           groups: list[tuple[str, list[int]]], dtype_bytes: float = 2.0,
           optimizer: str = "adam") -> dict[str, float]:
    """Bytes per GPU by category, ``params_per_gpu`` and ``capacity_bytes``.

    Training state is unsharded here: ``dtype_bytes`` per gradient, the C++ core's optimizer
    bytes per parameter for ``optimizer`` (``_core.optimizer_bytes_per_param``) and every
    op's saved inputs; :func:`roofline.transformer.training.compose` then shards them.
    """
    linear, other, kv_token = weight_params(cfg, tp, ep, phase, kv_bytes)
    params = linear + other
    mem: dict[str, float] = {
        "params_per_gpu": params,
        "weights_bytes": linear * weight_bytes + other * dtype_bytes,
        # sliding / chunked layers keep at most their window / chunk of keys
        "kv_cache_bytes": 0.0 if phase == "train" else batch * kv_token * sum(
            n * cfg.attention_span(a, kv) for a, n in _attention_kinds(cfg)),
        "gradients_bytes": 0.0,
        "optimizer_bytes": 0.0,
        "activations_bytes": 0.0,
    }
    if phase == "train":
        mem["gradients_bytes"] = dtype_bytes * params
        mem["optimizer_bytes"] = _core.optimizer_bytes_per_param(OPTIMIZERS[optimizer][0]) * params
        mem["activations_bytes"] = dtype_bytes * sum(
            ops.saved.get(gi, 0.0) * max(1, len(layers)) for gi, (_, layers) in enumerate(groups))
    mem["total_bytes"] = sum(v for k, v in mem.items() if k.endswith("_bytes"))
    mem["capacity_bytes"] = hw.mem_capacity_bytes or float("nan")
    return mem
