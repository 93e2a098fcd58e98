"""Kernels a framework launches beside a layer's main ops, as it runs them: NeMo 2.x's eager
squared ReLU (:func:`squared_relu_eager`, ``estimate(mlp_activation="relu_pow")``),
Transformer Engine's Float8CurrentScaling amax all-reduces under sequence parallelism
(:func:`amax_reductions`), Megatron-Core's Q / K / V split (:func:`mcore_qkv_split`) and
Transformer Engine's flash-attn layout copies (:func:`te_flash_layout`) and Megatron-Core
core_v0.11 / 0.12's unfused MoE permute and unpermute (:func:`mcore_unfused_permute`,
``estimate(moe_permute_fusion=False)``) and llm-foundry's unpad / pad around flash-attn 2's
varlen kernel (:func:`flash_unpad_pad`, ``estimate(attention_backend="flash_varlen")``).
Each records rows into a :class:`.program.Program`."""

from __future__ import annotations

from .. import _core
from .program import Pass, Program

__all__ = ["UNPAD_FWD_SYNCS", "UNPAD_ROW", "amax_reductions", "flash_unpad_pad", "flash_varlen",
           "mcore_qkv_split", "mcore_unfused_permute", "squared_relu_eager", "te_flash_layout",
           "unpad_forward"]

#: The row :func:`flash_unpad_pad` records (and ``" bwd"``).
UNPAD_ROW = "flash-attn unpad / pad (bert_padding)"

#: Host syncs of one layer's forward under :func:`flash_unpad_pad`: each of the three
#: ``unpad_input`` calls runs ``torch.nonzero`` (its output size needs the count on the host:
#: ``memcpy_and_sync``) and ``seqlens.max().item()`` (another); priced by
#: :func:`.unpad_sync.unpad_sync_s`.
UNPAD_FWD_SYNCS = 6


def flash_varlen(attn_kw: dict[str, object]) -> tuple[dict[str, object], bool]:
    """``(attn_kw, unpad)``: ``backend="flash_varlen"`` is FlashAttention-2's kernel
    (``flash_attn_varlen_func`` runs the same kernels as ``flash_attn_func`` on the unpadded
    tokens, every sequence full) behind :func:`flash_unpad_pad`; other backends unchanged."""
    if attn_kw.get("backend") != "flash_varlen":
        return attn_kw, False
    return dict(attn_kw, backend="flash"), True


def unpad_forward(t: int, batch: int, heads: int, kv_heads: int, d: int
                  ) -> list[list[Pass]]:
    """The forward kernels of :func:`flash_unpad_pad` in launch order, cut at its host syncs:
    ``UNPAD_FWD_SYNCS + 1`` segments, each ``(elements, reads, writes)`` in 2-byte elements.
    Per ``unpad_input``: ``mask.sum`` and cub's count (``nonzero_launches - 2`` kernels, the
    first reading the mask) | sync | cub's select (init, sweep: writes ``t`` int64) and
    ``max()`` | ``.item()`` sync | ``cumsum``, ``F.pad`` (fill, copy) and the gather."""
    q, k = float(t * heads * d), float(t * kv_heads * d)
    m, b = 0.5 * t, 2.0 * batch  # the bool mask; the int32 lengths
    count: list[Pass] = [(m, 1.0, 0.0)] + [(b, 1.0, 0.0)] * (
        int(_core.nonzero_launches(float(t), 1.0)) - 3)
    segs: list[list[Pass]] = [[(m, 0.0, 1.0)]]  # torch.ones_like(key[:, :, 0], bool)
    for width in (q, k, k):
        segs[-1] += [(m, 1.0, 0.0), *count]  # sum(-1), nonzero's count
        segs.append([(b, 0.0, 1.0), (m, 1.0, 8.0), (b, 1.0, 0.0)])  # select; max()
        segs.append([(b, 1.0, 1.0), (b, 0.0, 1.0), (b, 1.0, 1.0),  # cumsum, F.pad
                     (width, 1.0, 1.0)])  # IndexFirstAxis: torch.gather
    segs[-1] += [(q, 0.0, 1.0), (q, 1.0, 1.0)]  # pad_input: zeros, output[indices] = values
    return segs


