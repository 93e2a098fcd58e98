"""Which forward kernels torchtitan's op-level selective activation checkpointing recomputes.

``recompute="op"`` is torchtitan's ``activation_checkpoint.mode="selective"`` with
``selective_ac_option="op"`` (``torchtitan/distributed/activation_checkpoint.py``; the same
policy since its 2024-04 train configs): every transformer block runs under a selective
checkpoint context whose policy saves the outputs of ``aten.mm`` and of the SDPA kernels, but
only every other ``mm`` of the block (the 2nd, 4th, ... call; "Saves output of all compute
ops, except every second mm"), and recomputes everything else in the backward. For a Llama
block the ``mm`` calls run ``wq, wk, wv, wo, w1, w3, w2``, so ``wk``, ``wo`` and ``w3`` are
recomputed with every norm, RoPE, activation and residual; the attention is not.

This module maps that to the rows of a :class:`~.program.Program`, whose projections are
fused (one ``qkv_proj``, one ``gate_up_proj``): the recomputed share of a row's forward is
the FLOP share of its recomputed ``mm`` calls. The step arithmetic lives with the other
recomputation modes in :func:`.training.compose`.

``recompute="modules:<m>,..."`` is Megatron-Core's ``recompute_granularity="selective"`` with
``recompute_modules=[...]`` (``megatron/core/transformer/transformer_config.py``): the named
submodules run under ``CheckpointWithoutOutput`` / ``checkpoint``, drop their outputs and
run their forward again in the backward; :func:`module_recompute_share` marks those rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MODULE_DROPS", "RECOMPUTE_MODULES", "module_dropped_elements",
           "module_recompute_share", "op_recompute_share", "op_saved_elements"]

#: Megatron-Core ``recompute_modules`` this package prices -> the forward rows of a layer each
#: runs again in the backward: ``layernorm`` the input and pre-MLP norms
#: (``recompute_input_layernorm`` / ``recompute_pre_mlp_layernorm``), ``moe_act`` the routed
#: experts' activation with its clamps (``TEGroupedMLP.activation_recompute``),
#: ``mla_up_proj`` MLA's query and key/value up-projections with the RoPE applied to their
#: outputs (``qkv_up_checkpoint``), ``core_attn`` the attention kernel
#: (``checkpoint_core_attention``), ``mlp`` the dense MLP of the layers that are not MoE
#: layers (``TransformerLayer.recompute_mlp``: Megatron-Core 92c8482 sets it only when
#: ``not self.is_moe_layer``, and reruns ``self.mlp`` whole under ``tensor_parallel.checkpoint``
#: / ``te_checkpoint``: fc1, activation, fc2 and their tensor-parallel communication;
#: DeepSeek-V3's three dense layers under Megatron-Bridge's H100 presets).
RECOMPUTE_MODULES: dict[str, tuple[str, ...]] = {
    "layernorm": ("attn_norm", "mlp_norm"),
    "moe_act": ("experts act clamp (unfused)", "experts act"),
    "mla_up_proj": ("q_b_proj", "kv_b_proj", "rope"),
    "core_attn": (),
    "mlp": ("gate_up_proj", "up_proj", "gate_proj", "act (silu*up)", "act", "act (relu, pow)",
            "down_proj", "mlp all_reduce", "mlp fp8 amax reduce"),
}

#: Megatron-Core ``recompute_modules`` -> the rows whose saved tensors the module's checkpoint
#: frees (Megatron-LM 92c8482). ``CheckpointWithoutOutput`` runs the module under
#: ``torch.no_grad()`` keeping only its inputs (``tensor_parallel/random.py``), and
#: ``discard_output_and_register_recompute`` frees its outputs' storage once the next module
#: has used them, with whatever that module saved of them: ``mla_up_proj``
#: (``MLASelfAttention``: q, k, v, freed after the core attention) the attention's saved
#: q, k, v (its ``"other"`` part), the up-projections' saved inputs kept instead as the
#: checkpoint's bf16 inputs; ``moe_act`` the experts' fc2 input (``TEGroupedMLP`` sets
#: ``save_original_input`` on fc2 under fp8 / fp4, so its bf16 input, the activation's
#: output, is what is freed); ``layernorm`` the norms' outputs as the next linear saved them
#: (``set_save_original_input`` on ``linear_qkv`` and the MLP's fc1; the router's input);
#: ``mlp`` (dense layers, ``tensor_parallel.checkpoint`` / ``te_checkpoint`` of the whole MLP
#: on the residual stream: fc1's saved input, the activation's and fc2's); ``core_attn``
#: (``checkpoint_core_attention``: the kernel's output and logsumexp, the attention's
#: ``"attn_core"`` part; q, k, v stay as the checkpoint's inputs).
MODULE_DROPS: dict[str, tuple[str, ...]] = {
    "mla_up_proj": ("attention (MLA)",),
    "moe_act": ("experts down", "experts act clamp (unfused)"),
    "layernorm": ("qkv_proj", "q_a+kv_a_proj", "q_proj+kv_a_proj", "gate_up_proj", "up_proj",
                  "shared gate_up", "router"),
    "mlp": ("gate_up_proj", "up_proj", "gate_proj", "act (silu*up)", "act", "act (relu, pow)",
            "down_proj"),
    "core_attn": (),
}


def module_dropped_elements(ops: Any, groups: list[tuple[str, list[int]]],
                            modules: tuple[str, ...]) -> dict[str, float]:
    """Saved elements of one micro-batch, all decoder layers, that Megatron's
    ``recompute_modules`` free (:data:`MODULE_DROPS`), per saved category (``"other"``,
    ``"rep"``, ``"attn_core"``): ``core_attn`` the attention rows' ``"attn_core"`` part,
    ``mla_up_proj`` the MLA attention's q, k, v less the up-projections' inputs the checkpoint
    keeps in bf16 (their saved input over :meth:`.Program.saved_input_share`) beyond what
    those projections saved, the others every category their rows saved; ``"largest"``: the
    most one layer frees (held again while that layer's backward recomputes it, sequence
    parallelism not applied: an upper estimate)."""
    keys: set[tuple[int, str, str]] = set()
    for (g, name, cat) in ops.saved_rows:
        for m in modules:
            if (m == "core_attn" and cat == "attn_core") or (
                    name in MODULE_DROPS[m] and (m != "mla_up_proj" or cat == "other")):
                keys.add((g, name, cat))
    out = {"other": 0.0, "rep": 0.0, "attn_core": 0.0}
    per_layer: dict[int, float] = {}
    share = ops.saved_input_share()
    for g, name, cat in keys:
        if groups[g][0] != "head":
            out[cat] += ops.saved_rows[g, name, cat] * len(groups[g][1])
            per_layer[g] = per_layer.get(g, 0.0) + ops.saved_rows[g, name, cat]
    if "mla_up_proj" in modules and share < 1.0:  # bf16 checkpoint inputs beyond fp8 saves
        for (g, name, cat), v in ops.saved_rows.items():
            if name in ("q_b_proj", "kv_b_proj") and groups[g][0] != "head":
                out[cat] -= v * (1.0 / share - 1.0) * len(groups[g][1])
                per_layer[g] = per_layer.get(g, 0.0) - v * (1.0 / share - 1.0)
    # the backward of one layer rematerialises what that layer's checkpoints freed
    out["largest"] = max(per_layer.values(), default=0.0)
    return out


#: Share of a row's forward that the policy recomputes when it does not depend on the model:
#: every elementwise kernel; attention and collectives are kept (SDPA outputs are saved).
_KIND_SHARE = {"elementwise": 1.0, "attention": 0.0, "collective": 0.0}


def _linear_share(name: str, heads: int, kv_heads: int, gated: bool) -> float:
    """Recomputed FLOP share of one (fused) projection row under "every second mm"."""
    base = name.removesuffix(" (fwd+bwd)")
    if base == "qkv_proj":  # wq (1st, saved), wk (2nd, recomputed), wv (3rd, saved)
        return kv_heads / (heads + 2 * kv_heads)
    if base == "gate_up_proj":  # w1 (5th, saved), w3 (6th, recomputed), equal shapes
        return 0.5
    fixed = {"q_proj": 0.0, "k_proj": 1.0, "v_proj": 0.0, "o_proj": 1.0, "gate_proj": 0.0,
             # gated: up (w3) is the 6th, down (w2) the 7th; ungated: up 5th, down 6th
             "up_proj": 1.0 if gated else 0.0, "down_proj": 0.0 if gated else 1.0}
    return fixed.get(base, 0.5)  # others (MLA, MoE experts, router): every other one on average


def op_recompute_share(rows: list[tuple[int, str, str]], groups: list[tuple[str, list[int]]],
                       heads: int, kv_heads: int, gated: bool) -> np.ndarray:
    """Per row, the share of its forward time that op-level SAC recomputes (0 for backward
    rows and the head: only transformer blocks are checkpointed)."""
    out = np.zeros(len(rows))
    for i, (g, name, kind) in enumerate(rows):
        if groups[g][0] == "head" or name.endswith(" bwd"):
            continue
        if kind in ("gemm", "linear"):
            out[i] = _linear_share(name, heads, kv_heads, gated)
        else:
            out[i] = _KIND_SHARE.get(kind, 1.0)
    return out


def module_recompute_share(rows: list[tuple[int, str, str]],
                           groups: list[tuple[str, list[int]]],
                           modules: tuple[str, ...]) -> np.ndarray:
    """Per row, 1 where Megatron's ``recompute_modules`` run its forward again in the
    backward, else 0 (backward rows and the head: 0).

    ``mla_up_proj`` marks its rows only in layers with an MLA query or key/value
    up-projection (RoPE of other attention is not part of it); ``core_attn`` marks the
    attention rows; the others match :data:`RECOMPUTE_MODULES` by row name.
    """
    out = np.zeros(len(rows))
    mla = {g for g, name, _ in rows if name.removesuffix(" (fwd+bwd)") in ("q_b_proj",
                                                                           "kv_b_proj")}
    for i, (g, name, kind) in enumerate(rows):
        if groups[g][0] == "head" or name.endswith(" bwd"):
            continue
        base = name.removesuffix(" (fwd+bwd)")
        for m in modules:
            if m == "core_attn" and kind == "attention":
                out[i] = 1.0
            elif base in RECOMPUTE_MODULES[m] and (m != "mla_up_proj" or g in mla):
                out[i] = 1.0
    return out


def op_saved_elements(ops: Any, groups: list[tuple[str, list[int]]], share: np.ndarray,
                      tokens: int, hidden: int) -> float:
    """Activation elements one micro-batch keeps under op-level SAC, all layers: per layer the
    block input, the saved part of each projection's output (``(1 - share)·m·n``) and the
    attention's saved output and softmax statistics (``saved_by[g, "attn_core"]``)."""
    total = 0.0
    for gi, (kind, layers) in enumerate(groups):
        if kind == "head":
            continue
        kept = float(tokens) * hidden + ops.saved_by.get((gi, "attn_core"), 0.0)
        for i, (g, name, rkind, parts) in enumerate(ops.rows):
            if g != gi or rkind not in ("gemm", "linear") or name.endswith(" bwd"):
                continue
            kept += (1.0 - share[i]) * _output_elements(ops, parts[0])
        total += kept * len(layers)
    return total


def _output_elements(ops: Any, part: tuple[str, int]) -> float:
    """Elements of the output of a projection row's forward kernel (its first part)."""
    store, idx = part
    spec = getattr(ops, store)[idx]
    if store == "grouped":  # (counts, k, n)
        return float(sum(spec[0])) * float(spec[2])
    if store == "calls":  # a registry Call (runtime="hf"): linear(input (..., k), weight (n, k))
        if spec.outputs:
            return float(sum(t.numel for t in spec.outputs))
        ts = spec.tensors()
        if len(ts) >= 2 and ts[0].shape and len(ts[1].shape) == 2:
            return float(ts[0].numel / max(ts[0].shape[-1], 1) * ts[1].shape[0])
        return 0.0
    # gemms (m, k, n, batch, transposed), lowp (m, k, n, batch), f8 (m, k, n)
    return float(spec[0]) * float(spec[2]) * float(spec[3] if len(spec) > 3 else 1.0)
