"""Host time a dropless MoE training step exposes, eager: what each program row launches
per pass (TE's GroupedLinear: one GEMM per local expert, per-expert quantize kernels), the
host calls before each launch by class, and the synchronisation of Megatron-Core's
dispatcher that leaves the launch queue empty (:func:`sync_exposed_s`)."""

from __future__ import annotations

import numpy as np

from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from ..ops.host import HOST_CLASSES, MAX_KERNELS, TooManyKernelsError, calls_wall
from .layers import GLU_CLAMP_ROW
from .moe_host import check_dispatcher, ep_of, graphed_calls, moe_extra_launches, moe_stages
from .pricing import _f8_kernels
from .program import Program

__all__ = ["MCORE_ROW_KERNELS", "SYNC_POINTS", "TE_COMPUTE_STREAMS",
           "TE_GROUPED_PY_CALLS", "TE_SWIZZLE_TENSORS", "TE_WGRAD_CLEAR_CALLS",
           "layer_issue_terms", "moe_host_terms", "stage_host_terms", "sync_exposed_s",
           "sync_points",
           "te_grouped_call_views", "te_swizzle_kernels"]

#: Host classes (indices into ``HOST_CLASSES``).
_VIEW, _KERNEL, _GEMM, _ATTN, _MODULE, _BACKWARD = range(len(HOST_CLASSES))

#: Where the host waits for the device in one MoE layer's pass, dropless, by
#: ``(dispatcher, backward)``: ``(row, 0)`` before the row's first launch, ``(row, 1)``
#: after its last.
#:
#: - ``alltoall``: the forward's copy of the split sizes (``before_ep_alltoall``, or
#:   ``before_finish`` without EP), after the fused permute; the backward knows its splits:
#:   none.
#: - ``hybridep`` (Megatron-Core from d2b500f, 2025-12-10: ``fused_a2a.py`` passes
#:   ``non_blocking = num_permuted_tokens is not None``, False dropless; DeepEP hybrid-ep from
#:   a484936, 2026-01-20, as Megatron-Bridge 26.02 / 26.04 run it: Megatron-LM 23dd639 /
#:   23265d2 with hybrid-ep eb9cee7 / 34152ae, ``csrc/hybrid_ep/executor/executor.cu``):
#:   ``metadata_preprocess_core`` writes the dispatched-token count to pinned memory and
#:   ``dispatch_preprocess`` writes ``tokens_per_expert`` to pinned memory in its permute
#:   preprocessing, then calls ``cudaStreamSynchronize`` once and sums the counts on the host,
#:   before the dispatch kernel: one wait. The permute after the dispatch and the combine's
#:   unpermute read the counts from pinned memory on the device, and the backward reuses the
#:   handle (``row_id_map`` given, ``num_permuted_tokens`` a host value): no other wait.
#: - ``hybridep_2511`` (Megatron-LM 92c8482 ``token_dispatcher.py`` ``_HybridEPManager``,
#:   ``fused_a2a.py``; DeepEP hybrid-ep 1dddd19, the commit 92c8482's
#:   ``docker/Dockerfile.ci.dev`` checks out, ``csrc/hybrid_ep/hybrid_ep.cu``,
#:   ``executor/executor.cu``): dropless, the manager passes ``num_dispatched_tokens=None``,
#:   so ``dispatch_with_permute`` copies the dispatched-token count to pinned memory with
#:   ``non_blocking=False`` (a copy the handle never uses) and reads it with ``.item()`` on
#:   the CUDA tensor the metadata kernel wrote (after the routing map's all-gather and
#:   metadata kernel: before the dispatch kernel), ``dispatch_postprocess`` copies
#:   ``tokens_per_expert`` to pinned memory with ``non_blocking=false`` before its permute
#:   kernel (our ``sort chunks by expert``) and ``combine_with_unpermute`` reads the count
#:   with ``.item()`` again before its unpermute (our ``unsort chunks``). The backward runs
#:   the same two calls the other way round (``HybridEPCombine.backward`` =
#:   ``dispatch_with_permute`` with the handle: ``.item()`` before the dispatch, our
#:   ``combine all_to_all bwd``; ``HybridEPDispatch.backward`` = ``combine_with_unpermute``:
#:   ``.item()`` before its unpermute, our ``sort chunks by expert bwd``).
SYNC_POINTS: dict[tuple[str, bool], tuple[tuple[str, int], ...]] = {
    ("alltoall", False): (("permute", 1),),
    ("alltoall", True): (),
    ("hybridep", False): (("dispatch all_to_all", 0),),
    ("hybridep", True): (),
    ("hybridep_2511", False): (("dispatch all_to_all", 0), ("sort chunks by expert", 0),
                               ("unsort chunks", 0)),
    ("hybridep_2511", True): (("combine all_to_all bwd", 0),
                              ("sort chunks by expert bwd", 0)),
    # DeepEP (.deepep): the CPU spins on moe_recv_counter after the notify kernel; the
    # backward's dispatch is cached (the counts in the handle)
    ("deepep", False): (("dispatch all_to_all", 0),),
    ("deepep", True): (),
}


