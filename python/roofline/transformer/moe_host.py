"""Host calls of Megatron-Core's MoE router and all-to-all preprocess that launch no priced
kernel of their own (issue #24).

The op program prices the router as one GEMM and one top-k kernel. Megatron-Core 0.15
(``megatron/core/transformer/moe/router.py``, ``moe_utils.py``, ``token_dispatcher.py``, as
Megatron-Bridge 25.11's perf scripts run it: ``moe_router_fusion``, ``moe_permute_fusion``,
the all-to-all dispatcher, dropless, force-balanced routing) launches more small kernels and
makes more host calls around them. Counted from the source, per MoE layer:

Forward, router (besides the gating GEMM and TE's fused top-k with score function):
``RandomSTE`` (``moe_router_force_load_balancing``, the benchmark's balanced routing) clones the
logits and fills them with ``normal_``: 2 kernels; the ``autograd.Function`` call: 1 view call.

Forward, dispatcher preprocess (``MoEAlltoAllTokenDispatcher.preprocess``): ``routing_map.sum``
and ``.long()``: 2 kernels; with ``ep > 1`` also the input splits' ``reshape().sum``, the
``gather_from_sequence_parallel_region`` all-gather of the counts over the EP group (an
``autograd.Function`` and its output ``torch.empty``: 2 view calls, 1 collective launch), the
local experts' slice ``.contiguous()``, the sums to tokens per rank, to TP output splits and to
tokens per local expert (6 more kernels, one a collective; 8 view calls: the reshapes,
transpose, slice, index, view and the all-gather's two).

Forward, device-to-host copies (``_maybe_dtoh_and_synchronize`` on the side stream, outside any
CUDA graph): ``wait_stream`` and ``record_event`` (2 view calls), one non-blocking ``.to("cpu")``
(a copy call, kernel class) and ``record_stream`` (view) per tensor: ``tokens_per_expert``, and
with ``ep > 1`` the input, output and TP output splits (each also ``.numpy()``, a view call).
The host then waits on the event (the sync :func:`~.moe_sync.sync_exposed_s` models).

Forward, HybridEP (the flex dispatcher, Megatron-LM 92c8482 / 23dd639 ``token_dispatcher.py``):
``MoEFlexTokenDispatcher.dispatch_preprocess`` is ``@jit_fuser`` (``torch.compile``): the
reshapes and the TPxEP ``expand`` of the routing map and probabilities (no copy at ``tp = 1``)
and ``_HybridEPManager.setup_metadata``'s reshapes: one compiled call, no kernel, none in a
``moe_preprocess`` graph (with ``moe_router``: nothing; alone: its replay). Its device-to-host
copies happen inside the dispatch (:data:`.moe_sync.SYNC_POINTS`): no ``d2h`` stage.

Backward, router: the gating ``RouterGatingLinearFunction.backward`` casts the weight and the
input to fp32 before its two GEMMs and the two gradients back (4 kernels); ``RandomSTE``'s
backward node passes the gradient through (1 backward call, no kernel).

Load-balancing losses (``moe_router_load_balancing_type``, a recipe setting, fused):
``aux_loss`` adds TE's fused score-for-aux kernel, the token count ``routing_map.sum``, TE's
fused aux loss, the tracker's ``loss / coeff`` and ``values[layer] += loss`` (an add and the
index-put copy): 6 kernels and 5 view calls (three ``autograd.Function`` calls: the two
fused kernels' and ``MoEAuxLossAutoScaler``; ``detach``, the select); its backward:
``MoEAuxLossAutoScaler``'s ``ones_like * scale`` (2), the fused
loss's and the score's backward kernels (2) and the add of the logits' two gradients (1): 5
kernels after 3 backward nodes. ``seq_aux_loss`` also divides by the batch (one more kernel
and backward node). ``moe_router_enable_expert_bias`` (DeepSeek-V3) counts the tokens per
expert into ``local_tokens_per_expert``: 2 kernels. Not counted: the z-loss (no row sets it).

Token dropping (``moe_expert_capacity_factor``; Megatron-Core core_v0.11 / core_v0.12,
``moe_utils.py`` ``topk_softmax_with_capacity``, ``token_dispatcher.py``
``MoEAlltoAllTokenDispatcher``): after its top-k the router builds the capacity mask,
``torch.topk(gates, k=C, dim=0)``, ``zeros_like(logits).scatter(0, idx, 1)`` (a fill, the
out-of-place scatter's clone and the scatter), ``.bool()`` and the masked gates
``gates * map``: 6 kernels, and without padding ``logical_and(topk_map, capacity_mask)``: 7
(its backward: ``MulBackward``'s ``grad * map``, 1 kernel after 1 backward node). With
``moe_pad_expert_input_to_capacity`` the dispatcher's ``preprocess`` returns early: the split
sizes are the capacity, known on the host (``get_capacity``; a CPU ``torch.full``, a call
without a kernel, and the sort indices' ``torch.full`` on the device, a fill kernel; core_v0.11
still counts ``routing_map.sum().long()`` first: 2 kernels, ``megatron_core="0.11"``), and
``_maybe_dtoh_and_synchronize`` does nothing: no device-to-host copy, no wait
(:func:`.moe_sync.sync_points`). Without padding the counts stay data-dependent:
``preprocess`` adds ``num_local_tokens_per_expert.sum()`` (1 kernel) for ``num_out_tokens``,
copied to the host with the split sizes (one more copy) and waited for before the first
permutation (``before_permutation_1``) instead of before the all-to-all.

Module calls (Megatron-Core's TE layer spec, ``gpt_layer_specs.py``): each ``nn.Module``
forward of a layer runs its own Python before its first kernel, priced as a module call
(:data:`MCORE_FORWARD_MODULES`, keyed by the program row it precedes): the
``TransformerLayer``, the attention module and its input norm (GQA: the fused
``TELayerNormColumnParallelLinear``; MLA: a ``TENorm``), q / k norms, MLA's down and up
projections, the core attention (and TE's ``FusedAttention`` module it calls), the output
projection, the pre-MLP ``TENorm`` and the
``MoELayer``, the ``TopKRouter``, ``TEGroupedMLP`` and its two ``GroupedLinear``, the shared
expert MLP and its two linears (``IdentityOp`` placeholders are not counted). In the backward
each TE module's ``autograd.Function`` runs its Python ``backward`` body, priced as a module
call too (:data:`MCORE_BACKWARD_FUNCTIONS`).

CUDA graphs (Megatron-Bridge's ``cuda_graph_scope``, ``cuda_graph_impl="transformer_engine"``):
with ``moe_router`` the router's forward and backward kernels (GEMM, top-k and the ones above)
are replayed from a graph, one Python call (a module call) per pass; with ``moe_preprocess``
the preprocess kernels are too (the device-to-host copies stay eager: Megatron-Core moves its
copy point to ``before_ep_alltoall``, after the graph); with ``attn`` the layer's input norm,
attention and residual (the program rows before ``mlp_norm``) replay with one module call per
pass.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._checks import _show, one_of
from ..ops.host import HOST_CLASSES
from .program import Program

__all__ = ["DEEPEP_CALLS", "HYBRIDEP_DISPATCHERS", "LOAD_BALANCING", "MCORE_BACKWARD_FUNCTIONS",
           "MCORE_COMPILED_CALLS", "MCORE_FORWARD_MODULES", "MOE_DISPATCHERS",
           "MOE_GRAPH_SCOPES", "TE_OPS_NORMS", "TE_PADDING_MODULES", "check_dispatcher",
           "ep_of", "graph_scopes", "graphed_calls",
           "MEGATRON_CORE_VERSIONS", "moe_capacity_options", "moe_core_options",
           "moe_extra_launches", "moe_stages", "moe_train_options"]

#: Megatron-Core's load-balancing losses (``moe_router_load_balancing_type``) priced here.
LOAD_BALANCING = ("none", "aux_loss", "seq_aux_loss")

#: CUDA-graph scopes (Megatron-Core ``CudaGraphScope`` names) that change the MoE host calls
#: priced here; ``attn`` is accepted and leaves them as they are.
MOE_GRAPH_SCOPES = ("attn", "moe_router", "moe_preprocess")

_VIEW, _KERNEL, _GEMM, _ATTN, _MODULE, _BACKWARD = range(len(HOST_CLASSES))

#: Megatron-Core module forwards (TE layer spec) that run before a program row's first
#: forward kernel, by row name (see the module docstring).
MCORE_FORWARD_MODULES = {
    "attn_norm": 3,  # TransformerLayer, (MLA)SelfAttention, the input norm module
    "qk_norm": 2, "q_a+kv_a_proj": 2, "q_b_proj": 1, "kv_b_proj": 1,
    # TEDotProductAttention, and inside it TE's FusedAttention module (TE 2.9
    # ``dot_product_attention.py``: ``return self.fused_attention(...)``)
    "attention": 2, "attention (MLA)": 2, "o_proj": 1,
    "mlp_norm": 2,  # pre_mlp_layernorm, MoELayer
    "router": 1, "experts gate_up": 2, "experts down": 1, "shared gate_up": 2,
    "shared down": 1}

#: TE ``autograd.Function`` backward bodies before a program row's first backward kernel,
#: by row name (GQA's fused input norm with ``qkv_proj``; MLA's input ``TENorm`` with its
#: down projections).
MCORE_BACKWARD_FUNCTIONS = {
    "qkv_proj": 1, "qk_norm": 2, "q_a+kv_a_proj": 3, "q_b_proj": 1, "kv_b_proj": 1,
    "attention": 1, "attention (MLA)": 1, "o_proj": 1, "mlp_norm": 1,
    "experts gate_up": 1, "experts down": 1, "shared gate_up": 1, "shared down": 1}


#: ``torch.compile``'d functions (Megatron-Core's ``jit_fuser`` is ``torch.compile`` on torch
#: >= 2.2, ``megatron/core/jit.py``) a program row's kernel comes from, by row name, in each
#: pass: with ``bias_activation_fusion`` (every MoE preset) the experts' weighted SwiGLU /
#: quick-GEGLU (``weighted_swiglu``, ``weighted_swiglu_back``; ``fused_bias_swiglu.py``,
#: ``fused_bias_geglu.py``) and the shared experts' ``bias_swiglu``. Each call enters through
#: Dynamo's guards and the compiled wrapper before its kernel: priced as a module call
#: (``module_call_launches``, 31 us; the measured compiled entry ``compiled_region_s`` +
#: ``compiled_launch_s`` = 38 us less the kernel call already counted, 9 us, is 29 us).
#: The bias-dropout-adds are compiled only with ``bias_dropout_fusion`` (DeepSeek-V3's
#: provider; not Qwen3's or GPT-OSS's): not counted.
MCORE_COMPILED_CALLS = {"experts act": 1, "shared act": 1}

#: TE 2.9's ``te.pytorch.RMSNorm`` (Megatron-Core's ``TENorm``) is a fusible operation:
#: each call builds a new ``OperationFuser`` (``ops/op.py`` ``BasicOperation.forward``) whose
#: ``maybe_fuse_ops`` resets the recipe state and runs four forward and five backward fusion
#: passes before its ``_OperationFuserAutogradFunction``; that Function's backward wraps the
#: op's ``op_backward`` alike. Priced as one more module call per norm and pass, by row:
#: the q and k norms and an MoE layer's pre-MLP norm (Megatron-Core's TE layer spec,
#: ``gpt_layer_specs.py``), the final norm, and MLA's input norm (GQA's input norm, a dense
#: layer's pre-MLP norm and MLA's up-projection norms are fused into TE ``LayerNormLinear``
#: modules; :func:`_ops_norms`).
TE_OPS_NORMS = {"qk_norm": 2, "mlp_norm": 1, "final_norm": 1, "attn_norm": 1}

#: TE ``Fp8Padding`` / ``Fp8Unpadding`` module calls of ``TEGroupedMLP.forward`` under a
#: low-precision recipe (Megatron-Core ``experts.py``: the hidden states and the
#: probabilities padded, the output unpadded; each returns early when every expert's rows
#: are already a multiple of the alignment, as under balanced routing), charged before the
#: experts' first grouped GEMM.
TE_PADDING_MODULES = 3


#: Megatron-Core token dispatchers whose synchronisation points are counted:
#: ``"alltoall"`` (``moe_token_dispatcher_type="alltoall"``), the flex dispatcher with
#: ``moe_flex_dispatcher_backend="hybridep"`` (DeepEP's hybrid-ep branch) in two releases
#: (:data:`HYBRIDEP_DISPATCHERS`) and with ``"deepep"`` (DeepEP's normal kernels, :mod:`.deepep`;
#: :data:`.moe_sync.SYNC_POINTS`).
MOE_DISPATCHERS = ("alltoall", "hybridep", "hybridep_2511", "deepep")

#: The HybridEP dispatchers, by the Megatron-Core / DeepEP pair that runs them (the
#: hybrid-ep commit Megatron-LM's ``docker/Dockerfile.ci.dev`` checks out): ``"hybridep"``
#: Megatron-Core from d2b500f (2025-12-10, ``non_blocking`` API) with hybrid-ep from a484936
#: (2026-01-20; Megatron-Bridge 26.02: Megatron-LM 23dd639, hybrid-ep eb9cee7; 26.04:
#: 23265d2, 34152ae); ``"hybridep_2511"`` Megatron-LM 92c8482 (``use_host_meta`` API) with
#: hybrid-ep 1dddd19 (2025-11-18), as Megatron-Bridge 25.11 (5776a6d) pins. Same kernels,
#: different host waits.
HYBRIDEP_DISPATCHERS = frozenset({"hybridep", "hybridep_2511"})

def check_dispatcher(fn: str, dispatcher: object) -> str:
    """``dispatcher`` if it names one of :data:`MOE_DISPATCHERS`, else a ValueError."""
    if not isinstance(dispatcher, str) or dispatcher not in MOE_DISPATCHERS:
        raise ValueError(f"{fn}: moe_dispatcher must be one of {MOE_DISPATCHERS}, "
                         f"got {dispatcher!r}")
    return dispatcher


def graph_scopes(fn: str, value: object) -> frozenset[str]:
    """Validated ``cuda_graph_scope`` (None or a sequence of :data:`MOE_GRAPH_SCOPES`)."""
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise TypeError(f"{fn}: cuda_graph_scope must be None or a list of scope names "
                        f"{MOE_GRAPH_SCOPES}, got {_show(value)}")
    if not value:  # Megatron reads an empty scope list as the whole layer: say which
        raise ValueError(f"{fn}: cuda_graph_scope must name at least one scope of "
                         f"{MOE_GRAPH_SCOPES} (None: no CUDA graph), got {_show(value)}")
    for s in value:
        if s not in MOE_GRAPH_SCOPES:
            raise ValueError(f"{fn}: cuda_graph_scope entries must be in {MOE_GRAPH_SCOPES}, "
                             f"got {s!r}")
    return frozenset(value)


def moe_train_options(fn: str, phase: str, cuda_graph_scope: object, load_balancing: object,
                      expert_bias: object, dispatcher: object = "alltoall", ep: int = 1,
                      capacity: tuple[object, object] = (None, False),
                      runtime: str = "megatron"
                      ) -> tuple[frozenset[str], tuple[str, bool], str,
                                 tuple[float, bool] | None]:
    """Validated MoE training options of ``transformer.estimate``: ``(graphed scopes,
    (moe_load_balancing, moe_expert_bias), moe_dispatcher, token dropping)``.

    ``cuda_graph_scope``: the parts captured in CUDA graphs (:data:`MOE_GRAPH_SCOPES`,
    ``cuda_graph_impl="transformer_engine"``); ``load_balancing``: the router's loss
    (:data:`LOAD_BALANCING`, ``moe_router_load_balancing_type``); ``expert_bias``:
    ``moe_router_enable_expert_bias``; ``dispatcher``: :data:`MOE_DISPATCHERS`;
    ``capacity``: ``(moe_capacity_factor, moe_pad_to_capacity)``
    (:func:`moe_capacity_options`). Each applies to ``phase='train'`` only,
    a HybridEP dispatcher to ``ep > 1`` only (Megatron-Core's flex dispatcher needs
    ``tp·ep > 1``; the model's HybridEP waits sit on the expert-parallel rows)."""
    graphed = graph_scopes(fn, cuda_graph_scope)
    check_dispatcher(fn, dispatcher)
    if dispatcher != "alltoall" and (phase != "train" or ep < 2):
        raise ValueError(f"{fn}: moe_dispatcher={dispatcher!r} needs phase='train' and ep > 1, "
                         f"got phase={phase!r}, ep={ep!r}")
    if graphed and phase != "train":
        raise ValueError(f"{fn}: cuda_graph_scope applies to phase='train' only, got "
                         f"cuda_graph_scope={cuda_graph_scope!r} with phase={phase!r}")
    balancing = one_of(fn, "moe_load_balancing", load_balancing, {b: b for b in LOAD_BALANCING})
    if not isinstance(expert_bias, bool):
        raise TypeError(f"{fn}: moe_expert_bias must be a bool, got {expert_bias!r}")
    if (balancing != "none" or expert_bias) and phase != "train":
        raise ValueError(f"{fn}: moe_load_balancing / moe_expert_bias apply to phase='train' "
                         f"only, got {load_balancing!r} / {expert_bias!r} with "
                         f"phase={phase!r}")
    dropping = moe_capacity_options(fn, phase, runtime, str(dispatcher), *capacity)
    return graphed, (balancing, expert_bias), str(dispatcher), dropping


def moe_capacity_options(fn: str, phase: str, runtime: str, dispatcher: str, factor: object,
                         pad: object) -> tuple[float, bool] | None:
    """Validated token dropping of ``transformer.estimate``: ``(moe_capacity_factor,
    moe_pad_to_capacity)``, None when dropless (``moe_capacity_factor=None``).

    The names mirror Megatron-Core's router (``topk_softmax_with_capacity(capacity_factor,
    pad_to_capacity)``), set by ``moe_expert_capacity_factor`` and
    ``moe_pad_expert_input_to_capacity``; as there, padding needs a capacity factor
    (``MoEAlltoAllTokenDispatcher.__init__`` asserts it). Priced for Megatron-Core training
    (``runtime="megatron"``, ``phase="train"``) with the all-to-all dispatcher only (its flex
    dispatcher refuses padding, ``token_dispatcher.py`` @ core_v0.15.0)."""
    if not isinstance(pad, bool):
        raise TypeError(f"{fn}: moe_pad_to_capacity must be a bool, got {_show(pad)}")
    if factor is None:
        if pad:
            raise ValueError(f"{fn}: moe_pad_to_capacity=True needs a moe_capacity_factor "
                             f"(Megatron-Core pads each expert's input to its capacity), "
                             f"got moe_capacity_factor=None")
        return None
    if not isinstance(factor, numbers.Real) or isinstance(factor, bool):
        raise TypeError(f"{fn}: moe_capacity_factor must be None or a number > 0, got "
                        f"{_show(factor)}")
    if not math.isfinite(float(factor)) or float(factor) <= 0:
        raise ValueError(f"{fn}: moe_capacity_factor must be a finite number > 0, got "
                         f"{factor!r}")
    if phase != "train" or runtime != "megatron" or dispatcher != "alltoall":
        raise ValueError(f"{fn}: moe_capacity_factor applies to phase='train' with "
                         f"runtime='megatron' and moe_dispatcher='alltoall', got "
                         f"phase={phase!r}, runtime={runtime!r}, moe_dispatcher={dispatcher!r}")
    return float(factor), pad


#: Megatron-Core releases whose MoE layer is priced (:func:`moe_core_options`): "0.15" (the
#: default: Megatron-Bridge 25.11 / 26.x), "0.11" / "0.12" (NeMo 25.02 / 25.04 containers).
MEGATRON_CORE_VERSIONS = ("0.11", "0.12", "0.15")


def moe_core_options(fn: str, phase: str, runtime: str, dispatcher: str,
                     capacity: tuple[float, bool] | None, version: object,
                     permute_fusion: object) -> tuple[str, bool]:
    """Validated ``(megatron_core, moe_permute_fusion)`` of ``transformer.estimate``.

    ``megatron_core`` (:data:`MEGATRON_CORE_VERSIONS`): "0.11" / "0.12" send no router
    probabilities all-to-all and apply them in the unpermute
    (``MoEAlltoAllTokenDispatcher.token_unpermutation(probs=self.probs)``, core_v0.11.0 /
    core_v0.12.0 ``token_dispatcher.py``); core_v0.11 also counts ``routing_map.sum().long()``
    before its drop-and-pad early return (2 kernels). ``moe_permute_fusion`` mirrors
    Megatron's flag (TE's fused permute / unpermute); False prices core_v0.11 / 0.12's
    ``moe_utils.permute`` / ``unpermute`` (:func:`.layers.unfused_permute`), so it needs one
    of those releases and drop-and-pad (``capacity`` padded: without it ``permute`` runs a
    ``masked_select``, whose output size the host waits for, not priced); both apply to
    training with ``runtime="megatron"`` and the all-to-all dispatcher once they differ from
    the defaults ("0.15", True)."""
    if not isinstance(permute_fusion, bool):
        raise TypeError(f"{fn}: moe_permute_fusion must be a bool, got {_show(permute_fusion)}")
    core = one_of(fn, "megatron_core", version, {v: v for v in MEGATRON_CORE_VERSIONS})
    if (core, permute_fusion) == ("0.15", True):
        return core, permute_fusion
    if phase != "train" or runtime != "megatron" or dispatcher != "alltoall":
        raise ValueError(f"{fn}: megatron_core={core!r} / moe_permute_fusion={permute_fusion}"
                         f" apply to phase='train' with runtime='megatron' and moe_dispatcher="
                         f"'alltoall', got phase={phase!r}, runtime={runtime!r}, "
                         f"moe_dispatcher={dispatcher!r}")
    if not permute_fusion and core == "0.15":
        raise NotImplementedError(f"{fn}: moe_permute_fusion=False is priced for "
                                  f"megatron_core='0.11' or '0.12' (their moe_utils.permute / "
                                  f"unpermute), got megatron_core={core!r}")
    if not permute_fusion and not (capacity is not None and capacity[1]):
        raise NotImplementedError(f"{fn}: moe_permute_fusion=False is priced with drop-and-pad "
                                  f"(moe_pad_to_capacity=True) only: the unpadded unfused "
                                  f"permute's masked_select waits on the host, not priced")
    return core, permute_fusion


def _row(**calls: float) -> np.ndarray:
    c = np.zeros(len(HOST_CLASSES))
    for name, n in calls.items():
        c[HOST_CLASSES.index(name)] = n
    return c


#: Python calls without a kernel around DeepEP's exchanges in Megatron-Core (``fused_a2a.py``
#: @92c8482 with ``async_finish=True``), one row after the exchange row, by stage: after the
#: dispatch ``after_event_overlap.current_stream_wait()`` and the host
#: ``torch.tensor(num_recv_tokens_per_expert_list)``: 2 views (its ``autograd.Function`` call
#: and ``EventOverlap(EventHandle())`` come before the layout: ``"deepep preprocess"``); the
#: combine's Function call, event and stream wait: 3; each backward exchange's node (a
#: backward call), event and stream wait. DeepEP's own C++ calls (allocations,
#: ``record_stream``) are inside its launch calls.
DEEPEP_CALLS = {"deepep dispatch": _row(view=2), "deepep combine": _row(view=3),
                "deepep exchange bwd": _row(backward=1, view=2)}
_DEEPEP_ROWS = {"dispatch all_to_all": "deepep dispatch",
                "combine all_to_all": "deepep combine"}


def _router_loss(balancing: str, expert_bias: bool, backward: bool) -> list[np.ndarray]:
    """The load-balancing loss's and the expert bias's launches (module docstring)."""
    rows: list[np.ndarray] = []
    if balancing != "none":
        seq = balancing == "seq_aux_loss"
        if backward:
            rows = [_row(backward=3 + seq, kernel=1)] + [_row(kernel=1)] * (4 + seq)
        else:
            rows = [_row(view=1, kernel=1), _row(kernel=1), _row(view=1, kernel=1)]
            rows += [_row(kernel=1)] * seq + [_row(kernel=1), _row(view=2, kernel=1),
                                              _row(view=1, kernel=1)]
    if expert_bias and not backward:
        rows += [_row(kernel=1), _row(kernel=1)]
    return rows


def moe_extra_launches(stage: str, ep: int, graphed: frozenset[str],
                       balancing: str = "none", expert_bias: bool = False,
                       capacity: tuple[float, bool] | None = None,
                       core: str = "0.15") -> np.ndarray:
    """Host calls before each extra main-stream kernel of one MoE layer's pass.

    Parameters
    ----------
    stage : {"router", "preprocess", "flex preprocess", "deepep preprocess", "d2h", ...}
        Which part (see the module docstring): the router's forward kernels after its
        top-k, the all-to-all dispatcher's preprocess, the flex (HybridEP) dispatcher's
        (one row, no kernel; DeepEP's: its compiled ``torch.topk``, one kernel), the
        device-to-host copies of the split sizes (one row, no
        main-stream kernel: the copies run on a side stream), the router's backward
        (``"router bwd"``), DeepEP's Python around an exchange (:data:`DEEPEP_CALLS`).
    ep : int
        Expert-parallel ranks (``ep > 1`` adds the split sizes and their all-gather).
    graphed : frozenset of str
        CUDA-graph scopes: a graphed part's kernels launch with no host call each.
    balancing : {"none", "aux_loss", "seq_aux_loss"}
        The router's load-balancing loss (training; :data:`LOAD_BALANCING`).
    expert_bias : bool
        The router keeps an expert bias (``moe_router_enable_expert_bias``).
    capacity : (float, bool), optional
        Token dropping ``(capacity factor, pad to capacity)``: the router's capacity mask
        kernels; padded, a preprocess of one fill and no copies; unpadded, one more count
        kernel and copy (module docstring). None: dropless.
    core : str
        Megatron-Core release (:data:`MEGATRON_CORE_VERSIONS`): under padding "0.11" keeps
        the count ``routing_map.sum().long()`` (2 kernels) before the capacity's fill.

    Returns
    -------
    ndarray, shape (kernels, len(HOST_CLASSES))
        One row per extra kernel (GPU time of a few elements: priced at the kernel gap),
        the host calls by class made before it.
    """
    pad = capacity is not None and capacity[1]
    if stage == "router":
        rows = [_row(view=1, kernel=1), _row(kernel=1)]
        if capacity is not None:  # topk, fill, clone, scatter, bool, mul (+ logical_and)
            rows += [_row(kernel=1)] * (6 if pad else 7)
        rows += _router_loss(balancing, expert_bias, False)
        return np.zeros((len(rows), len(HOST_CLASSES))) if "moe_router" in graphed \
            else np.array(rows)
    if stage == "router bwd":
        rows = [_row(backward=1, kernel=1)] + [_row(kernel=1)] * 3
        if capacity is not None:  # the masked gates' MulBackward
            rows += [_row(backward=1, kernel=1)]
        rows += _router_loss(balancing, expert_bias, True)
        return np.zeros((len(rows), len(HOST_CLASSES))) if "moe_router" in graphed \
            else np.array(rows)
    if stage == "preprocess":
        rows = [_row(kernel=1), _row(kernel=1)]
        if pad:  # the capacity's split sizes: a CPU torch.full and the device's fill
            rows = (rows if core == "0.11" else []) + [_row(view=1, kernel=1)]
        elif capacity is not None:  # num_out_tokens = counts.sum()
            rows.append(_row(kernel=1))
        if ep > 1 and not pad:
            rows += [_row(view=1, kernel=1), _row(view=2, kernel=1),
                     _row(view=3, kernel=1), _row(kernel=1), _row(view=1, kernel=1),
                     _row(kernel=1)]
            rows[-1] = rows[-1] + _row(view=1)
        if "moe_preprocess" not in graphed:
            return np.array(rows)
        out = np.zeros((len(rows), len(HOST_CLASSES)))
        if "moe_router" not in graphed:  # its own graph: one replay call
            out[0, _MODULE] = 1.0
        return out
    if stage in DEEPEP_CALLS:  # DeepEP's Python around its exchanges (one row, no kernel)
        return DEEPEP_CALLS[stage][None, :]
    if stage in ("flex preprocess", "deepep preprocess"):  # one compiled call (or its graph's
        # replay); DeepEP's runs its top-k, then FusedDispatch's Function call and event
        deep = float(stage == "deepep preprocess")
        if {"moe_preprocess", "moe_router"} <= graphed:
            return _row(view=2 * deep)[None, :] if deep else np.zeros((0, len(HOST_CLASSES)))
        return _row(module=1, kernel=deep, view=2 * deep)[None, :]
    if stage == "d2h":
        if pad:  # nothing to copy: the sizes are the capacity
            return np.zeros((0, len(HOST_CLASSES)))
        copies = (4 if ep > 1 else 1) + (capacity is not None)  # + num_out_tokens
        numpy = 3 if ep > 1 else 0
        return _row(view=2 + copies + numpy, kernel=copies)[None, :]
    raise ValueError(f"moe_extra_launches: stage must be 'router', 'preprocess', "
                     f"'flex preprocess', 'deepep preprocess', 'd2h' or 'router bwd', got "
                     f"{stage!r}")


def moe_stages(ops: Program, i: int, backward: bool) -> list[str]:
    """The :func:`.moe_host.moe_extra_launches` stages launched right after row ``i``: the
    router's extra kernels and the dispatcher's preprocess and copies after its top-k (a
    HybridEP dispatcher: the flex dispatcher's preprocess, its copies inside the dispatch),
    the router's backward casts after its backward GEMMs; DeepEP's Python calls after each
    of its exchange rows (:data:`DEEPEP_CALLS`)."""
    name = ops.rows[i][1]
    if ops.rows[i][2] == "attention" or not ops.train:
        return []
    if not backward and name in ("topk", "fake gate"):  # AutoModel's gate: no router extras
        gate = ["router"] if name == "topk" else []
        if ops.dispatcher in HYBRIDEP_DISPATCHERS:
            return [*gate, "flex preprocess"]
        if ops.dispatcher == "deepep":
            return [*gate, "deepep preprocess"]
        return [*gate, "preprocess", "d2h"]
    if ops.dispatcher == "deepep" and name.removesuffix(" bwd") in _DEEPEP_ROWS and \
            name.endswith(" bwd") == backward:  # DeepEP's Python around its exchanges
        return ["deepep exchange bwd" if backward else _DEEPEP_ROWS[name]]
    if backward and name == "router bwd":
        return ["router bwd"]
    return []


def ep_of(ops: Program, g: int) -> int:
    """Expert-parallel ranks of group ``g``'s all-to-all dispatch (1 without one)."""
    for row in ops.rows:
        if row[0] == g and row[1] == "dispatch all_to_all":
            for kind, idx in row[3]:
                if kind == "comms":
                    return int(ops.comms[idx][2])
    return 1


def _ops_norms(ops: Program, i: int, base: str) -> int:
    """:data:`TE_OPS_NORMS` of row ``i`` (named ``base``): the input norm is a ``TENorm``
    only with MLA (an ``attention (MLA)`` row in the group), the pre-MLP norm only before an
    MoE layer (a ``router`` or ``fake gate`` row)."""
    need = {"attn_norm": ("attention (MLA)",), "mlp_norm": ("router", "fake gate")}.get(base)
    if need is not None and not any(r[0] == ops.rows[i][0] and r[1] in need for r in ops.rows):
        return 0
    return TE_OPS_NORMS.get(base, 0)


def _mlp_norm(ops: Program, g: int) -> int:
    """The index of group ``g``'s first ``mlp_norm`` row, -1 if none."""
    for j, row in enumerate(ops.rows):
        if row[0] == g and row[1] == "mlp_norm":
            return j
    return -1


def _attn_row(ops: Program, i: int) -> bool:
    """Whether row ``i`` precedes its group's ``mlp_norm`` (the layer's attention part)."""
    norm = _mlp_norm(ops, ops.rows[i][0])
    return 0 <= norm and i < norm


def graphed_calls(ops: Program, i: int, calls: np.ndarray, backward: bool,
                  graphed: frozenset[str]) -> np.ndarray:
    """Host calls before row ``i``'s kernels in Megatron-Core training: the module calls of
    :data:`MCORE_FORWARD_MODULES` / :data:`MCORE_BACKWARD_FUNCTIONS`, the compiled entries of
    :data:`MCORE_COMPILED_CALLS`, the fusible-op norms' fusers (:data:`TE_OPS_NORMS`) and,
    under a recipe, :data:`TE_PADDING_MODULES` added to ``calls``, with another framework's
    own module calls beside them (:attr:`.program.Program.module_calls`); a
    CUDA-graphed part (``moe_router``: the router GEMM and top-k; ``attn``: the rows before
    ``mlp_norm``) launches from the graph, its replay one module call before the pass's
    first kernel of the part (the forward's first row, the backward's last)."""
    name = ops.rows[i][1]
    # a low-precision linear is one ``(fwd+bwd)`` row launched in both passes
    base = name.removesuffix(" bwd").removesuffix(" (fwd+bwd)")
    if not ops.train:
        return calls
    out: np.ndarray = np.array(calls, dtype=np.float64)
    table = MCORE_BACKWARD_FUNCTIONS if backward else MCORE_FORWARD_MODULES
    out[0, _MODULE] += table.get(base, 0) + MCORE_COMPILED_CALLS.get(base, 0)
    out[0, _MODULE] += _ops_norms(ops, i, base) + ops.module_calls.get((base, backward), 0.0)
    if base == "experts gate_up" and not backward and ops.recipe is not None:
        out[0, _MODULE] += TE_PADDING_MODULES
    if "moe_router" in graphed and base in ("router", "topk"):
        out = np.zeros_like(calls)
        if base == ("topk" if backward else "router"):
            out[0, _MODULE] = 1.0
    elif "attn" in graphed and _attn_row(ops, i):
        g = ops.rows[i][0]
        norm = _mlp_norm(ops, g)  # the group's rows before it: _attn_row, found once
        part = [j for j, r in enumerate(ops.rows) if r[0] == g and 0 <= norm and j < norm
                and r[1].endswith(" bwd") == backward]
        out = np.zeros_like(calls)
        if i == (part[-1] if backward else part[0]):
            out[0, _MODULE] = 1.0
    return out