def flash_unpad_pad(ops: Program, g: int, t: int, batch: int, heads: int, kv_heads: int,
                    d: int) -> None:
    """llm-foundry's ``flash_attn_fn`` around flash-attn 2's varlen kernel, as it runs with
    an attention mask (llm-foundry @ 5e85bd62 ``llmfoundry/models/layers/attention.py``:
    ``attn_impl: flash``, MPT passes the batch's all-ones ``attention_mask`` as
    ``key_padding_mask``; flash-attn v2.4.2, the ``gpu-flash2`` pin,
    ``flash_attn/bert_padding.py``). Counts in 2-byte elements (a bool is 0.5, an int64 4),
    ``t`` tokens on this GPU in ``batch`` sequences, ``heads`` / ``kv_heads`` of ``d``.

    Forward (:func:`unpad_forward`): ``unpad_input`` on the query (``heads·d`` wide), the key
    and the value (``kv_heads·d``), each ``mask.sum(-1)``, ``torch.nonzero`` (cub's count,
    a host sync, cub's select writing ``t`` int64 indices:
    :func:`roofline._core.nonzero_launches` kernels), ``seqlens.max().item()`` (a sync),
    ``cumsum`` and ``F.pad`` (fill + copy) over ``batch`` int32, then ``IndexFirstAxis``:
    one ``torch.gather`` of the whole tensor (reads and writes ``t·width``; the index is a
    stride-0 ``repeat``, cached); ``pad_input`` on the output: ``torch.zeros`` (writes
    ``t·heads·d``) and ``output[indices] = values`` (reads and writes it). Backward:
    ``pad_input``'s ``grad_output[indices]`` (one gather), each ``IndexFirstAxis``'
    ``zeros`` + ``scatter_`` (writes ``t·width``, then reads and writes it). Per layer
    ``5q + 4k`` elements of passes forward and ``5q + 6k`` backward (``q = t·heads·d``,
    ``k = t·kv_heads·d``; MHA: 9 and 11 passes of ``q``) beside the small kernels over the
    mask and the lengths (28 for ``t > 4096``); the three ``indices`` (int64) are saved. The
    :data:`UNPAD_FWD_SYNCS` host syncs: :func:`.unpad_sync.unpad_sync_s`."""
    q, k = float(t * heads * d), float(t * kv_heads * d)
    fwd = [p for seg in unpad_forward(t, batch, heads, kv_heads, d) for p in seg]
    bwd: list[Pass] = [(q, 1.0, 1.0)]  # grad_output[indices]
    for width in (q, k, k):
        bwd += [(width, 0.0, 1.0), (width, 1.0, 1.0)]  # zeros, scatter_
    ops.passes(g, UNPAD_ROW, fwd, bwd, saved=3 * 4.0 * t, kind="attention")
    ops.unpad = (t, batch, heads, kv_heads, d)


def amax_reductions(ops: Program, g: int, block: str) -> None:
    """The amax all-reduces of Transformer Engine's Float8CurrentScaling quantizers under
    sequence parallelism, training (``ops.recipe == "tensorwise_te"``, ``ops.amax_ranks``
    TP ranks): a column-parallel linear's input quantizer and a row-parallel linear's
    grad_output quantizer reduce their amax over the TP group before casting (TE bee4649c
    and release_v2.9 ``module/linear.py`` / ``layernorm_linear.py``: ``with_amax_reduction``,
    ``amax_reduction_group = tp_group``), one 4-byte NCCL all-reduce on the compute path
    each: per block the QKV (or fc1) input forward and the output (or fc2) projection's
    gradient backward. Named apart from the TP ``all_reduce`` rows: userbuffers do not
    overlap them."""
    if ops.train and ops.recipe == "tensorwise_te" and ops.amax_ranks > 1:
        ops.collective(g, f"{block} fp8 amax reduce", "all_reduce", 4.0, ops.amax_ranks)