def sync_points(ops: Program, backward: bool) -> tuple[tuple[str, int], ...]:
    """Where the host waits in one MoE layer's pass: :data:`SYNC_POINTS` when dropless; with
    token dropping (``ops.moe_capacity``, the all-to-all dispatcher; Megatron-Core core_v0.11
    / core_v0.12 ``token_dispatcher.py``) padded to capacity none (``preprocess`` returns the
    capacity as the split sizes and ``_maybe_dtoh_and_synchronize`` skips its copies and
    wait), unpadded the forward's wait moves to ``before_permutation_1``: before the permute,
    whose output size ``num_out_tokens`` is the kept count."""
    if ops.moe_capacity is None:
        return SYNC_POINTS[(ops.dispatcher, backward)]
    return () if ops.moe_capacity[1] or backward else (("permute", 0),)


#: Kernels Megatron-Core + TE 2.9 launch for these one-row elementwise parts, by
#: ``(row, backward)``: the q and k norms are two ``TENorm`` calls and RoPE two fused calls
#: (``apply_rotary_pos_emb`` on query and key; MLA's ``fused_apply_mla_rope_for_q`` /
#: ``_for_kv``); every RMSNorm backward (``rmsnorm_bwd``,
#: ``common/normalization/rmsnorm/rmsnorm_bwd_semi_cuda_kernel.cu``) runs its kernel and a
#: finalize kernel that reduces the weight gradient's per-CTA parts.
MCORE_ROW_KERNELS = {("qk_norm", False): 2, ("qk_norm", True): 4, ("rope", False): 2,
                     ("rope", True): 2, ("attn_norm", True): 2, ("mlp_norm", True): 2,
                     ("q_a_norm", True): 2, ("kv_a_norm", True): 2, ("final_norm", True): 2}


