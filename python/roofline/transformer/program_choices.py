"""What program ``rl.transformer.estimate`` prices: the runtime, the KV cache class and the
kernel choices of an engine's step (``runtime=``, ``cache=``, ``decode_kv_reads=``,
``gated_mlp=``, ``mlp_activation=``, ``allreduce=``, ``attention_plugin=``,
``attention_backend=``, ``modules=``), their names and their checks."""

from __future__ import annotations

from typing import Any, NamedTuple

from .._checks import flag, one_of
from .._errors import ArgumentValueError
from ..ops.host import LAUNCH_MODES
from .engines import ENGINE_RUNTIMES

__all__ = ["ALLREDUCES", "ATTENTION_BACKENDS", "CACHES", "DECODE_KV_READS", "GATED_MLPS",
           "MLP_ACTIVATIONS", "MODULES", "RUNTIMES", "SDPA_BACKENDS", "Choices",
           "program_choices"]

#: Programs ``runtime=`` names.
RUNTIMES = ("megatron", "hf", "compiled", *ENGINE_RUNTIMES)
#: KV cache classes ``cache=`` names (``runtime="hf"`` or ``"compiled"``, decode and
#: prefill). ``"dynamic"`` (default): ``DynamicCache``, whose update ``torch.cat``-s the whole
#: cache with the new K and V every step. ``"static"``: ``StaticCache`` preallocated with
#: ``kv_len`` slots (``max_cache_len``): the update is an in-place ``index_copy_`` of the new
#: tokens' K and V (their bytes only, no cat); decode attends over all ``kv_len`` slots under
#: a mask (built once per step), with one query token packed per KV head (``pack_gqa``: query
#: rows ``num_heads / num_kv_heads``; compiled: K and V repeated) or, for ``q_len > 1``, K and
#: V repeated per head (``repeat_kv`` copies); prefill of the empty cache slices the keys to
#: the prompt (causal, no mask). Other runtimes and training take ``"dynamic"`` only.
CACHES = ("dynamic", "static")
#: How a decode attention kernel reads a GQA / MQA model's KV cache ``decode_kv_reads=``
#: (decode, ``runtime="megatron"``). ``"per_kv_head"``: once per KV head, the query heads of
#: its group together (FlashAttention's / FlashInfer's packed GQA, TensorRT-LLM's XQA).
#: ``"per_query_head"``: once per query head: one thread block per (sequence, query head)
#: streams its KV head on its own, as TensorRT-LLM's masked multi-head attention kernel
#: (``decoderMaskedMultiheadAttention``, from FasterTransformer: grid over query heads,
#: ``kv head = head / (heads/kv_heads)``) ran GQA before XQA. The attention then moves
#: ``num_heads / num_kv_heads`` times the KV bytes for the same math (priced as attention
#: over ``num_heads`` KV heads; no L2 reuse between the group's blocks is assumed); the KV
#: cache held is unchanged.
DECODE_KV_READS = ("per_kv_head", "per_query_head")
#: Whose layer modules the ``runtime="megatron"`` program's layers are ``modules=``:
#: Transformer Engine's / Megatron-Core's (bias gradients in the GEMM epilogue, one-pass norm
#: backward, QKV split without a copy) or PyTorch's ``nn.Linear`` / ``nn.LayerNorm`` with a
#: ``chunk``-split fused QKV (llm-foundry's MPT): :func:`.layers.torch_module_grads`; or NeMo
#: AutoModel's TE-backed modules (separate q / k / v linears, eager RoPE, MLA's
#: concatenations): :func:`.automodel.automodel_rewrite`.
MODULES = ("te", "torch", "automodel")
#: How a gated MLP's two input projections run ``gated_mlp=``: one GEMM over the concatenated
#: gate and up weights, or two GEMMs over the same input.
GATED_MLPS = ("fused", "separate")
#: How a non-gated dense MLP's activation runs ``mlp_activation=``: ``"fused"``, one
#: elementwise kernel forward and one backward (Megatron-Core's jit-fused activations, TE's);
#: ``"relu_pow"``, squared ReLU as NeMo 2.x writes it, ``torch.pow(F.relu(x), 2)`` run
#: eagerly with autograd's kernels (:func:`.framework_ops.squared_relu_eager`).
MLP_ACTIVATIONS = ("fused", "relu_pow")
#: Who carries an inference step's collectives ``allreduce=``: the engine's own (custom)
#: all-reduce kernels at the link's line rate, or NCCL.
ALLREDUCES = ("custom", "nccl")
#: Which fused attention kernel the program calls ``attention_backend=`` (names of
#: :func:`roofline.ops.attention`'s ``backend``): ``"auto"`` is what SDPA dispatches to
#: (cuDNN on Hopper / datacenter Blackwell, FlashAttention-2 on Ampere); ``"flash"`` is
#: FlashAttention-2 (a model calling ``flash_attn_func`` itself on padded tensors; MPT's
#: ``attn_impl: flash`` is ``"flash_varlen"``), ``"flash_triton"`` Tri Dao's Triton
#: FlashAttention (llm-foundry's
#: ``attn_impl: triton``), ``"fa3"`` FlashAttention-3, ``"cudnn"`` cuDNN's fused kernel,
#: ``"efficient"`` the CUTLASS memory-efficient kernel, ``"standard"`` the idealized kernel;
#: ``"flash_varlen"`` FlashAttention-2's varlen kernel behind flash-attn's ``unpad_input`` /
#: ``pad_input`` in every layer (llm-foundry's ``flash_attn_fn`` with an attention mask,
#: ``attn_impl: flash``; :func:`.framework_ops.flash_unpad_pad`); ``"flex"`` PyTorch
#: FlexAttention over a BlockMask as NeMo AutoModel runs it (causal / sliding-window blocks
#: skipped, head-major copies, attention sinks in eager: :func:`.flex.flex_attention`).
ATTENTION_BACKENDS = ("auto", "flash", "flash_triton", "flash_varlen", "fa3", "cudnn",
                      "efficient", "standard", "flex")
