"""Megatron-Core's expert-parallel all-to-all overlap (``overlap_moe_expert_parallel_comm``):
the combined 1F1B schedule, its argument and its per-layer terms (issue #24).

Megatron-Core (read at 23dd639c, the Megatron-LM submodule of Megatron-Bridge c0b9a00, 26.02;
unchanged in what is priced here at 23265d2d, 26.04's) runs, with
``overlap_moe_expert_parallel_comm=True`` (Megatron-Bridge's ``moe_a2a_overlap``, which also
sets ``delay_wgrad_compute=True`` and ``moe_shared_expert_overlap=False``,
``scripts/performance/utils/overrides.py``), one micro-batch's forward beside another's
backward, layer by layer (``pipeline_parallel/combined_1f1b.py``,
``models/common/model_chunk_schedule_plan.py`` ``TransformerLayerSchedulePlan.run``). Each
MoE layer is split into nodes (``models/gpt/fine_grained_callables.py``): ``attn`` (the
attention block, pre-MLP norm, shared experts, router and dispatch preprocess, on the compute
stream), ``moe_dispatch`` (the dispatch all-to-all, on a communication stream), ``mlp``
(post-dispatch permute, the experts, combine preprocess; compute stream) and ``moe_combine``
(the combine all-to-all, then the unpermute and residual add, communication stream). A layer
pair of forward micro-batch A and backward micro-batch B runs as::

    comm: combine_bwd(B) | dispatch_fwd(A) -> dispatch_bwd(B)         | combine_fwd(A)
    comp: attn_fwd(A)    | mlp_bwd(B) -> mlp_dw(B) -> mlp_fwd(A)      | attn_bwd(B)

(``delay_wgrad_compute`` moves the experts' weight gradients, ``mlp_dw``, after the
backward dispatch is issued). Each node waits on its own micro-batch's CUDA event, so the two
chains run concurrently and each all-to-all overlaps the other micro-batch's compute of its
phase. Priced per layer pair by :func:`roofline._core.a2a_overlap_exposed_s` (the comm's SMs
slow the compute it overlaps: NCCL's channels, :data:`.training.NCCL_COMM_CTAS`; HybridEP's
``moe_hybridep_num_sms``, 32 as Megatron-Bridge's perf scripts set it); the pairs per step by
:func:`roofline._core.combined_1f1b_pairs` (the first forward and the last backward of each
stage's warmup / cooldown run alone).

Requirements (``TransformerConfig.__post_init__`` at 23dd639c): expert parallelism
(``ep > 1``), the all-to-all or flex dispatcher, a bf16 / fp16 model, no full or block
recomputation, virtual pipeline stages when ``pp > 1``, at most one MTP layer and then
``pp > 1``; CUDA graphs not over the MoE / MLP (the scopes this package prices never are).

The host side (hardware-notes, "the combined 1F1B's host side"): both micro-batches' sub-modules
are issued from one Python thread, so a layer pair lasts at least the host time to issue the
layer's forward and backward launches plus the schedule's own calls
(:data:`SCHEDULE_CALLS`), and the plain schedule's exposed host time of the layer no longer
applies: :func:`roofline._core.combined_1f1b_saving_s` of
:func:`.moe_sync.layer_issue_terms`. The dispatcher's wait (``_maybe_dtoh_and_synchronize``
at ``before_ep_alltoall``, in the dispatch node) waits for the forward's router only; the
backward's expert kernels, issued before it, keep the GPU busy across it. MTP blocks'
all-to-alls are not counted as hidden.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .._errors import ArgumentValueError
from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from ..ops.host import HOST_CLASSES
from .config import TransformerConfig
from .moe_host import HYBRIDEP_DISPATCHERS
from .moe_sync import layer_issue_terms
from .program import Program

__all__ = ["A2A_COMM_SMS", "DEEPEP_COMM_SMS", "HYBRIDEP_COMM_SMS", "DISPATCH_ROWS",
           "COMBINE_ROWS", "SHARED_EXPERT_ROWS", "SCHEDULE_CALLS", "a2a_overlap_option",
           "a2a_overlap_terms", "layer_pair_parts", "overlap_shared_experts", "schedule_calls",
           "shared_overlap_option"]

_Parts = tuple[float, float, float, float, float, float]

#: SMs the all-to-all dispatcher's exchanges hold while they run: NCCL's channels
#: (``training.NCCL_COMM_CTAS``, 16).
A2A_COMM_SMS = 16

#: SMs HybridEP's dispatch / combine kernels hold (``moe_hybridep_num_sms``): Megatron-Core's
#: default is 16 (``transformer_config.py`` @23dd639c, "in pure NVL scenarios, 16 SMs can
#: generally achieve good bandwidth"), but Megatron-Bridge's perf scripts, which ran the
#: published HybridEP rows, set 32 (``_set_common_perf_overrides``,
#: ``scripts/performance/utils/overrides.py`` at c0b9a0003 and 74695a06d).
HYBRIDEP_COMM_SMS = 32

#: SMs DeepEP's normal kernels hold (``moe_deepep_num_sms``: Megatron-Core's default 20,
#: ``transformer_config.py`` @92c8482, which Megatron-Bridge 25.11's perf scripts keep; each
#: channel is a sending and a receiving SM, ``Buffer.num_sms``).
DEEPEP_COMM_SMS = 20

#: Program rows of the ``moe_dispatch`` node (the all-to-all dispatcher's token and
#: probability exchanges; HybridEP's dispatch kernel; DeepEP's layout, notify and dispatch).
DISPATCH_ROWS = ("dispatch all_to_all", "dispatch probs all_to_all", "deepep layout",
                 "deepep notify")
#: Program rows of the ``moe_combine`` node's exchange.
COMBINE_ROWS = ("combine all_to_all",)
#: Shared-expert rows: with the overlap Megatron-Core computes the shared experts in the
#: ``attn`` node, before the router (``shared_experts_compute``).
SHARED_EXPERT_ROWS = ("shared gate_up", "shared act", "shared down",
                      "shared gate/up dgrad sum")  # (the last: AutoModel's, .automodel)


#: Host calls the combined schedule makes per MoE layer pair that the plain schedule does not
#: (Megatron-Core 23dd639c; ``view``: a call that launches nothing; ``module``: a Python-level
#: call priced as a module call), by what makes them:
#:
#: - ``stream_context``: each of the 8 node passes (``attn``, ``moe_dispatch``, ``mlp``,
#:   ``moe_combine``, forward and backward; ``ScheduleNode._forward`` / ``_backward``) runs in
#:   ``stream_acquire_context`` (``pipeline_parallel/utils.py``): the plan's event waited on and
#:   recorded, ``torch.cuda.stream`` entered and left, an NVTX range pushed and popped: 6 calls
#:   each, 48 views; the ``mlp`` node's delayed weight gradients (``backward_dw``,
#:   ``fine_grained_callables.py``): ``torch.cuda.stream`` and an NVTX range, 4 views;
#: - ``tensor_wraps``: ``make_viewless(e).detach()`` and ``requires_grad`` of each node input
#:   (attn 1, dispatch 2, mlp 1, combine 1: 10 views), ``make_viewless`` of each output (5),
#:   ``node.detach`` of the residual and the dispatched probabilities (2 each), the backward's
#:   ``record_stream`` and ``get_grad`` per node (6): 25 views;
#: - ``engine_runs``: each node's backward is its own autograd engine run
#:   (``ScheduleNode.default_backward_func``: ``Variable._execution_engine.run_backward``;
#:   the plain schedule runs one per micro-batch): 4 module calls;
#: - ``quantization_contexts``: under a low-precision recipe the forward nodes ``attn``,
#:   ``moe_dispatch``, ``mlp``, ``moe_combine`` each enter ``get_fp8_context``
#:   (``TransformerLayerSchedulePlan.run``), where the plain ``TransformerBlock`` enters one
#:   per layer (``use_inner_quantization_context``): 3 more module calls.
SCHEDULE_CALLS = {"stream_context": 52.0, "tensor_wraps": 25.0, "engine_runs": 4.0,
                  "quantization_contexts": 3.0}


def schedule_calls(recipe: bool) -> np.ndarray:
    """:data:`SCHEDULE_CALLS` of one layer pair by host class (``recipe``: a low-precision
    recipe runs)."""
    calls = np.zeros(len(HOST_CLASSES))
    calls[HOST_CLASSES.index("view")] = SCHEDULE_CALLS["stream_context"] + \
        SCHEDULE_CALLS["tensor_wraps"]
    calls[HOST_CLASSES.index("module")] = SCHEDULE_CALLS["engine_runs"] + (
        SCHEDULE_CALLS["quantization_contexts"] if recipe else 0.0)
    return calls


def a2a_overlap_option(fn: str, value: object, phase: str, runtime: str, ep: int,
                       cfg: TransformerConfig, dtype: str, par: dict[str, Any],
                       recompute: object) -> bool:
    """Validated ``moe_a2a_overlap`` of ``transformer.estimate`` (module docstring: what
    Megatron-Core requires of it; ``par``: the checked training arguments)."""
    if not isinstance(value, bool):
        raise TypeError(f"{fn}: moe_a2a_overlap must be a bool, got {value!r}")
    if not value:
        return False
    moe, mtp_layers, pp = cfg.is_moe, cfg.mtp_layers, par["pp"]
    virtual_stages = par["virtual_stages"]
    need = [(phase == "train", f"phase='train' (got {phase!r})"),
            (runtime == "megatron", f"runtime='megatron' (got {runtime!r})"),
            (moe, "an MoE model"), (ep > 1, f"ep > 1 (got ep={ep!r})"),
            (dtype in ("bf16", "fp16"), f"dtype 'bf16' or 'fp16' (got {dtype!r})"),
            (pp == 1 or virtual_stages > 1,
             f"virtual_stages > 1 when pp > 1 (got pp={pp!r}, virtual_stages={virtual_stages!r})"),
            (not (isinstance(recompute, str) and (recompute == "full"
                                                  or recompute.startswith("layer"))),
             f"no full or block recomputation (got recompute={recompute!r})"),
            (mtp_layers <= 1 and (mtp_layers == 0 or pp > 1),
             f"at most one MTP layer, and pp > 1 with it (got mtp_layers={mtp_layers!r}, "
             f"pp={pp!r})")]
    for ok, what in need:
        if not ok:
            raise ArgumentValueError(fn, "moe_a2a_overlap", f"True needs {what}")
    return True


def layer_pair_parts(ops: Program, time_s: np.ndarray, g: int) -> _Parts | None:
    """One layer of group ``g`` split as the combined schedule's nodes, seconds:
    ``(combine_bwd, attn_fwd, dispatch_fwd + dispatch_bwd, mlp_fwd + mlp_bwd, combine_fwd,
    attn_bwd)``; None when the group has no expert all-to-all.

    Rows before the group's first dispatch row (and the shared experts) are the ``attn`` node,
    rows between the dispatch and the combine the ``mlp`` node; rows after the combine (its
    unpermute / weighted sum and residual) run after the exchange on the communication stream
    and hide nothing. A ``(fwd+bwd)`` row counts a third of its time as forward, as
    :func:`.training.micro_batch_terms` does."""
    rows = [(i, r[1]) for i, r in enumerate(ops.rows) if r[0] == g]
    base = [n.removesuffix(" bwd") for _, n in rows]
    first = next((k for k, n in enumerate(base) if n in DISPATCH_ROWS), None)
    comb = next((k for k, n in enumerate(base) if n in COMBINE_ROWS), None)
    if first is None or comb is None:
        return None
    out = dict.fromkeys(("cb", "af", "d", "m", "cf", "ab"), 0.0)
    for k, (i, name) in enumerate(rows):
        t = float(time_s[i])
        bwd = name.endswith(" bwd")
        fwd_share = 0.0 if bwd else (1 / 3 if name.endswith("(fwd+bwd)") else 1.0)
        f, b = t * fwd_share, t * (1.0 - fwd_share)
        if base[k] in DISPATCH_ROWS:
            out["d"] += t
        elif base[k] in COMBINE_ROWS:
            out["cb" if bwd else "cf"] += t
        elif k < first or base[k] in SHARED_EXPERT_ROWS:
            out["af"] += f
            out["ab"] += b
        elif k < comb:
            out["m"] += f + b
    return out["cb"], out["af"], out["d"], out["m"], out["cf"], out["ab"]


def a2a_overlap_terms(ops: Program, time_s: np.ndarray, groups: list[Any], heavy: int,
                      hw: Hardware, host: tuple[EfficiencyLike, frozenset[str],
                                               tuple[str, bool]] | None = None
                      ) -> dict[str, float]:
    """What the combined schedule saves per layer pair against the plain schedule's layer,
    for the step's composition (:func:`.training.compose` with ``moe_a2a_overlap``).

    Per decoder layer of an MoE group, the all-to-all it hides, ``a = A - exposed``: ``A`` the
    layer's forward and backward all-to-all time (what the plain schedule runs in series),
    ``exposed`` :func:`roofline._core.a2a_overlap_exposed_s` of :func:`layer_pair_parts`, the
    comm holding ``A2A_COMM_SMS / SMs`` of the GPU (HybridEP: ``HYBRIDEP_COMM_SMS``; at most
    half, as the data-parallel overlap). With the eager MoE host terms (``host``:
    ``(efficiency, graphed, router)`` of :func:`.moe_sync.moe_host_terms`) the saving is
    :func:`roofline._core.combined_1f1b_saving_s` ``g + e - max(g - a, h)`` of
    :func:`.moe_sync.layer_issue_terms` (``g`` the layer's GPU time, ``e`` the host time the
    plain schedule exposes for it, ``h`` the host time to issue it with :func:`schedule_calls`);
    without, ``a``.

    Returns
    -------
    dict
        ``a2a_hidden_heavy_layer_s``: per layer of the ``heavy`` group; ``a2a_hidden_layers_s``:
        summed over every decoder layer (the MTP blocks' are not counted). Negative where the
        pair costs more than the plain schedule's layer.
    """
    sms = HYBRIDEP_COMM_SMS if ops.dispatcher in HYBRIDEP_DISPATCHERS else \
        DEEPEP_COMM_SMS if ops.dispatcher == "deepep" else A2A_COMM_SMS
    share = min(sms / hw.sms, 0.5) if hw.sms else 0.0
    out = {"a2a_hidden_heavy_layer_s": 0.0, "a2a_hidden_layers_s": 0.0}
    issue = {} if host is None else layer_issue_terms(
        ops, time_s, groups, hw, host[0], host[1], host[2],
        extra_calls=schedule_calls(ops.recipe is not None))
    for g, (kind, layers) in enumerate(groups):
        if kind in ("head", "mtp") or not layers:
            continue
        parts = layer_pair_parts(ops, time_s, g)
        if parts is None:
            continue
        cb, _, d, _, cf, _ = parts
        exposed = float(_core.a2a_overlap_exposed_s(*parts, comm_sm_fraction=share))
        hidden = max(cb + d + cf - exposed, 0.0)
        if g in issue:
            gpu, h, e = issue[g]
            hidden = float(_core.combined_1f1b_saving_s(gpu, e, hidden, h))
        out["a2a_hidden_layers_s"] += hidden * len(layers)
        if g == heavy:
            out["a2a_hidden_heavy_layer_s"] = hidden
    return out


def shared_overlap_option(fn: str, value: object, phase: str, cfg: TransformerConfig,
                          a2a_overlap: bool) -> bool:
    """Validated ``moe_shared_overlap`` of ``transformer.estimate``: ``True`` needs training
    of an MoE model with shared experts, outside the combined 1F1B (which computes the shared
    experts in its ``attn`` node and turns Megatron-Core's side stream off)."""
    if not isinstance(value, bool):
        raise TypeError(f"{fn}: moe_shared_overlap must be a bool, got {value!r}")
    if value and (phase != "train" or not cfg.num_shared_experts or a2a_overlap):
        raise ArgumentValueError(fn, "moe_shared_overlap", "True needs phase='train', an MoE "
                                 "model with shared experts and moe_a2a_overlap=False (got "
                                 f"phase={phase!r}, {cfg.num_shared_experts} shared experts)")
    return value


def overlap_shared_experts(rows: list[tuple[int, str, str]], time_s: np.ndarray,
                           dispatcher: str, sms: int) -> np.ndarray:
    """``time_s`` with each MoE layer's shared-expert rows shortened by the time they run beside
    the layer's first exchange, as NeMo AutoModel's ``MoE.forward`` runs them
    (``nemo_automodel/components/moe/layers.py`` @ 89e3a9fdd: the shared MLP is enqueued on
    ``_shared_experts_stream`` before the routed experts, the main stream waits for it only at
    the sum; autograd runs its backward on that stream too).

    Per layer group and pass: ``S`` the shared rows' time, ``E`` the exchange the routed path
    starts with (forward: :data:`DISPATCH_ROWS`; backward: the combine's backward, which
    sends the output gradients back first). Beside the exchange the shared GEMMs get the SMs
    it leaves, ``sms - c`` (``c``: :data:`DEEPEP_COMM_SMS`, :data:`HYBRIDEP_COMM_SMS` or the
    all-to-all's :data:`A2A_COMM_SMS`), so ``S' = S·sms/(sms - c)`` and the pair takes
    ``max(S', E)``: the shared rows keep ``S - saved``, ``saved = S + E - max(S', E)`` in
    ``[0, S]``. What the shared work overlaps after the exchange (the routed GEMMs, which
    want every SM) saves nothing; the host's wait inside the dispatch is not counted.
    Megatron-Core's ``moe_shared_expert_overlap`` splits the shared MLP differently (fc1 beside
    the dispatch, fc2 beside the combine): not this function's program."""
    c = {"deepep": DEEPEP_COMM_SMS}.get(dispatcher, HYBRIDEP_COMM_SMS
                                        if dispatcher in HYBRIDEP_DISPATCHERS else A2A_COMM_SMS)
    slow = sms / max(sms - c, 1)
    out = np.array(time_s, dtype=np.float64, copy=True)
    for g in sorted({r[0] for r in rows}):
        for bwd, exchange in ((False, DISPATCH_ROWS), (True, ("combine all_to_all bwd",))):
            shared = [i for i, (gi, n, _) in enumerate(rows) if gi == g and n.endswith(" bwd") ==
                      bwd and n.removesuffix(" bwd") in SHARED_EXPERT_ROWS]
            e = float(sum(out[i] for i, (gi, n, _) in enumerate(rows)
                          if gi == g and n in exchange))
            s = float(sum(out[i] for i in shared))
            if s <= 0 or e <= 0:
                continue
            saved = min(max(s + e - max(s * slow, e), 0.0), s)
            for i in shared:
                out[i] *= (s - saved) / s
    return out