def _row_kernels(ops: Program, i: int, f8: int, backward: bool) -> tuple[int, float]:
    """``(kernels, share of the row's time)`` that row ``i`` launches in one pass.

    Forward rows launch their kernels in the forward, ``... bwd`` rows in the backward; a
    float8 linear's ``(fwd+bwd)`` row launches a third of its kernels (and of its time) in the
    forward, the rest in the backward. Transformer Engine's ``GroupedLinear`` launches one
    GEMM per local expert (``len(counts)`` kernels per grouped part) and, with a
    low-precision recipe, quantizes each expert's rows in its own kernel (the ``experts
    quantize`` rows: one kernel per expert for each of the two grouped linears); the norm
    and RoPE rows of :data:`MCORE_ROW_KERNELS` launch as many kernels as listed there.
    """
    _, name, _, parts = ops.rows[i]
    if name.endswith("(fwd+bwd)"):
        fwd = max(1, f8 // 3)
        return (f8 - fwd, 2 / 3) if backward else (fwd, 1 / 3)
    if name.endswith(" bwd") != backward:
        return 0, 0.0
    if name.startswith("experts quantize"):
        experts = max((len(ops.grouped[idx][0]) for j, row in enumerate(ops.rows)
                       if row[0] == ops.rows[i][0] for kind, idx in row[3]
                       if kind == "grouped"), default=1)
        return 2 * experts, 1.0
    listed = MCORE_ROW_KERNELS.get((name.removesuffix(" bwd"), backward))
    if listed is not None and [k for k, _ in parts] == ["elts"]:
        return listed, 1.0
    n = sum(max(1, f8 // 3) if kind == "f8" else
            len(ops.grouped[idx][0]) if kind == "grouped" else 1 for kind, idx in parts)
    return n, 1.0


def _wgrad_calls(c: np.ndarray) -> None:
    """Host calls that follow one weight's gradient GEMM in Megatron-Core + TE: the weight's
    ``AccumulateGrad`` node (autograd engine), Megatron DDP's per-parameter backward hook (a
    Python call, priced as a module call) and the dummy gradient TE allocates for it
    (``handle_custom_ddp_from_mcore``: ``torch.empty``, a call without a kernel)."""
    c[_BACKWARD] += 1.0
    c[_MODULE] += 1.0
    c[_VIEW] += 1.0


#: Python calls without a kernel that TE's ``_GroupedLinear`` (Transformer Engine 2.9,
#: ``pytorch/module/grouped_linear.py``) makes per local expert besides its GEMM, priced as
#: ``view`` calls (a call that launches nothing), keyed by whether the pass is the backward
#: and whether a low-precision recipe runs:
#:
#: - forward, quantized: the input and the weight quantizer's ``set_usage``, the weight's
#:   ``get_weight_workspace``, the saved input's ``update_usage``, the quantized weight's
#:   ``update_usage(columnwise_usage=True)`` (the input needs a gradient), four tensors
#:   through ``prepare_for_saving`` (input, quantized weight, weight, bias) and the
#:   ``main_grad`` lambda: 10;
#: - forward, bf16: ``cast_if_needed`` of the weight, the four saved tensors and the lambda: 6;
#: - backward: the four tensors through ``restore_from_saved``, the ``main_grad`` lambda's
#:   call: 5, quantized also the weight's ``update_usage`` before the dgrad: 6 (bf16 also
#:   splits the gradient into one view per expert, quantized runs ``split_quantize`` in C++:
#:   counted with the quantize kernels).
TE_GROUPED_PY_CALLS = {(False, True): 10.0, (False, False): 6.0, (True, True): 6.0,
                       (True, False): 6.0}

#: Calls without a kernel after each expert's wgrad GEMM, by whether a recipe runs: TE's
#: ``clear_tensor_data`` of the saved input resets each held tensor's ``.data`` to an empty
#: one (``MXFP8TensorStorage.clear``: the columnwise data and its scales, 2; a bf16 split,
#: 1), a call that launches nothing each.
TE_WGRAD_CLEAR_CALLS = {True: 2.0, False: 1.0}

#: Compute streams over which Transformer Engine 2.9 spreads a grouped call's GEMMs
#: (``common/util/multi_stream.cpp``: ``num_compute_streams = 4``).
TE_COMPUTE_STREAMS = 4

#: Scale tensors one ``nvte_multi_tensor_swizzle_scaling_factors`` launch takes (TE 2.9
#: ``common/swizzle/swizzle.cu``: ``kMaxTensorsPerKernel = 64``).
TE_SWIZZLE_TENSORS = 64


def te_grouped_call_views(gemms: int) -> float:
    """CUDA stream and event calls around one TE grouped GEMM call of ``gemms`` GEMMs.

    TE 2.9's ``multi_stream_cublas_gemm`` (``common/gemm/cublaslt_gemm.cu``, reached from
    ``general_grouped_gemm`` through ``nvte_multi_tensor_gemm``) records an event on the
    main stream and makes each of the ``s = min(TE_COMPUTE_STREAMS, gemms)`` compute
    streams wait on it, launches the GEMMs round-robin over them, then records an event on
    each and makes the main stream wait on each: ``1 + 3 s`` driver calls that launch
    nothing, priced as ``view`` calls.
    """
    return 1.0 + 3.0 * min(TE_COMPUTE_STREAMS, gemms)


def te_swizzle_kernels(gemms: int, recipe: str | None) -> int:
    """Scale-swizzle kernels before one TE grouped GEMM call of ``gemms`` GEMMs.

    Under MXFP8 (``mxfp8_te``) TE 2.9's ``te_general_grouped_gemm``
    (``pytorch/csrc/extensions/gemm.cpp``) swizzles the e8m0 scales of all its A operands,
    then of all its B operands (``multi_tensor_swizzle_scaling_factors``,
    ``pytorch/csrc/util.cpp``: one buffer, one launch per :data:`TE_SWIZZLE_TENSORS`
    tensors) before the GEMMs: ``2 ceil(gemms / 64)`` kernels over a few KB of scales
    (priced at the kernel gap). Other recipes swizzle nothing.
    """
    return 2 * -(-gemms // TE_SWIZZLE_TENSORS) if recipe == "mxfp8_te" else 0


def _hooked_params(ops: Program, i: int, experts: int) -> float:
    """Parameters Megatron's forward pre-hook visits in one grouped linear of row ``i``.

    With the distributed optimizer and ``overlap_param_gather``, Megatron-Core's
    ``DistributedDataParallel`` registers ``_make_forward_pre_hook`` on every module
    (``megatron/core/distributed/distributed_data_parallel.py``, 92c8482); before each module
    forward it loops over the module's own parameters, a dict lookup and
    ``finish_param_sync`` each: one ``view`` call per parameter. TE's ``GroupedLinear`` holds
    one weight per local expert and, with expert biases (the group has an
    ``experts fc2 bias`` row), one bias each.
    """
    g = ops.rows[i][0]
    bias = any(r[0] == g and r[1].startswith("experts fc2 bias") for r in ops.rows)
    return float(experts * (2 if bias else 1))


def _row_calls(ops: Program, i: int, n: int, backward: bool,
               param_hooks: bool = False) -> np.ndarray:
    """Host calls by class before each of the ``n`` kernels row ``i`` launches in one pass.

    A GEMM is one ``gemm`` call (Transformer Engine's C++ ``cublas_gemm`` builds the cuBLASLt
    descriptors and asks for a heuristic on every call, as ATen's GEMM does); TE's
    ``GroupedLinear`` makes one per local expert (``general_grouped_gemm``: forward, dgrad,
    wgrad), and each expert weight's gradient adds :func:`_wgrad_calls`; before each expert's
    forward or dgrad GEMM its Python bookkeeping adds :data:`TE_GROUPED_PY_CALLS` view calls;
    each grouped call's stream and event calls (:func:`te_grouped_call_views`) come before
    its first GEMM, and so, in the forward with ``param_hooks``, does Megatron's forward
    pre-hook loop over the grouped linear's parameters (:func:`_hooked_params`).
    An attention call is one ``attention`` call; every other kernel (quantize, elementwise,
    collective) one ``kernel`` call.
    """
    _, _, kind, parts = ops.rows[i]
    c = np.zeros((n, len(HOST_CLASSES)))
    if kind == "attention":
        c[:, _ATTN] = 1.0
        return c
    grouped = [(idx, ops.grouped[idx]) for k, idx in parts if k == "grouped"]
    if grouped:  # one GEMM per local expert and grouped part, in part order
        row = 0
        for _, (counts, _, _, lay) in grouped:
            if row < n:
                c[row, _VIEW] += te_grouped_call_views(len(counts))
                if param_hooks and not backward:
                    c[row, _VIEW] += _hooked_params(ops, i, len(counts))
            for _ in counts:
                if row < n:
                    c[row, _GEMM] = 1.0
                    if lay == "looped_wgrad":
                        _wgrad_calls(c[row])
                        c[row, _VIEW] += TE_WGRAD_CLEAR_CALLS[ops.recipe is not None]
                    else:
                        c[row, _VIEW] += TE_GROUPED_PY_CALLS[(backward, ops.recipe is not None)]
                row += 1
        return c
    gemm_parts = [(k, idx) for k, idx in parts if k in ("gemms", "lowp", "wo")]
    if gemm_parts and n == len(parts):  # one GEMM kernel per part
        for r, (k, idx) in enumerate(parts):
            c[r, _GEMM] = 1.0
            wgrad = (k == "gemms" and ops.gemms[idx][4]) or (
                k == "lowp" and backward and r == len(parts) - 1)
            if wgrad:
                _wgrad_calls(c[r])
        return c
    if any(k == "f8" for k, _ in parts):  # a float8 linear: its GEMMs first, then its casts
        gemms = min(n, 2 if backward else 1)
        c[:gemms, _GEMM] = 1.0
        c[gemms:, _KERNEL] = 1.0
        if backward:
            _wgrad_calls(c[0])
        return c
    c[:, _KERNEL] = 1.0
    return c


def _launched(ops: Program, order: list[int], row_time_s: np.ndarray, f8: int,
              backward: bool, graphed: frozenset[str] = frozenset(),
              router: tuple[str, bool] = ("none", False), param_hooks: bool = False
              ) -> tuple[np.ndarray, np.ndarray]:
    """GPU time of each kernel the rows ``order`` launch in one pass, in launch order, and the
    host calls by class before each launch (:func:`_row_calls`), with the MoE router's and
    dispatcher's extra launches after the router rows (:func:`.moe_host.moe_extra_launches`;
    a CUDA-graphed router launches its GEMM and top-k with one module call, the replay) and
    each TE grouped call's scale swizzles before its GEMMs (:func:`te_swizzle_kernels`, one
    ``kernel`` call each)."""
    times: list[np.ndarray] = []
    calls: list[np.ndarray] = []
    eps = {g: ep_of(ops, g) for g in {ops.rows[i][0] for i in order}}
    # a group's rows repeat once per layer in ``order``: each row's arrays are built once
    done: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for i in order:
        if i not in done:
            row_t: list[np.ndarray] = []
            row_c: list[np.ndarray] = []
            n, share = _row_kernels(ops, i, f8, backward)
            swizzles = sum(te_swizzle_kernels(len(ops.grouped[idx][0]), ops.recipe)
                           for kind, idx in ops.rows[i][3] if kind == "grouped") if n else 0
            if swizzles:
                row_t.append(np.zeros(swizzles))
                row_c.append(np.zeros((swizzles, len(HOST_CLASSES))))
                row_c[-1][:, _KERNEL] = 1.0
            if n:
                row_t.append(np.full(n, row_time_s[i] * share / n))
                row_c.append(graphed_calls(ops, i, _row_calls(ops, i, n, backward, param_hooks),
                                           backward, graphed))
            for stage in moe_stages(ops, i, backward):
                extra = moe_extra_launches(stage, eps[ops.rows[i][0]], graphed, *router,
                                           capacity=ops.moe_capacity, core=ops.moe_core[0])
                row_t.append(np.zeros(len(extra)))
                row_c.append(extra)
            done[i] = (row_t, row_c)
        times += done[i][0]
        calls += done[i][1]
    if not times:
        return np.zeros(0), np.zeros((0, len(HOST_CLASSES)))
    return np.concatenate(times), np.concatenate(calls)


def _segment_exposed_s(ops: Program, order: list[int], row_time_s: np.ndarray, f8: int,
                       hw: Hardware, efficiency: EfficiencyLike, graphed: frozenset[str],
                       router: tuple[str, bool], param_hooks: bool) -> float:
    """``wall - GPU`` of the forward rows ``order`` launched from an idle stream (after a
    host sync): the host's calls before the first launch count too (``calls_wall`` charges
    none before its reference launch, a zero-time one)."""
    seq, calls = _launched(ops, order, row_time_s, f8, backward=False, graphed=graphed,
                           router=router, param_hooks=param_hooks)
    seq = np.concatenate([[0.0], seq])
    calls = np.concatenate([np.zeros((1, calls.shape[1])), calls])
    w = calls_wall(seq, calls, hw, efficiency=efficiency)
    return max(w.wall_s - float(seq.sum()), 0.0)


def sync_exposed_s(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
                   hw: Hardware, efficiency: EfficiencyLike,
                   graphed: frozenset[str] = frozenset(),
                   router: tuple[str, bool] = ("none", False),
                   param_hooks: bool = False) -> float:
    """Host time per micro-batch that a dropless MoE step's launches expose, eager.

    Forward: a dropless MoE layer (Megatron-Core's all-to-all / flex dispatchers, TE's
    GroupedLinear) learns how many tokens each expert received only on the GPU; the host
    copies the counts back (a synchronisation) before it can size the all-to-all splits and
    the per-expert GEMMs (Megatron-Core's ``before_ep_alltoall``, or ``before_finish``
    without EP: after the fused permute, whose dropless output size is static). The launch
    queue is empty at that point: from the sync on, the GPU runs only what the host launches,
    so each layer's forward from the row after its permute to the next layer's permute is a
    kernel sequence launched from an idle stream (:func:`~roofline.ops.host.calls_wall`, the
    host calls before its first launch included), and its wall time above its GPU time is
    exposed. A clamped gated activation (GPT-OSS) syncs once more: Megatron-Core's
    ``weighted_bias_quick_geglu_impl`` builds its offset with ``torch.tensor(linear_offset,
    device=...)`` after the clamps, a pageable host-to-device copy that PyTorch runs as
    ``cudaMemcpyAsync`` + ``cudaStreamSynchronize`` (``copy_kernel_cuda``,
    ``memcpy_and_sync``): the segment from the row after :data:`.layers.GLU_CLAMP_ROW` on
    starts from an idle stream too. HybridEP waits once per layer, before its dispatch kernel
    (``"hybridep"``), or, as Megatron-Bridge 25.11 ran it (``"hybridep_2511"``), three times:
    before its dispatch, before its permute and before its combine's unpermute
    (:data:`SYNC_POINTS`).

    Backward: the all-to-all dispatcher knows its splits (no sync), so the host runs ahead;
    the backward starts from a queue the synchronised forward left (nearly) empty and lasts
    ``max_i (A_i + sum_{j >= i} g_j)`` over its kernels in launch order (the whole backward
    of every layer and the head, last layer first), exposing its launch time where the host
    issues kernels slower than the GPU runs them (many small per-expert kernels). HybridEP
    (``"hybridep"``) does the same; ``"hybridep_2511"`` waits twice per layer in the backward
    (before the combine's backward dispatch and before the dispatch's backward combine):
    each part after a wait starts from an idle stream and exposes ``wall - GPU`` as a
    forward segment does.

    Kernels per row as :func:`_row_kernels` counts them (TE's one GEMM and, with a
    low-precision recipe, one quantize kernel per local expert; under MXFP8 each grouped
    call's two scale swizzles, :func:`te_swizzle_kernels`); the host time before each
    launch by class (:func:`_row_calls`: a GEMM call builds its cuBLASLt descriptors and
    heuristic, an expert weight's gradient adds its autograd node and Megatron's DDP hook,
    a grouped call its stream and event calls), priced with the measured host terms
    (``op_*_launches``; :func:`~roofline.ops.host.calls_wall`).

    Returns
    -------
    float
        ``sum over MoE layers (wall - GPU)`` of the synchronised forward segments plus
        ``wall - GPU`` of the backward pass, seconds.
    """
    check_dispatcher("sync_exposed_s", ops.dispatcher)
    f8 = _f8_kernels(ops, hw, efficiency)
    by = _forward_exposed_by_group(ops, row_time_s, groups, hw, efficiency, graphed, router,
                                   f8, param_hooks)
    total = sum(by.values())
    return total + _backward_exposed_s(ops, row_time_s, groups, hw, efficiency, graphed,
                                       router, f8) if by else total



def moe_host_terms(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
                   hw: Hardware, efficiency: EfficiencyLike,
                   graphed: frozenset[str] = frozenset(),
                   router: tuple[str, bool] = ("none", False),
                   heavy: int | None = None) -> dict[str, float]:
    """The micro-batch terms of :func:`sync_exposed_s`: ``host_s`` without and
    ``hook_host_s``, what Megatron's forward pre-hooks add (``param_hooks=True``: the
    distributed optimizer with ``overlap_param_gather``; the step picks it by layout), both for
    one stage holding every layer, and the terms of a pipeline stage that holds some of them
    (:func:`stage_host_terms`; ``heavy``: the decoder group whose layers the busiest stage
    holds first, ``micro_batch_terms``' ``heavy_group``)."""
    check_dispatcher("moe_host_terms", ops.dispatcher)
    f8 = _f8_kernels(ops, hw, efficiency)
    plain = _forward_exposed_by_group(ops, row_time_s, groups, hw, efficiency, graphed, router,
                                      f8, False)
    hooked = _forward_exposed_by_group(ops, row_time_s, groups, hw, efficiency, graphed,
                                       router, f8, True)
    back = _backward_exposed_s(ops, row_time_s, groups, hw, efficiency, graphed, router,
                               f8) if plain else 0.0
    out = {"host_s": sum(plain.values()) + back,
           "hook_host_s": sum(hooked.values()) - sum(plain.values())}
    out.update(stage_host_terms(ops, row_time_s, groups, hw, efficiency, graphed, router, f8,
                                plain, hooked, heavy))
    return out


def layer_issue_terms(ops: Program, row_time_s: np.ndarray,
                      groups: list[tuple[str, list[int]]], hw: Hardware,
                      efficiency: EfficiencyLike, graphed: frozenset[str] = frozenset(),
                      router: tuple[str, bool] = ("none", False),
                      extra_calls: np.ndarray | None = None
                      ) -> dict[int, tuple[float, float, float]]:
    """Per MoE decoder group, one layer's forward and backward: ``(gpu_s, issue_s,
    exposed_s)``.

    ``gpu_s``: its kernels' time; ``issue_s``: the host time to issue all of them one after
    another (the host calls before each launch, :func:`_row_calls`, priced by
    :func:`~roofline.ops.host.calls_wall`), with ``extra_calls`` (calls by class that launch
    nothing, e.g. a schedule's own per-layer calls) added; ``exposed_s``: what the plain
    schedule exposes of it per layer, as :func:`stage_host_terms` prices a stage's layer (the
    synchronised forward segments plus the backward's steady ``d``). Groups without a
    dispatcher wait (no MoE host terms) are left out."""
    f8 = _f8_kernels(ops, hw, efficiency)
    plain = _forward_exposed_by_group(ops, row_time_s, groups, hw, efficiency, graphed, router,
                                      f8, False)
    extra = np.zeros((1, len(HOST_CLASSES))) if extra_calls is None else \
        np.asarray(extra_calls, dtype=np.float64).reshape(1, len(HOST_CLASSES))
    out: dict[int, tuple[float, float, float]] = {}
    for g, (kind, layers) in enumerate(groups):
        if kind in ("head", "mtp") or not layers or g not in plain:
            continue
        rows = [i for i, row in enumerate(ops.rows) if row[0] == g]
        fwd = _launched(ops, rows, row_time_s, f8, backward=False, graphed=graphed, router=router)
        bwd = _launched(ops, rows[::-1], row_time_s, f8, backward=True, graphed=graphed,
                        router=router)
        seq = np.concatenate([[0.0], fwd[0], bwd[0], [0.0]])
        calls = np.concatenate([np.zeros((1, len(HOST_CLASSES))), fwd[1], bwd[1], extra])
        host = calls_wall(seq, calls, hw, efficiency=efficiency).host_s
        e1, e2 = (_backward_exposed_s(ops, row_time_s, groups, hw, efficiency, graphed, router,
                                      f8, plan=[(g, n)], idle_start=True) for n in (1, 2))
        out[g] = (float(seq.sum()), float(host), plain[g] / len(layers) + max(e2 - e1, 0.0))
    return out


def stage_host_terms(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
                     hw: Hardware, efficiency: EfficiencyLike, graphed: frozenset[str],
                     router: tuple[str, bool], f8: int, plain: dict[int, float],
                     hooked: dict[int, float], heavy: int | None) -> dict[str, float]:
    """Host time a pipeline stage's micro-batch exposes, per layer it holds.

    Under pipeline parallelism each stage runs its own layers' forward and backward per
    micro-batch, between the pipeline's sends and receives (Megatron-Core's 1F1B; without
    virtual stages ``batch_p2p_comm`` with ``batch_p2p_sync`` ends every exchange with
    ``torch.cuda.synchronize()``, ``p2p_communication.py`` @92c8482): a stage's backward is a
    pass of its own layers launched from an idle stream, not a share of one pass over the
    whole model (where the head's long kernels give the host a lead). For identical layers
    ``g`` launched one after another from idle, the exposed ``wall - GPU`` is linear in their
    number ``n`` (the host issues each layer in ``h``, the GPU runs it in ``t``: the wall is
    ``max_i (A_i + sum_{j >= i} t_j)``), ``e_g(n) = c_g + n·d_g``, with ``d_g = e_g(2) -
    e_g(1)`` (``(h - t)^+`` in steady state) and the pass's start ``c_g = e_g(1) - d_g``. The
    forward's exposure is already per layer (each segment after a sync starts from idle,
    :func:`sync_exposed_s`).

    Returns
    -------
    dict
        ``host_heavy_layer_s``: forward exposure plus ``d`` of one layer of the ``heavy``
        group; ``host_layers_s``: the same summed over every decoder layer; ``host_mtp_s``: over
        the multi-token-prediction blocks; ``hook_heavy_layer_s`` / ``hook_layers_s`` /
        ``hook_mtp_s``: Megatron's forward pre-hooks likewise; ``host_pass_start_s``: the
        largest ``c_g`` of the decoder groups (paid once per backward pass of a stage, per
        virtual stage). The head's host time (a few calls) is not charged, nor the lead its
        backward gives the last stage's host (an upper bound there).
    """
    out = dict.fromkeys(("host_heavy_layer_s", "host_layers_s", "host_mtp_s",
                         "hook_heavy_layer_s", "hook_layers_s", "hook_mtp_s",
                         "host_pass_start_s"), 0.0)
    for g, (kind, layers) in enumerate(groups):
        if kind == "head" or not layers:
            continue
        e1, e2 = (_backward_exposed_s(ops, row_time_s, groups, hw, efficiency, graphed, router,
                                      f8, plan=[(g, n)], idle_start=True) for n in (1, 2))
        d = max(e2 - e1, 0.0)
        fwd, hook = plain.get(g, 0.0), hooked.get(g, 0.0) - plain.get(g, 0.0)
        where = "mtp" if kind == "mtp" else "layers"
        out[f"host_{where}_s"] += fwd + len(layers) * d
        out[f"hook_{where}_s"] += hook
        if kind == "mtp":
            continue
        out["host_pass_start_s"] = max(out["host_pass_start_s"], e1 - d)
        if g == heavy:
            out["host_heavy_layer_s"] = fwd / len(layers) + d
            out["hook_heavy_layer_s"] = hook / len(layers)
    return out


def _forward_exposed_by_group(ops: Program, row_time_s: np.ndarray,
                              groups: list[tuple[str, list[int]]], hw: Hardware,
                              efficiency: EfficiencyLike, graphed: frozenset[str],
                              router: tuple[str, bool], f8: int, param_hooks: bool
                              ) -> dict[int, float]:
    """The synchronised forward segments' ``wall - GPU`` of every MoE group's layers, keyed by
    group (no key: not an MoE layer group; :func:`sync_exposed_s`)."""
    out: dict[int, float] = {}
    points = sync_points(ops, False)
    for g, (_, layers) in enumerate(groups):
        rows = [i for i, row in enumerate(ops.rows) if row[0] == g and not row[1].endswith(" bwd")]
        names = [ops.rows[i][1] for i in rows]
        # the host waits before the dispatcher's sync rows and after a clamped activation's
        # clamps (its blocking host-to-device copy; it stays under drop-and-pad)
        waits = {k + after for k, n in enumerate(names) for row, after in points if n == row}
        waits |= {k + 1 for k, n in enumerate(names) if n == GLU_CLAMP_ROW}
        if not layers or not waits:
            continue
        cut = min(waits)
        order = rows[cut:] + rows[:cut]  # this layer's MoE part, then the next layer's start
        ends = sorted({(k - cut) % len(rows) for k in waits} - {0})
        out[g] = sum(_segment_exposed_s(ops, order[lo:hi], row_time_s, f8, hw, efficiency,
                                        graphed, router, param_hooks)
                     for lo, hi in zip([0, *ends], [*ends, len(order)], strict=True)
                     ) * len(layers)
    return out


def _backward_exposed_s(ops: Program, row_time_s: np.ndarray,
                        groups: list[tuple[str, list[int]]], hw: Hardware,
                        efficiency: EfficiencyLike, graphed: frozenset[str],
                        router: tuple[str, bool], f8: int,
                        plan: list[tuple[int, int]] | None = None,
                        idle_start: bool = False) -> float:
    """``wall - GPU`` of the backward pass launched in one stream (:func:`sync_exposed_s`),
    split where the dispatcher waits for the device (:data:`SYNC_POINTS`): the first part
    starts from the queue the forward left (from an idle stream with ``idle_start``), each
    later one from an idle stream. ``plan``: ``(group, layers)`` in launch order (default:
    every group, last first, as often as it has layers, the head once)."""
    before = {row for row, _ in sync_points(ops, True)}  # all before their row
    # the backward pass: the head first, then every layer (last first), one layer of a group
    # repeated as often as the group has layers; each layer's launches cut at its waits
    parts: list[tuple[int, int, bool]] = []  # (group, piece, the host waits before it)
    pieces: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    kernels = 0
    if plan is None:
        plan = [(g, max(len(groups[g][1]), 1)) for g in reversed(range(len(groups)))]
    for g, repeat in plan:
        rows = list(reversed([i for i, row in enumerate(ops.rows) if row[0] == g]))
        cuts = [k for k, i in enumerate(rows) if ops.rows[i][1] in before and k > 0]
        spans = list(zip([0, *cuts], [*cuts, len(rows)], strict=True))
        for p, (lo, hi) in enumerate(spans):
            pieces[(g, p)] = _launched(ops, rows[lo:hi], row_time_s, f8, backward=True,
                                       graphed=graphed, router=router)
        # the group's layers launch alike, one by one
        kernels += repeat * sum(pieces[(g, p)][0].size for p in range(len(spans)))
        if kernels > MAX_KERNELS:  # before tiling
            raise TooManyKernelsError(f"sync_exposed_s: the backward launches more than "
                                      f"{MAX_KERNELS} kernels")
        first_waits = bool(rows) and ops.rows[rows[0]][1] in before
        for _ in range(repeat):
            parts += [(g, p, p > 0 or first_waits) for p in range(len(spans))]
    # consecutive pieces up to the next wait make one segment
    segments: list[tuple[bool, tuple[tuple[int, int], ...]]] = []
    for g, p, wait in parts:
        if wait or not segments:
            segments.append((wait or idle_start, ((g, p),)))
        else:
            segments[-1] = (segments[-1][0], segments[-1][1] + ((g, p),))
    done: dict[tuple[bool, tuple[tuple[int, int], ...]], float] = {}
    total = 0.0
    for seg in segments:
        if seg not in done:
            done[seg] = _pieces_exposed_s([pieces[k] for k in seg[1]], seg[0], hw, efficiency)
        total += done[seg]
    return total


def _pieces_exposed_s(pieces: list[tuple[np.ndarray, np.ndarray]], idle: bool, hw: Hardware,
                      efficiency: EfficiencyLike) -> float:
    """``wall - GPU`` of kernels launched in one stream, ``(GPU times, host calls)`` piece by
    piece; from an idle stream (``idle``: the host's calls before the first launch count,
    after a zero-time reference launch) or from the queue the forward left."""
    seq = np.concatenate([t for t, _ in pieces])
    calls = np.concatenate([c for _, c in pieces])
    if not seq.size:
        return 0.0
    if idle:
        seq = np.concatenate([[0.0], seq])
        calls = np.concatenate([np.zeros((1, calls.shape[1])), calls])
    w = calls_wall(seq, calls, hw, efficiency=efficiency)
    gpu = float(seq.sum())
    return w.wall_s - gpu if w.wall_s > gpu * (1 + 1e-9) else 0.0  # not a rounding residue