def squared_relu_eager(ops: Program, g: int, elements: float) -> None:
    """Squared ReLU as NeMo 2.x runs it: ``torch.pow(F.relu(x), 2)``, eager.

    NeMo v2.3.0 (2b03b748) ``nemo/collections/llm/fn/activation.py`` leaves ``squared_relu``
    unscripted ("remove until we have serialization"), and Megatron-Core's MLP (core_v0.12.0
    ``transformer/mlp.py``) calls ``activation_func`` itself when ``bias_activation_fusion``
    is off (NemotronConfig's default). Forward: ``relu`` (reads x, writes r; autograd saves
    r) and ``pow(r, 2)`` (reads r, writes y). Backward of ``pow``: ATen's ``pow_backward``
    computes ``grad * (2 * r.pow(1))``, where ``pow(r, 1)`` is a copy
    (``pow_Tensor_Scalar_out``), then the scalar multiply, then the product with the
    gradient; ``relu``'s is ``threshold_backward(grad, r, 0)``. Two kernels forward (4
    elements moved per element), four backward (10), against one and one (2 and 3) fused.
    Counts in the activation's 2-byte elements.
    """
    e = float(elements)
    ops.passes(g, "act (relu, pow)", [(e, 1.0, 1.0), (e, 1.0, 1.0)],
               [(e, 1.0, 1.0), (e, 1.0, 1.0), (e, 2.0, 1.0), (e, 2.0, 1.0)], saved=e)


def mcore_qkv_split(ops: Program, g: int, t: int, heads: int, kv_heads: int, d: int) -> None:
    """Megatron-Core's split of the fused QKV output into Q, K, V with grouped-query attention
    (``heads > kv_heads``), training. ``SelfAttention.get_query_key_value_tensors``
    (Megatron-LM 92c8482, ``transformer/attention.py``) views ``[s, b, ng, (np/ng + 2) hn]``,
    splits it with Transformer Engine's ``SplitAlongDim`` and reshapes the query slice
    ``[s, b, ng, (np/ng) hn]`` to ``[s, b, np, hn]``: a strided view, so ``reshape`` copies it
    (``t·heads·d`` elements read and written). In the backward the three gradients arrive in
    separate buffers (the query's from that copy), so ``SplitAlongDim.backward`` (TE 2.9
    ``pytorch/utils.py``) concatenates them: ``t·(heads + 2 kv_heads)·d`` read and written.
    With multi-head attention (``heads == kv_heads``) the query reshape is a view and the
    attention returns the gradients as adjacent views of one buffer (TE's no-op split
    backward): nothing runs. ``t`` tokens on this GPU; counts in 2-byte elements."""
    if ops.train and heads > kv_heads:
        ops.passes(g, "mcore qkv split (q reshape; grads cat)", [(float(t * heads * d), 1.0, 1.0)],
                   [(float(t * (heads + 2 * kv_heads) * d), 1.0, 1.0)])


def te_flash_layout(ops: Program, g: int, t: int, batch: int, heads: int, kv_heads: int,
                    d: int) -> None:
    """Transformer Engine's ``DotProductAttention`` running flash-attn 2 on Megatron-Core's
    ``sbhd`` tensors (TE v1.8 ``FlashAttention.forward``): MHA's per-head interleaved Q, K, V
    (``sbh3d``) go through ``fa_prepare_fwd`` (one copy of the three to ``bshd``) and
    ``fa_prepare_bwd`` back; with GQA K and V are strided views of the QKV output,
    ``.contiguous()`` copies them (and Q when ``batch > 1``), their backward is a view; with
    ``batch > 1`` the output goes back to ``sbhd`` by ``.transpose(0, 1).contiguous()`` and its
    gradient by a reshape copy. ``t`` tokens on this GPU, ``heads`` / ``kv_heads`` its heads.
    cuDNN's fused attention reads the strided layouts in place (no copies)."""
    q, k = t * heads * d, t * kv_heads * d
    if kv_heads == heads:
        fwd: list[Pass] = [(3.0 * q, 1.0, 1.0)]
        bwd: list[Pass] = [(3.0 * q, 1.0, 1.0)]
    else:
        fwd, bwd = [(2.0 * k + (q if batch > 1 else 0.0), 1.0, 1.0)], []
    if batch > 1:
        fwd.append((float(q), 1.0, 1.0))
        bwd.append((float(q), 1.0, 1.0))
    ops.passes(g, "te flash-attn layout copies", fwd, bwd, kind="attention")


