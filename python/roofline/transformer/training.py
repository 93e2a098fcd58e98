"""A parallel training step from one micro-batch's op estimate: memory and time per GPU.

The op table of :func:`roofline.transformer.estimate` describes one micro-batch on one GPU
holding every layer (after tensor, context and expert parallelism). This module splits it over
pipeline stages, adds recomputation, gradient accumulation, the pipeline bubble and the
data-parallel / FSDP communication, and shards the training state by ZeRO stage. The arithmetic
is in the C++ core (``cpp/include/roofline/parallel/train.hpp``); here every argument may be a
numpy array, so the planner evaluates thousands of layouts in one call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from ..ops.collectives import all_gather, all_reduce, reduce_scatter, send_recv
from .composer import clip_grad_norm_s, decoupled_adamw_s, metric_sync_s, rank_tensors
from .fsdp_passes import fsdp_unit_passes_s
from .group_links import group_collective_s as _link
from .offload import DEFAULT_HOST_LINK, offload_exposed_s
from .optimizers import OPTIMIZERS, PER_TENSOR_OPTIMIZERS, optimizer_update_s

__all__ = ["DEFAULT_NETWORK_BYTES_PER_S", "LAYER_RECOMPUTE", "MODULES_RECOMPUTE", "OPTIMIZERS",
           "PER_TENSOR_OPTIMIZERS", "PLAN_RECOMPUTE", "RECOMPUTE", "compose",
           "micro_batch_terms", "optimizer_update_s", "recompute_name",
           "recomputed_share"]

#: Scale-out bandwidth per GPU and direction when none is given: one 400 Gb/s NIC per GPU
#: (InfiniBand NDR / 400G RoCE, as in DGX H100 and the H800 clusters of DeepSeek-V3).
DEFAULT_NETWORK_BYTES_PER_S = 50e9

#: CTAs (one per channel) NCCL's data-parallel collectives run, each holding one SM for the
#: whole collective: two channels per NIC of a node with a NIC per GPU (8 x 2), and NCCL's
#: NVLink SHARP default (``NCCL_NVLS_NCHANNELS=16``) in one NVLink domain. An approximation:
#: NCCL chooses its channel count per topology at run time.
NCCL_COMM_CTAS = 16

#: Recomputation modes and their codes in the vectorised composition.
RECOMPUTE = {"none": 0, "selective": 1, "full": 2, "op": 4}
#: Code of layer-selective recomputation, spelled ``"layer:k"``: every ``k``-th block fully
#: recomputed (torchtitan's ``activation_checkpoint.mode="selective"`` with
#: ``selective_ac_option="k"``); ``compose`` takes ``k`` as ``recompute_every``.
LAYER_RECOMPUTE = 3
#: Code of module recomputation, spelled ``"modules:<m>,..."``: Megatron-Core's
#: ``recompute_granularity="selective"`` with ``recompute_modules`` (the rows of
#: :func:`.recompute.module_recompute_share`); ``compose`` adds ``base["mod_fwd_s"]``.
MODULES_RECOMPUTE = 5
#: The recomputation modes the planner searches: (name, code, every).
PLAN_RECOMPUTE = (("none", 0, 1), ("selective", 1, 1), ("full", 2, 1),
                  ("layer:2", LAYER_RECOMPUTE, 2), ("op", RECOMPUTE["op"], 1))


def recomputed_share(code: Any, layers: Any, every: Any) -> Any:
    """Share of ``layers`` whose forward is fully recomputed under recomputation ``code``:
    all (full, 2), ``floor(L/k)/L`` (every ``k = every``-th layer, :data:`LAYER_RECOMPUTE`,
    ``_core.checkpointed_layers``), else none. Arrays broadcast."""
    every = np.asarray(every, dtype=np.float64)
    return np.where(code == 2, 1.0, np.where(
        code == LAYER_RECOMPUTE, _core.checkpointed_layers(layers, every) / layers, 0.0))


def recompute_name(code: int, every: int = 1, modules: tuple[str, ...] = ()) -> str:
    """The public spelling of a recomputation code (``"layer:k"`` for :data:`LAYER_RECOMPUTE`,
    ``"modules:<m>,..."`` for :data:`MODULES_RECOMPUTE`)."""
    if code == LAYER_RECOMPUTE:
        return f"layer:{every}"
    if code == MODULES_RECOMPUTE:
        return "modules:" + ",".join(modules)
    return next(k for k, c in RECOMPUTE.items() if c == code)

def micro_batch_terms(rows: list[tuple[int, str, str]], cols: dict[str, np.ndarray],
                      groups: list[tuple[str, list[int]]], saved_by: dict[tuple[int, str], float],
                      memory: dict[str, float], expert_params: float, expert_weight_bytes: float,
                      num_layers: int, hidden: int, tokens: int, act_bytes: float,
                      op_share: np.ndarray | None = None,
                      mod_share: np.ndarray | None = None) -> dict[str, float]:
    """Scalars of one micro-batch on one GPU holding every layer, split forward / backward.

    Rows named ``... bwd`` are backward; float8 linears (``(fwd+bwd)``) count one third of
    their time as forward (one of their three GEMMs). ``op_share``: per row, the share of its
    forward that op-level selective checkpointing recomputes; ``mod_share``: the same for
    Megatron's ``recompute_modules`` (both :mod:`.recompute`; ``mod_fwd_s`` =
    ``sum(time · forward share · mod_share)`` over the layers).
    """
    time, flops = cols["time_s"], cols["flops"]
    mult = np.array([len(groups[g][1]) if groups[g][0] != "head" else 1 for g, _, _ in rows],
                    dtype=float)
    head = np.array([groups[g][0] == "head" for g, _, _ in rows])
    fwd_share = np.array([0.0 if n.endswith(" bwd") else (1 / 3 if n.endswith("(fwd+bwd)") else 1.0)
                          for _, n, _ in rows])
    attn = np.array([k == "attention" for _, _, k in rows])
    t, f = time * mult, flops * mult
    out = {
        "fwd_layers_s": float(np.sum(t * fwd_share * ~head)),
        "bwd_layers_s": float(np.sum(t * (1 - fwd_share) * ~head)),
        "fwd_head_s": float(np.sum(t * fwd_share * head)),
        "bwd_head_s": float(np.sum(t * (1 - fwd_share) * head)),
        "attn_fwd_s": float(np.sum(t * fwd_share * attn)),
        "flops": float(np.sum(f)),
        "fwd_layer_flops": float(np.sum(f * fwd_share * ~head)),
        "attn_fwd_flops": float(np.sum(f * fwd_share * attn)),
    }
    share = np.zeros(len(rows)) if op_share is None else op_share
    mtp = np.array([groups[g][0] == "mtp" for g, _, _ in rows])
    out["fwd_mtp_s"] = float(np.sum(t * fwd_share * mtp))  # included in fwd_layers_s
    out["bwd_mtp_s"] = float(np.sum(t * (1 - fwd_share) * mtp))
    # the decoder layer kind with the longest layer (an MoE layer beside dense ones): the
    # busiest pipeline stage holds as many of them as it can (``stage_layers_s``)
    kinds = [g for g, (kind, layers) in enumerate(groups)
             if kind not in ("head", "mtp") and layers]
    per = {g: (float(np.sum(time * fwd_share * (gs == g))),
               float(np.sum(time * (1 - fwd_share) * (gs == g))))
           for gs in [np.array([g for g, _, _ in rows])] for g in kinds}
    heavy = max(kinds, key=lambda g: sum(per[g]), default=None)
    out["heavy_layers"] = float(len(groups[heavy][1])) if heavy is not None else 0.0
    out["heavy_group"] = float(heavy) if heavy is not None else -1.0
    out["fwd_heavy_layer_s"], out["bwd_heavy_layer_s"] = per.get(heavy, (0.0, 0.0)) \
        if heavy is not None else (0.0, 0.0)
    out["op_fwd_s"] = float(np.sum(t * fwd_share * share * ~head))
    out["op_fwd_flops"] = float(np.sum(f * fwd_share * share * ~head))
    mod = np.zeros(len(rows)) if mod_share is None else mod_share
    out["mod_fwd_s"] = float(np.sum(t * fwd_share * mod * ~head))
    out["mod_fwd_flops"] = float(np.sum(f * fwd_share * mod * ~head))
    saved = {"other": 0.0, "rep": 0.0, "attn_core": 0.0, "head": 0.0}
    largest = 0.0
    for gi, (kind, layers) in enumerate(groups):
        per_layer = {c: saved_by.get((gi, c), 0.0) for c in ("other", "rep", "attn_core")}
        if kind == "head":
            saved["head"] += sum(per_layer.values())
            continue
        largest = max(largest, sum(per_layer.values()))
        for c, v in per_layer.items():
            saved[c] += v * len(layers)
    out.update({f"saved_{c}": v for c, v in saved.items()})
    out["saved_largest_layer"] = largest
    out["layer_input"] = float(tokens) * hidden * num_layers
    out["expert_params"] = expert_params
    out["dense_params"] = memory["params_per_gpu"] - expert_params
    out["expert_weight_bytes"] = expert_weight_bytes
    out["dense_weight_bytes"] = memory["weights_bytes"] - expert_weight_bytes
    out["num_layers"] = float(num_layers)
    out["hidden"] = float(hidden)
    out["tokens"] = float(tokens)
    out["act_bytes"] = act_bytes
    return out


def _stage_share(base: dict[str, float], per_heavy: Any, total: Any, n: Any) -> Any:
    """``k·per_heavy + (n - k)·(total - n_h·per_heavy)/(L - n_h)``, ``k = min(n, n_h)``: what
    a stage of ``n`` of the ``L`` decoder layers holds of a per-layer quantity whose sum over
    the layers is ``total`` and per layer of the longest kind ``per_heavy``; ``n·total/L``
    when every layer is of one kind (:func:`stage_layers_s`)."""
    layers = base["num_layers"]
    nh = base.get("heavy_layers", 0.0)
    n = np.asarray(n, dtype=np.float64)
    if nh <= 0 or nh >= layers:
        return n * total / max(layers, 1.0)
    k = np.minimum(n, nh)
    return k * per_heavy + (n - k) * np.maximum(total - nh * per_heavy, 0.0) / (layers - nh)


def stage_layers_s(base: dict[str, float], total_s: float, n: Any, backward: bool) -> Any:
    """Forward (or backward) time of the busiest stage's ``n`` decoder layers.

    ``total_s``: that pass over all ``L = base["num_layers"]`` decoder layers. Megatron
    splits the layers in order and a model's layers of one kind are contiguous (DeepSeek-V3:
    3 dense, then 58 MoE), so the busiest stage holds ``k = min(n, n_h)`` of the ``n_h``
    layers of the longest kind (``base["heavy_layers"]``, each ``t_h``) and the rest at the
    other layers' mean: ``k·t_h + (n - k)·(total - n_h·t_h)/(L - n_h)``; ``n·total/L`` when
    every layer is of one kind.
    """
    th = base.get("bwd_heavy_layer_s" if backward else "fwd_heavy_layer_s", 0.0)
    return _stage_share(base, th, total_s, n)


def stage_host_s(base: dict[str, float], n: Any, hooks: Any, mtp: bool,
                 virtual_stages: Any = 1.0) -> Any:
    """Host time one micro-batch exposes on a pipeline stage of ``n`` decoder layers.

    The layers split as their GPU time does (:func:`stage_layers_s`: ``k`` of the longest
    kind first) over the per-layer terms of :func:`.moe_sync.stage_host_terms`: each layer's
    synchronised forward segments and its backward's steady ``(h - t)^+``
    (``host_heavy_layer_s``, ``host_layers_s``), plus, once per backward pass of the stage (per
    virtual stage: each chunk's pass starts from an idle stream), the pass's start
    ``host_pass_start_s``; the MTP blocks' terms on the last stage (``mtp``); Megatron's
    forward pre-hooks (``hook_*``) where ``hooks`` (ZeRO 1 / 2 with ``overlap_param_gather``).
    """
    on = np.asarray(hooks, dtype=bool)
    per = base.get("host_heavy_layer_s", 0.0) + np.where(on, base.get("hook_heavy_layer_s",
                                                                      0.0), 0.0)
    total = base.get("host_layers_s", 0.0) + np.where(on, base.get("hook_layers_s", 0.0), 0.0)
    out = _stage_share(base, per, total, n) + np.asarray(virtual_stages, dtype=np.float64) * \
        base.get("host_pass_start_s", 0.0)
    if mtp:
        out = out + base.get("host_mtp_s", 0.0) + np.where(on, base.get("hook_mtp_s", 0.0), 0.0)
    return out

def compose(base: dict[str, float], hw: Hardware, *, dp: Any, pp: Any, tp: Any, ep: Any,
            cp: Any, zero: Any, recompute: Any, micro_batch: Any, grad_accum: Any,
            virtual_stages: Any, seq_len: int, optimizer: str, overlap: bool,
            sequence_parallel: Any, optimizer_update: bool, gpus_per_node: int | None,
            link_bytes_per_s: float, network_bytes_per_s: float, latency_s: float,
            peak_flops_per_s: float, reduce_bytes: Any = None,
            reshard_after_forward: Any = None, recompute_every: Any = 1,
            overlap_param_gather: bool | None = None, fsdp: str = "fsdp2",
            param_tensors: tuple[np.ndarray, np.ndarray] | None = None,
            clip_grad_norm: bool = False,
            efficiency: EfficiencyLike = "default", offload_layers: Any = 0,
            host_bytes_per_s: float = DEFAULT_HOST_LINK,
            pipeline_head: str = "spread", moe_a2a_overlap: bool = False
            ) -> dict[str, np.ndarray]:
    """Memory and time of every layout given as broadcast arrays (``recompute`` as codes).

    Notes
    -----
    Stages hold whole layers: the busiest holds ``ceil(L/pp)`` of the ``L`` layers
    (``_core.busiest_stage_layers``; Megatron's layouts, e.g. DeepSeek-V3's 4 layers per stage
    at ``pp=16``, reach that bound), of the longest layer kind where it can
    (:func:`stage_layers_s`: DeepSeek-V3's MoE layers, not its 3 dense ones), and its
    layers' forward, backward and recomputation set
    the pace of every micro-batch and of the bubble; the embedding / LM head count ``1/pp``
    per stage (as Llama 3 and DeepSeek-V3 balance their first and last stages), except with
    multi-token prediction: Megatron-Core builds the MTP blocks on the last stage beside the
    loss, which then holds the remaining ``_core.last_stage_layers`` decoder layers, the MTP
    blocks and the whole head, and the busier of that stage and a full one (with its ``1/pp``
    share of the head, the pace without MTP) sets the pace (``base["fwd_mtp_s"]``,
    ``base["bwd_mtp_s"]``): more MTP blocks never make a step faster. A stage's time per
    micro-batch includes the host time it exposes (dropless MoE, eager): the whole pass's
    (``base["host_s"]``) at ``pp = 1``, its own layers' (:func:`stage_host_s`) on a pipeline
    stage, which enters the choice of the pacing stage. Memory and
    data-parallel traffic take the mean stage. Recomputation adds the
    forward of every layer (``full``) or of attention (``selective``) per micro-batch; full
    recomputation keeps each layer's input and, while one layer is recomputed, that layer's
    activations. Layer-selective recomputation (code :data:`LAYER_RECOMPUTE`, every ``k =
    recompute_every``-th block, as torchtitan wraps them) is full recomputation of a share
    ``f = floor(L/k)/L`` of the layers (``_core.checkpointed_layers``) and none of the rest:
    recompute ``f·fwd_layers``, kept activations ``f·input + (1-f)·all``, plus one recomputed
    layer's activations while ``f > 0``. Op-level selective checkpointing (``"op"``,
    torchtitan's ``selective_ac_option="op"``) recomputes ``base["op_fwd_s"]`` (every other
    projection of a block and its elementwise kernels, :mod:`.recompute`) and keeps
    ``base["saved_op"]`` elements (sequence parallelism not applied to them). Module
    recomputation (code :data:`MODULES_RECOMPUTE`, Megatron's ``recompute_modules``) adds
    ``base["mod_fwd_s"]`` (the forward of the named modules' rows) per micro-batch and keeps
    the activations of ``"none"`` less what their checkpoints free (``base["mod_drop_*"]``,
    :func:`.recompute.module_dropped_elements`), plus what one layer's modules freed while its
    backward recomputes them (``base["mod_drop_largest"]``, as full recomputation adds one
    layer's activations). Sequence parallelism divides the replicated hidden-size activations
    (norms, column-parallel TE linears' inputs) by ``tp``. Dense gradients synchronise over
    ``dp·cp`` ranks, expert gradients over ``dp·cp·tp/ep`` (``dp·cp`` without expert
    parallelism). A group runs over the
    scale-up link when all the ranks it spans sit in one node of ``gpus_per_node`` (ranks
    ordered tp, cp, dp, pp), else as NCCL's multi-rail rings: ``min(link, g·network)`` per
    rank, ``g = gpus_per_node / tp`` (``/ ep``: expert groups) ranks per node each with a NIC
    (``rl.all_reduce(..., ranks_per_node=g)``); pipeline sends through the GPU's own NIC.

    Data-parallel communication is scheduled per unit, as FSDP2 and Megatron's bucketed
    gradient reduction run it: a stage's units are the embedding, its ``L/pp`` layers and the
    head (final norm, output layer), each one collective per pass over one link, one unit
    prefetched (see ``_core.overlapped_pass_s``). ZeRO-3 all-gathers each unit's weights (as
    stored: bf16, or the recipe's format) in every micro-batch's forward and, when
    ``reshard_after_forward`` (default ``pp == 1``, torchtitan's policy), again in its backward
    for every layer but the last and the embedding; it reduce-scatters each unit's gradients in
    ``reduce_bytes`` per element (default 4: fp32, FSDP2's ``reduce_dtype`` as torchtitan sets
    it) in every backward. ZeRO-1/2 reduce-scatter (ZeRO-0: all-reduce) the gradients in the
    last micro-batch's backward in the gradient format (bf16, Megatron's default
    ``grad_reduce_in_fp32=False``) and ZeRO-1/2 all-gather the updated weights per unit in the
    first forward, in the format the recipe gathers (``dense_gather_bytes`` /
    ``expert_gather_bytes`` of ``base``: bf16 under MXFP8, after which every rank refreshes its
    weights, ``param_refresh_s`` added to the optimizer step; :mod:`.param_refresh`); with
    ``overlap_param_gather=False`` (default ``overlap``) they gather every
    unit in the optimizer step instead, all of it exposed (``n·layer + embedding + head``
    all-gathers, added to the step and to the exposed communication). Exposed communication
    is each pass's overlapped wall time minus its compute:
    the first all-gather, the last reduction and whatever a unit's collectives take beyond the
    neighbouring unit's compute. While a collective runs, its kernels hold
    ``NCCL_COMM_CTAS / SMs`` of the GPU (one SM per channel), so the compute it overlaps runs
    at the rest of the SMs' rate (``_core.overlapped_pass_s``); that lost time counts as
    exposed communication. Not modeled: the HBM bandwidth the collectives take, DeepSpeed's
    parameter-count buckets (a unit here is a layer).

    ``fsdp`` (``"fsdp2"``, ``"fsdp1"``, ``"megatron"``): the ZeRO-3 implementation whose
    copies around the collectives every micro-batch's forward / backward adds
    (:func:`.fsdp_passes.fsdp_unit_passes_s`: FSDP2's copy-out and ``chunk_cat``, FSDP1's
    gradient path; the root unit never resharded after the forward).
    ``param_tensors``: (one layer's, the root unit's) parameter tensor sizes, which a
    per-tensor optimizer (:data:`PER_TENSOR_OPTIMIZERS`) needs to count the tensors the
    busiest rank steps (:func:`.composer.rank_tensors`; FSDP1's flat shards with ZeRO >= 1).
    ``clip_grad_norm``: the optimizer step first clips the gradients by their global norm
    (:func:`.composer.clip_grad_norm_s` over those tensors, plus a 4-byte all-reduce over
    the data-parallel ranks; needs ``param_tensors``). ``offload_layers`` of the layers offload
    their activations to the host at ``host_bytes_per_s`` (:mod:`.offload`: the memory they
    leave, the wait added to each micro-batch's backward). ``pipeline_head``: ``"spread"``, the
    embedding and LM head count ``1/pp`` per stage; ``"last"``, the whole head on the last stage
    beside ``ceil(L/pp)`` layers, whose time per micro-batch is then the pace
    (``estimate(pipeline_head=)``). ``moe_a2a_overlap``: Megatron-Core's combined 1F1B saves
    ``base["a2a_hidden_*"]`` (:mod:`.moe_overlap`: the hidden all-to-all less what issuing both
    micro-batches from one host thread costs; negative where host-bound) per layer pair, the
    busiest stage's layers' share times its overlapped pairs per step over ``v``
    (``_core.combined_1f1b_pairs``;
    warmup / cooldown and the bubble unchanged). ``efficiency``: the efficiency model
    of the optimizer's and the FSDP implementation's memory-bound kernels (the micro-batch
    terms in ``base`` were priced under it by the caller).
    """
    a = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (
        dp, pp, tp, ep, cp, zero, recompute, micro_batch, grad_accum, virtual_stages,
        sequence_parallel)))
    dp, pp, tp, ep, cp, zero, rc, mb, m, v, sp = a
    ab = base["act_bytes"]
    layers = base["num_layers"]
    sp_div = np.where(sp > 0, tp, 1.0)
    # Time per micro-batch of one stage (the base is one micro-batch of base["tokens"] tokens
    # per GPU; other micro-batch sizes scale linearly, which the planner avoids needing).
    # The busiest stage holds ceil(L/pp) whole layers (``_core.busiest_stage_layers``), as
    # many of the longest kind as there are (``stage_layers_s``); its layers' time sets every
    # micro-batch's pace. The head is spread over the stages (pipeline_head="spread") or, as
    # Megatron-Core placed it before uneven pipeline splits, all on the last stage, whose
    # ceil(L/pp) layers and whole head then set the pace (pipeline_head="last").
    stage = _core.busiest_stage_layers(layers, pp) / layers
    mf, mb_ = base.get("fwd_mtp_s", 0.0), base.get("bwd_mtp_s", 0.0)
    lf, lb = base["fwd_layers_s"] - mf, base["bwd_layers_s"] - mb_
    busy = _core.busiest_stage_layers(layers, pp)
    head_share = 1.0 if pipeline_head == "last" else 1.0 / pp
    full_f = stage_layers_s(base, lf, busy, False) + base["fwd_head_s"] * head_share
    full_b = stage_layers_s(base, lb, busy, True) + base["bwd_head_s"] * head_share
    fwd, bwd = full_f + mf * stage, full_b + mb_ * stage
    # The host time a micro-batch exposes (dropless MoE, eager): one stage holding every layer
    # exposes the whole pass's (``base["host_s"]``, :func:`.moe_sync.moe_host_terms`), a
    # pipeline stage its own layers' (:func:`stage_host_s`); Megatron's forward pre-hooks
    # (distributed optimizer with overlap_param_gather) add theirs.
    opg = overlap if overlap_param_gather is None else overlap_param_gather
    hooks = (zero >= 1) & (zero < 3) & bool(opg)
    full_h = stage_host_s(base, busy, hooks, False, v)
    host = np.where(pp > 1, full_h, base.get("host_s", 0.0)
                    + np.where(hooks, base.get("hook_host_s", 0.0), 0.0))
    # Multi-token prediction: Megatron-Core builds the MTP block(s) on the last stage beside the
    # loss, and the layouts leave that stage the remaining decoder layers
    # (``_core.last_stage_layers``; Megatron-Bridge's DeepSeek-V3 pp=16 layout: 4 decoder
    # layers on each stage, 1 + MTP + loss on the last); the busier of that stage and the pace
    # without MTP (a full stage with its 1/pp share of the head, as above) sets the pace, so
    # an MTP block never makes a step faster: it only adds work on the last stage. Each
    # stage's time counts its exposed host time.
    if mf + mb_ > 0:
        last = _core.last_stage_layers(layers, pp)
        last_f = stage_layers_s(base, lf, last, False) + mf + base["fwd_head_s"]
        last_b = stage_layers_s(base, lb, last, True) + mb_ + base["bwd_head_s"]
        last_h = stage_host_s(base, last, hooks, True, v)
        use_last = (pp > 1) & (last_f + last_b + last_h > full_f + full_b + full_h)
        fwd = np.where(pp > 1, np.where(use_last, last_f, full_f), fwd)
        bwd = np.where(pp > 1, np.where(use_last, last_b, full_b), bwd)
        host = np.where(pp > 1, np.where(use_last, last_h, full_h), host)
    full_share = recomputed_share(rc, layers, recompute_every)
    sel, op, mods = rc == 1, rc == RECOMPUTE["op"], rc == MODULES_RECOMPUTE
    rec = (full_share * base["fwd_layers_s"] + np.where(sel, base["attn_fwd_s"], 0.0)
           + np.where(op, base.get("op_fwd_s", 0.0), 0.0)
           + np.where(mods, base.get("mod_fwd_s", 0.0), 0.0)) * stage
    rec_flops = (full_share * base["fwd_layer_flops"]
                 + np.where(sel, base["attn_fwd_flops"], 0.0)
                 + np.where(op, base.get("op_fwd_flops", 0.0), 0.0)
                 + np.where(mods, base.get("mod_fwd_flops", 0.0), 0.0))
    # Activations of one micro-batch on one GPU.
    kept = np.where(op, base.get("saved_op", 0.0), full_share * base["layer_input"] / sp_div
                    + (1.0 - full_share) * (base["saved_other"] + base["saved_rep"] / sp_div
                                            + np.where(sel, 0.0, base["saved_attn_core"])))
    # recompute_modules free what their checkpoints drop (.recompute.module_dropped_elements)
    kept = kept - np.where(mods, base.get("mod_drop_other", 0.0) + base.get(
        "mod_drop_rep", 0.0) / sp_div + base.get("mod_drop_attn_core", 0.0), 0.0)
    # Activation offloading (pp = 1, no recomputation: arguments.check_offload): the GPU holds
    # (L - K) / L of the layers' activations and each micro-batch waits on the copies.
    off = np.asarray(offload_layers, dtype=np.float64)
    act = ab * (kept * (1.0 - off / layers) + base["saved_head"]) / pp
    bwd = bwd + np.where(off > 0, offload_exposed_s(layers, off, lf, lb, ab * kept,
                                                    host_bytes_per_s), 0.0)
    transient = np.where(full_share > 0, ab * base["saved_largest_layer"],
                         np.where(mods, ab * base.get("mod_drop_largest", 0.0), 0.0))
    inflight = _core.inflight_microbatches(pp, m, v)
    # the combined 1F1B runs one more warm-up chunk (Megatron-LM 92c8482 schedules.py
    # get_pp_rank_microbatches: + 1 with overlap_moe_expert_parallel_comm, interleaved only)
    inflight = inflight + np.where(bool(moe_a2a_overlap) & (pp > 1) & (v > 1), 1.0 / v, 0.0)
    kind, opt_format = OPTIMIZERS[optimizer][0], OPTIMIZERS[optimizer][2]
    expert_dp = np.where(ep > 1, np.maximum(dp * cp * tp / ep, 1.0), dp * cp)
    dense_p, expert_p = base["dense_params"] / pp, base["expert_params"] / pp
    dense_wb, expert_wb = base["dense_weight_bytes"] / pp, base["expert_weight_bytes"] / pp
    reshard = (pp == 1) if reshard_after_forward is None else np.asarray(
        reshard_after_forward, dtype=bool) | np.zeros_like(pp, dtype=bool)
    # ZeRO-3 holds two gathered layers (the one computing and the one prefetched), or every
    # layer of the stage when the forward keeps them for the backward.
    gathered = np.where(zero >= 3, np.where(reshard, 2.0 * (dense_wb + expert_wb) * pp / layers,
                                            dense_wb + expert_wb), 0.0)
    rows = np.stack(np.broadcast_arrays(
        dense_p, expert_p, dense_wb, expert_wb, dp * cp, expert_dp, ab,
        _core.optimizer_bytes_per_param(kind), zero, gathered, act, inflight, transient),
        axis=-1).reshape(-1, _core.train_memory_fields())
    mem = _core.train_memory_sweep(rows)
    # Data-parallel communication.
    node = gpus_per_node
    intra_dp = (tp * cp * dp <= node) if node else np.ones_like(dp, dtype=bool)
    intra_pp = (tp * cp * dp * pp <= node) if node else np.ones_like(dp, dtype=bool)
    lk: dict[str, Any] = dict(link_bw=link_bytes_per_s, net_bw=network_bytes_per_s,
                              latency_s=latency_s, hardware=hw)
    gb = ab  # gradient bytes per element (bf16 gradients)
    # a DP group's ranks per node, each with a NIC: its dp·cp ranks stride tp; Megatron-Core's
    # expert groups order tp (1), ep, dp, so expert-DP ranks stride ep
    dp_node = np.maximum((node or 1) // np.maximum(tp, 1), 1)
    edp_node = np.where(ep > 1, np.maximum((node or 1) // np.maximum(ep, 1), 1), dp_node)

    def both(fn: Any, dense_bytes: np.ndarray, expert_bytes: np.ndarray) -> np.ndarray:
        dense_bytes, expert_bytes = np.broadcast_arrays(dense_bytes, expert_bytes)
        return np.asarray(  # an empty transfer launches nothing
            np.where(dense_bytes > 0, _link(intra_dp, fn, dense_bytes, dp * cp, **lk,
                                            local=dp_node), 0.0)
            + np.where(expert_bytes > 0, _link(intra_dp, fn, expert_bytes, expert_dp, **lk,
                                               local=edp_node), 0.0))

    zeros = np.zeros_like(dp)
    # One stage's units: the embedding, L/pp equal layers, the head (1/pp of each: the stages
    # are balanced as above). Weights as stored; gradients reduced in ``rb`` bytes each.
    n_layers = layers / pp
    # ZeRO-3 gathers the weights as stored; the distributed optimizer (ZeRO-1/2) what the
    # recipe gathers (``dense_gather_bytes`` / ``expert_gather_bytes``: bf16 under MXFP8,
    # :mod:`.param_refresh`; as stored when absent)
    zero12 = (zero >= 1) & (zero < 3)
    per_param = np.where(zero12, base.get("dense_gather_bytes", base["dense_weight_bytes"]),
                         base["dense_weight_bytes"]) / max(base["dense_params"], 1.0)
    per_expert = np.where(zero12, base.get("expert_gather_bytes", base["expert_weight_bytes"]),
                          base["expert_weight_bytes"]) / max(base["expert_params"], 1e-30)
    emb_p, head_p = base["embed_params"] / pp, base["head_params"] / pp
    layer_p = np.maximum(dense_p - emb_p - head_p, 0.0) / n_layers
    layer_e = expert_p / n_layers
    rb = np.where(zero >= 3, 4.0 if reduce_bytes is None else reduce_bytes, gb)

    def unit(dense: np.ndarray, expert: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(all-gather of the weights, reduction of the gradients) of one unit."""
        ag = both(all_gather, dense * per_param + zeros, expert * per_expert + zeros)
        red = np.where(zero == 0, both(all_reduce, dense * rb + zeros, expert * rb + zeros),
                       both(reduce_scatter, dense * rb + zeros, expert * rb + zeros))
        return np.where(zero >= 1, ag, 0.0), red

    layer_ag, layer_red = unit(layer_p, layer_e)
    emb_ag, emb_red = unit(emb_p + zeros, zeros)
    head_ag, head_red = unit(head_p + zeros, zeros)
    # ZeRO-1/2 without overlap_param_gather: the optimizer step gathers every unit's weights
    # before the next forward, none of it behind compute.
    serial_ag = zeros
    if not opg:
        gather_in_step = (zero >= 1) & (zero < 3)
        serial_ag = np.where(gather_in_step, n_layers * layer_ag + emb_ag + head_ag, 0.0)
        layer_ag, emb_ag, head_ag = (np.where(gather_in_step, 0.0, x)
                                     for x in (layer_ag, emb_ag, head_ag))
    # the FSDP implementation's copies around its collectives, every micro-batch (ZeRO-3)
    ff, fb = fsdp_unit_passes_s(fsdp, layer_p, emb_p + head_p + zeros, n_layers, dp * cp,
                                4.0 if reduce_bytes is None else reduce_bytes, reshard,
                                np.maximum(m - 1.0, 0.0) / m, hw, efficiency)
    fwd, bwd = fwd + np.where(zero >= 3, ff, 0.0), bwd + np.where(zero >= 3, fb, 0.0)
    p2p_bytes = mb * seq_len / cp * base["hidden"] * ab / sp_div
    p2p = np.where(pp > 1, _link(intra_pp, send_recv, p2p_bytes, None, **lk), 0.0)
    if optimizer_update:
        shard = np.where(zero >= 1, dense_p / (dp * cp) + expert_p / expert_dp, dense_p + expert_p)
        fmt = "fp32" if opt_format == "fp32" or ab >= 4 else "bf16"
        per_tensor = optimizer in PER_TENSOR_OPTIMIZERS or clip_grad_norm
        if per_tensor and param_tensors is None:
            raise ValueError(f"compose: optimizer={optimizer!r} / clip_grad_norm needs "
                             "param_tensors (the tensor sizes of one layer and of the root unit)")
        if per_tensor and param_tensors is not None:
            tensors = rank_tensors(param_tensors[0], param_tensors[1], n_layers,
                                   np.where(zero >= 1, dp * cp, 1.0))
        if optimizer in PER_TENSOR_OPTIMIZERS:
            opt_s = decoupled_adamw_s(tensors, shard, hw, efficiency)
        else:
            opt_s = optimizer_update_s(shard, optimizer, fmt, hw, efficiency)
        # each rank refreshes its stage's low-precision weights after the distributed
        # optimizer's all-gather (:mod:`.param_refresh`: MXFP8's quantize and buffer zero_)
        opt_s = opt_s + np.where(zero12, base.get("param_refresh_s", 0.0) / pp, 0.0)
        if clip_grad_norm:
            opt_s = opt_s + clip_grad_norm_s(tensors, shard, hw, efficiency) + np.where(
                dp * cp > 1, _link(intra_dp, all_reduce, 4.0 + zeros, dp * cp, **lk,
                                       local=dp_node), 0.0)
    else:
        opt_s = zeros
    # Megatron-Core DDP's gradient checks before the reduction (:mod:`.grad_checks`); TE's
    # once-per-step quantization of bf16 weights (:func:`.param_refresh.weight_cast_s`)
    opt_s = opt_s + np.where(zero < 3, base.get("grad_check_s", 0.0), 0.0) + base.get(
        "weight_cast_s", 0.0) / pp
    # Composer's per-batch training-metric compute syncs over every rank (WORLD)
    world = dp * cp * tp * pp
    one_node = world <= node if node else np.ones_like(dp, dtype=bool)
    ar, ag = (_link(one_node, f, b, world, **lk, local=node or 1)
              for f, b in ((all_reduce, 4.0 + zeros), (all_gather, 4.0 * world)))
    opt_s = opt_s + metric_sync_s(base.get("train_metrics", 0.0), world, ar, ag, hw, efficiency)
    srows = np.stack(np.broadcast_arrays(
        fwd, bwd, rec, p2p, pp, m, v, n_layers, base["fwd_head_s"] / pp, base["bwd_head_s"] / pp,
        layer_ag, layer_red, emb_ag, emb_red, head_ag, head_red, zero, reshard.astype(float),
        opt_s, 1.0 if overlap else 0.0, host,
        min(NCCL_COMM_CTAS / hw.sms, 0.5) if hw.sms else 0.0), axis=-1)
    srows = srows.reshape(-1, _core.train_step_fields())
    st = _core.train_step_sweep(srows)
    shape = dp.shape
    serial_ag = np.broadcast_to(serial_ag, shape)
    hidden = np.zeros(shape)
    if moe_a2a_overlap:  # the a2a the combined 1F1B hides, pairs x the stage's layers' share
        hidden = np.broadcast_to(_core.combined_1f1b_pairs(pp, m, v) / v * _stage_share(
            base, base["a2a_hidden_heavy_layer_s"], base["a2a_hidden_layers_s"], busy), shape)
    time = st[:, 0].reshape(shape) + serial_ag - hidden
    gpus = dp * pp * tp * cp
    flops_step = m * base["flops"] / pp
    return {
        "time_s": time, "compute_s": st[:, 1].reshape(shape) - hidden,
        "bubble_s": st[:, 2].reshape(shape),
        "p2p_s": st[:, 3].reshape(shape),
        "exposed_comm_s": st[:, 4].reshape(shape) + serial_ag,
        "comm_s": st[:, 5].reshape(shape) + serial_ag, "optimizer_s": st[:, 6].reshape(shape),
        "bubble_fraction": st[:, 7].reshape(shape), "recompute_s": m * rec,
        "host_s": st[:, 8].reshape(shape),
        "weights_bytes": mem[:, 0].reshape(shape), "gradients_bytes": mem[:, 1].reshape(shape),
        "optimizer_bytes": mem[:, 2].reshape(shape),
        "activations_bytes": mem[:, 3].reshape(shape), "total_bytes": mem[:, 4].reshape(shape),
        "tokens": mb * seq_len * m * dp, "gpus": gpus,
        "mfu": flops_step / (time * peak_flops_per_s),
        "hfu": (flops_step + m * rec_flops / pp) / (time * peak_flops_per_s),
    }