#: SDPA's fused backends, which ``runtime="hf"`` / ``"compiled"`` take as ``attention_backend``
#: for PyTorch's ring SDPA under context parallelism (:func:`.hf.check_hf`): the kernel an
#: older torch's dispatch picks (torch 2.9 tries flash first on Hopper; cuDNN only with
#: ``TORCH_CUDNN_SDPA_PREFERRED``), where ``"auto"`` is torch >= 2.10's.
SDPA_BACKENDS = ("flash", "cudnn", "efficient")


class Choices(NamedTuple):
    """The validated program choices of one ``transformer.estimate`` call."""

    runtime: str
    launch: str
    cache: str
    reads: str
    gated: str
    nccl: bool
    plugin: bool
    attn_backend: str
    modules: str = "te"
    activation: str = "fused"


def program_choices(fn: str, phase: str, runtime: Any, launch: Any, cache: Any,
                    decode_kv_reads: Any, gated_mlp: Any, allreduce: Any,
                    attention_plugin: Any, attention_backend: Any = "auto",
                    modules: Any = "te", mlp_activation: Any = "fused",
                    mlp_gated: bool = False) -> Choices:
    """Validated program choices; ``launch`` becomes ``"compiled"`` for ``runtime="compiled"``
    (a compiled program launches its regions). ``cache="static"`` needs an HF runtime and an
    inference phase; ``gated_mlp="separate"``, ``attention_plugin``,
    ``decode_kv_reads="per_query_head"``, an ``attention_backend`` other than ``"auto"``,
    ``modules="torch"`` and ``mlp_activation="relu_pow"`` are kernel choices of
    ``runtime="megatron"``; the last also needs a non-gated MLP (``mlp_gated`` False).
    Raises :class:`~roofline.ArgumentValueError` naming the argument otherwise."""
    runtime = one_of(fn, "runtime", runtime, {r: r for r in RUNTIMES})
    launch = one_of(fn, "launch", launch, {m: m for m in LAUNCH_MODES})
    cache = one_of(fn, "cache", cache, {c: c for c in CACHES})
    if cache == "static" and runtime not in ("hf", "compiled"):
        raise ArgumentValueError(fn, "cache", f"'static' needs runtime='hf' or 'compiled' (the "
                                 f"StaticCache of Hugging Face models), got runtime={runtime!r}")
    if runtime == "compiled" and launch == "eager":
        launch = "compiled"
    reads = one_of(fn, "decode_kv_reads", decode_kv_reads, {r: r for r in DECODE_KV_READS})
    gated = one_of(fn, "gated_mlp", gated_mlp, {m: m for m in GATED_MLPS})
    nccl = one_of(fn, "allreduce", allreduce, {m: m for m in ALLREDUCES}) == "nccl"
    plugin = flag(fn, "attention_plugin", attention_plugin)
    attn_backend = one_of(fn, "attention_backend", attention_backend,
                          {b: b for b in ATTENTION_BACKENDS})
    if attn_backend != "auto" and runtime != "megatron" and not (
            runtime in ("hf", "compiled") and attn_backend in SDPA_BACKENDS):
        raise ArgumentValueError(fn, "attention_backend", f"{attn_backend!r} is a kernel choice "
                                 f"of runtime='megatron' (the other runtimes call their own "
                                 f"kernels; 'hf' / 'compiled' take {SDPA_BACKENDS} for the "
                                 f"ring SDPA of context parallelism), got runtime={runtime!r}")
    mods = one_of(fn, "modules", modules, {m: m for m in MODULES})
    if mods != "te" and runtime != "megatron":
        raise ArgumentValueError(fn, "modules", f"{mods!r} is a program choice of "
                                 f"runtime='megatron', got runtime={runtime!r}")
    act = one_of(fn, "mlp_activation", mlp_activation, {m: m for m in MLP_ACTIVATIONS})
    if act != "fused" and runtime != "megatron":
        raise ArgumentValueError(fn, "mlp_activation", f"{act!r} is a kernel choice of "
                                 f"runtime='megatron', got runtime={runtime!r}")
    if act != "fused" and mlp_gated:
        raise ArgumentValueError(fn, "mlp_activation", f"{act!r} is a non-gated MLP's "
                                 f"activation, got a gated (mlp_gated=True) model")
    if (gated == "separate" or plugin) and runtime != "megatron":
        raise ArgumentValueError(fn, "attention_plugin" if plugin else "gated_mlp",
                                 f"is a program choice of runtime='megatron', got "
                                 f"runtime={runtime!r}")
    if reads == "per_query_head" and runtime != "megatron":
        raise ArgumentValueError(fn, "decode_kv_reads", f"'per_query_head' is a kernel choice "
                                 f"of runtime='megatron', got runtime={runtime!r}")
    if cache == "static" and phase == "train":
        raise ArgumentValueError(fn, "cache", "'static' is for decode and prefill, got "
                                 "phase='train'")
    return Choices(runtime, launch, cache, reads, gated, nccl, plugin, attn_backend, mods, act)