def mcore_unfused_permute(ops: Program, g: int, part: str, tokens: int, experts: int,
                          rows: float, hidden: int) -> None:
    """The permute and the unpermute of a drop-and-pad MoE layer as Megatron-Core core_v0.11 /
    core_v0.12 run them without ``moe_permute_fusion`` (``moe_utils.permute`` /
    ``unpermute(..., probs, drop_and_pad=True)``): ``tokens`` routed by this rank, ``rows =
    E·C`` permuted rows (``C`` per expert), bf16 router probabilities (``type_as(logits)``);
    ``part``: ``"permute"`` (before the dispatch) or ``"unpermute"`` (after the combine).

    Permute ("permute" row), forward: ``routing_map.to(int8)`` and ``.T.contiguous()``
    (``T·E`` bytes each), ``argsort(dim=-1, descending=True, stable=True)`` over the ``E``
    rows of ``T`` int8 keys, ``[:, :C].contiguous()`` (``E·C`` int64) and
    ``tokens.index_select`` (``rows·hidden``). PyTorch sorts rows longer than 4096
    (``should_use_small_sort``) with ``launch_stable_sort_kernel``, and fewer than 128 of
    them with ``segmented_sort_pairs_by_full_sort`` (``aten/src/ATen/native/cuda/
    SortStable.cu``): ``fill_index_and_segment_kernel`` (an int2 per key), cub's
    ``radix_sort_pairs`` of the int8 keys with the int2 values and ``radix_sort_keys`` of the
    int2 as int64 over the segment bits (each priced as cub's onesweep: a histogram, a scan
    of 256 bins, one digit pass reading and writing keys and values) and
    ``sort_postprocess_kernel`` (reads the int2, gathers the key, writes it and the int64
    index). Backward (``index_select_backward``): ``zeros(T, hidden)`` and ``index_add_`` of
    the ``rows·hidden`` gradient.

    Unpermute ("moe weighted sum" row), forward: ``probs.T.contiguous()`` (``T·E``), the
    flat indices ``arange(E)``, ``* T``, ``+ sorted_indices`` (``E·C`` int64),
    ``index_select`` of the probabilities (``E·C``), ``permuted_tokens * probs``
    (``rows·hidden``), ``zeros(T, hidden)`` and ``scatter_add_`` of the rows (read once,
    added once per element). Backward: the scatter's ``gather`` (``rows·hidden``), the
    product's two gradients (``grad·probs``; ``grad·tokens`` and its sum over hidden for the
    probabilities' gradient) and the probabilities' ``index_select`` backward (``zeros(T·E)``,
    ``index_add_``). Saved: the permuted rows and probabilities. Counts in 2-byte elements
    (int64 = 4, int8 / bool = 1/2)."""
    te, n, s = float(tokens) * experts, float(rows) * hidden, float(rows)
    th = float(tokens) * hidden
    sort: list[Pass] = [(4 * te, 0.0, 1.0),  # the int2 (index, segment) per key
                        (te / 2, 1.0, 0.0), (256.0, 1.0, 1.0), (4.5 * te, 1.0, 1.0),  # pairs
                        (4 * te, 1.0, 0.0), (256.0, 1.0, 1.0), (4 * te, 1.0, 1.0),  # keys
                        (4.5 * te, 1.0, 1.0)]  # postprocess
    fwd: list[Pass] = [(te / 2, 1.0, 1.0), (te / 2, 1.0, 1.0), *sort, (4 * s, 1.0, 1.0),
                       (n, 1.0, 1.0)]
    if part == "permute":
        ops.passes(g, "permute", fwd, [(th, 0.0, 1.0), (n, 1.0, 1.0)])
        return
    e4 = 4.0 * experts
    fwd = [(te, 1.0, 1.0), (e4, 0.0, 1.0), (e4, 1.0, 1.0), (4 * s, 1.0, 1.0),
           (s, 5.0, 1.0), (n, 1.0, 1.0), (th, 0.0, 1.0), (n, 1.0, 1.0)]
    bwd: list[Pass] = [(n, 1.0, 1.0), (n, 1.0, 1.0), (n, 2.0, 1.0), (n, 1.0, 0.0),
                       (te, 0.0, 1.0), (s, 5.0, 1.0)]
    ops.passes(g, "moe weighted sum", fwd, bwd, saved=n + s)
