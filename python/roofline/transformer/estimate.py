"""One decode step, prefill or training step of a transformer, op by op, on one GPU.

The public :func:`estimate` checks its arguments (:mod:`.arguments`), records which kernels
each layer kind launches (:mod:`.layers` into a :class:`.program.Program`), prices them
(:mod:`.pricing`), adds memory per GPU (:mod:`.memory`) and, for training, composes the
parallel step (:mod:`.training`).
"""

from __future__ import annotations

from typing import Any

from .._checks import flag
from .._errors import ArgumentValueError
from ..efficiency import EfficiencyLike
from ..float8.recipes import check_te_support
from ..hardware import Hardware, HardwareLike
from ..hardware import hardware as _hardware
from ..ops.collectives import DEFAULT_LATENCY_S, nccl_nic_bytes_per_s, nccl_nvlink_fraction
from ..ops.collectives import link_bytes_per_s as _link_bw
from .arguments import (
    PHASES,
    check_layout,
    check_offload,
    check_sizes,
    check_split,
    integer,
    optional_positive,
    phase_name,
    positive_number,
    recompute_mode,
    step_lengths,
    train_args,
)
from .composer import layer_tensors, root_tensors
from .config import TransformerConfig, config
from .engines import engine_nccl
from .formats import element_bytes, linear_recipes, table_peak, weight_bytes_of
from .layout_step import train_step
from .memory import memory as step_memory
from .moe_host import moe_core_options, moe_train_options
from .moe_overlap import a2a_overlap_option, overlap_shared_experts, shared_overlap_option
from .pricing import evaluate, kernel_limit, train_wall, wall
from .program import Program
from .program_choices import (
    ALLREDUCES,
    CACHES,
    DECODE_KV_READS,
    GATED_MLPS,
    RUNTIMES,
    program_choices,
)
from .record import record_program
from .report import ModelEstimate
from .routing import moe_router_option
from .tp_overlap import overlap_tp_collectives
from .train_terms import train_terms
from .training import DEFAULT_NETWORK_BYTES_PER_S

__all__ = ["ALLREDUCES", "CACHES", "DECODE_KV_READS", "GATED_MLPS", "PHASES", "RUNTIMES",
           "estimate"]

def estimate(
    model: TransformerConfig | str,
    phase: str = "decode",
    batch: int = 1,
    *,
    seq_len: int | None = None,
    kv_len: int | None = None,
    q_len: int = 1,
    hardware: HardwareLike = None,
    tp: int = 1,
    ep: int = 1,
    linear_recipe: str | None = None,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    kv_dtype_bytes: float | None = None,
    flash: bool = True,
    efficiency: EfficiencyLike = "default",
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    launch: str = "eager",
    dp: int = 1,
    pp: int = 1,
    cp: int = 1,
    zero: int | str = 0,
    recompute: str = "none",
    micro_batch: int | None = None,
    grad_accum: int = 1,
    virtual_stages: int = 1,
    optimizer: str = "adam",
    overlap: bool = True,
    sequence_parallel: bool | None = None,
    optimizer_update: bool = True,
    routing_skew: float = 0.0,
    gpus_per_node: int | None = None,
    network_bytes_per_s: float | None = None,
    runtime: str = "megatron",
    cache: str = "dynamic",
    reduce_dtype: str | None = None,
    reshard_after_forward: bool | None = None,
    cp_comm: str = "ring",
    tp_comm_overlap: bool = False,
    overlap_param_gather: bool | None = None,
    cuda_graph_scope: list[str] | tuple[str, ...] | None = None,
    moe_load_balancing: str = "none",
    moe_expert_bias: bool = False,
    moe_dispatcher: str = "alltoall",
    moe_router: str = "topk",
    moe_capacity_factor: float | None = None,
    moe_pad_to_capacity: bool = False,
    moe_a2a_overlap: bool = False,
    moe_shared_overlap: bool = False,
    megatron_core: str = "0.15",
    moe_permute_fusion: bool = True,
    decode_kv_reads: str = "per_kv_head",
    sustained: bool | None = None,
    gated_mlp: str = "fused",
    mlp_activation: str = "fused",
    allreduce: str = "custom",
    attention_plugin: bool = False,
    attention_backend: str = "auto",
    modules: str = "te",
    fsdp: str = "fsdp2",
    train_metrics: int = 0,
    clip_grad_norm: bool = False,
    check_for_nan_in_grad: bool = False,
    fp8_param_gather: bool = True,
    offload_layers: int = 0,
    host_bytes_per_s: float | None = None,
    pipeline_head: str = "spread",
    cross_entropy: str = "fused",
) -> ModelEstimate:
    """Estimate one step of a transformer on one GPU, op by op, with memory per GPU.

    Parameters
    ----------
    model : TransformerConfig or str
        A configuration or a built-in name (``rl.transformer.list_configs()``).
    phase : {"decode", "prefill", "train"}
        ``decode``: ``q_len`` new tokens per sequence against ``kv_len`` keys (KV cache
        included). ``prefill``: a causal forward over ``seq_len`` tokens (logits of the last
        token only). ``train`` (or ``training``): forward and backward over ``seq_len`` tokens.
    batch : int
        Sequences processed by the GPUs of one tensor-parallel group (per GPU when ``tp=1``;
        with expert parallelism, attention is data parallel: ``batch`` per GPU).
    seq_len : int
        Prompt / training sequence length (prefill, train).
    kv_len : int
        Keys per sequence in decode (cached tokens plus the new ``q_len``).
    q_len : int
        New tokens per sequence in decode (1; more for speculative decoding).
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    tp : int
        Tensor parallelism (Megatron): heads, MLP width and vocabulary split ``tp`` ways, an
        all-reduce after the attention and the MLP blocks.
    ep : int
        Expert parallelism: ``num_experts / ep`` routed experts per GPU, tokens dispatched and
        combined with two all-to-alls per MoE layer.
    linear_recipe : str, optional
        Run linear layers through ``rl.float8.linear(..., recipe=linear_recipe)`` (casts
        included) and batched expert / absorbed-MLA GEMMs in the recipe's low-precision
        format; default: bf16 ``rl.gemm``. Weight-only recipes (inference): ``"w4a16"``,
        ``"w8a16"`` (group 128; ``"_g<N>"``, ``"_channel"``, ``"_zp"`` for AWQ zero points,
        e.g. ``"w4a16_g128_zp"``) run the linears as ``rl.weight_only_gemm`` (Marlin /
        Machete) and the routed experts as fused Marlin MoE kernels, and store their weights
        at ``bits/8`` bytes plus scales; batched (absorbed-MLA) GEMMs stay 16-bit.
    dtype : {"bf16", "fp16", "fp32"}
        Format of weights, activations and the GEMMs without a ``linear_recipe``.
    kv_dtype : str, optional
        Format of the KV cache (e.g. ``"fp8"``); default: ``dtype``.
    kv_dtype_bytes : float, optional
        Bytes per cached K/V element, overriding ``kv_dtype`` (e.g. 0.5 for a 4-bit cache).
    flash : bool
        Fused attention kernels (default) or materialized scores.
    efficiency : str or Efficiency
        Efficiency model for every kernel.
    link_bytes_per_s, latency_s : float, optional
        Collective link bandwidth per direction and latency per step (default: half the
        hardware's bidirectional interconnect; in training NCCL's share, ``nccl_nvlink_fraction``).
    launch : {"eager", "compiled", "graph"}
        How the step's kernels are launched, for ``wall_s``: ``"eager"`` (default: plain
        PyTorch, e.g. Hugging Face models), ``"compiled"`` (``torch.compile``: one region
        for the forward, one for the backward) or ``"graph"`` (a CUDA graph per step, as
        serving engines run decode). ``time_s`` (GPU time) does not depend on it.
    dp, pp, cp : int
        Training only: data-parallel replicas, pipeline stages (1F1B) and context-parallel
        ranks (the sequence split ``cp`` ways, attention work split evenly, as with load-
        balanced causal chunks; K and V exchanged as ``cp_comm`` says): ``dp·pp·tp·cp`` GPUs.
    zero : {0, 1, 2, 3, "fsdp"}
        Training: ZeRO stage sharding optimizer states (1), also gradients (2), also weights
        (3 = ``"fsdp"``: per-layer all-gather in forward and backward, reduce-scatter of
        gradients, every micro-batch) over the data-parallel ranks. Collectives run per unit
        (embedding, each layer, head) with one unit prefetched behind the neighbouring unit's
        compute; see :func:`roofline.transformer.training.compose`.
    reduce_dtype : {"fp32", "bf16"}, optional
        Training with ``zero=3``: format of the gradient reduce-scatter (default ``"fp32"``:
        FSDP2's ``MixedPrecisionPolicy(reduce_dtype=float32)`` as torchtitan sets it; 4 bytes
        per element). ZeRO-0/1/2 reduce in the gradient format (bf16).
    reshard_after_forward : bool, optional
        Training with ``zero=3``: free each gathered layer after its forward and gather it
        again in the backward (FSDP2; the last layer and the head are kept, as torchtitan
        does). Default ``pp == 1`` (torchtitan's policy). ``False`` keeps the stage's
        unsharded weights from the forward to the backward (more memory, one gather less).
    cp_comm : {"ring", "all_gather", "all_to_all"}
        Training with ``cp > 1``: how K and V reach every rank. ``"ring"`` (default:
        Megatron / Transformer Engine's ``cp_comm_type="p2p"``): ``cp-1`` steps each passing
        this rank's K/V chunk to the next rank while the attention of the chunk in hand runs
        (the backward passes K/V and their gradients against the backward blocks); only a
        step's send longer than its block is exposed. ``"all_gather"`` / ``"all_to_all"``:
        PyTorch's ``context_parallel`` as torchtitan runs it (rotate method ``"allgather"``,
        its default, or ``"alltoall"``; :mod:`roofline.transformer.torch_cp`).
    tp_comm_overlap : bool
        Training with ``tp > 1``: pipeline the tensor-parallel all-gathers and reduce-scatters
        with the GEMMs beside them (Transformer Engine's userbuffers, Megatron's
        ``tp_comm_overlap``; NeMo's performance configs turn it on): per layer and pass only
        ``max(C - G, 0) + C/tp`` of their time ``C`` stays exposed (``G``: the layer's GEMMs;
        see :mod:`roofline.transformer.tp_overlap`). Default ``False`` (Megatron's default).
    recompute : {"none", "selective", "full", "layer:k", "op", "modules:<m>,..."}
        Training: activation recomputation. ``selective`` recomputes the attention core
        (drops its output and softmax statistics), ``full`` keeps only each layer's input; both
        add their forward to the step. ``"layer:k"`` (``1 <= k <= num_layers``) fully
        recomputes every ``k``-th block (torchtitan's ``selective_ac_option="k"``:
        ``floor(L/k)`` of ``L`` blocks; ``"layer:1"`` is ``"full"``). ``"op"``: torchtitan's
        op-level selective checkpointing (every other matmul's and the attention's outputs
        saved, the rest recomputed: for Llama ``wk``, ``wo``, ``w3`` and every norm, RoPE,
        activation and residual; :mod:`roofline.transformer.recompute`). ``"modules:<m>,..."``:
        Megatron-Core's ``recompute_granularity="selective"`` with ``recompute_modules``, each
        of ``layernorm`` (input and pre-MLP norms), ``moe_act`` (routed experts' activation),
        ``mla_up_proj`` (MLA's q / kv up-projections and their RoPE), ``core_attn`` (the
        attention kernel), ``mlp`` (the dense layers' MLP): their forward runs again in every
        micro-batch's backward; kept activations are those of ``"none"`` (an upper estimate).
    micro_batch : int, optional
        Training: sequences per micro-batch per replica (default and alias: ``batch``).
    grad_accum : int
        Training: micro-batches per step ``m`` (the pipeline's micro-batches).
    virtual_stages : int
        Training: interleaved model chunks per GPU ``v`` (bubble ``(p-1)/(v·m+p-1)``).
    optimizer : {"adam", "adam_8bit", "adam_bf16", "adamw_fused", "adamw_foreach", \
"decoupled_adamw"}
        Training: the optimizer implementation. ``"adam"``, ``"adam_8bit"``, ``"adam_bf16"``:
        one fused mixed-precision update kernel (Megatron / Transformer Engine / apex) with
        12, 6 or 4 state bytes per parameter (fp32 master and moments, 8-bit moments, bf16
        moments). ``"adamw_fused"``: ``torch.optim.AdamW(fused=True)``, one pass reading p, g,
        m, v and writing p, m, v in the model's format. ``"adamw_foreach"``:
        ``torch.optim.AdamW()`` as torch runs it by default on CUDA, eight ``_foreach_``
        passes (12 reads and 8 writes per parameter); the last two keep moments in the
        model's format (4 bytes per parameter in bf16) and run through ATen's
        ``multi_tensor_apply``: each pass launches one kernel per 320 chunks of 65536
        elements, each taking at least 32 DRAM round trips. ``"decoupled_adamw"``:
        Composer's per-tensor loop (:mod:`roofline.transformer.composer`).
    fsdp : {"fsdp2", "fsdp1", "megatron"}
        Training, ``zero=3``: ``fully_shard`` (default; its copy-out after each all-gather and
        ``chunk_cat`` before each reduce-scatter), FSDP1 (:mod:`.composer`) or Megatron-FSDP
        (its buffer copies not priced); :mod:`.fsdp_passes`.
    train_metrics : int
        Training: cross-entropy metrics on each micro-batch's logits, synced over every rank
        after each batch (Composer with llm-foundry's models: 2; :func:`.composer.metric_sync_s`).
    fp8_param_gather : bool
        Training, ``linear_recipe="tensorwise_te"`` / ``"blockwise_te"``: ``False`` keeps bf16
        parameters (2-byte gathers; TE quantizes the weights once per step, :mod:`.param_refresh`),
        as NeMo 2.x's Megatron-FSDP and Megatron-Bridge's FP8-SC run. Default: fp8 parameters.
    clip_grad_norm, check_for_nan_in_grad : bool
        Training: clip the gradients by their global norm before the optimizer step, as
        FSDP1's ``clip_grad_norm_`` runs it per tensor (:mod:`roofline.transformer.composer`);
        ZeRO 0-2: Megatron-Core DDP's per-bucket norm and syncs, NeMo 2.x (:mod:`.grad_checks`).
    offload_layers, host_bytes_per_s : int, float, optional
        Training, ``pp=1``, no recomputation: Megatron-Core's ``cpu_offloading_num_layers``,
        the first layers' activations copied to the host and back at ``host_bytes_per_s``
        (default: the GPU's host link); :mod:`roofline.transformer.offload`.
    pipeline_head : {"spread", "last"}
        Training, ``pp > 1``: where the stages keep the embedding and the LM head (output
        layer and loss). ``"spread"`` (default): ``1/pp`` of their work on each stage, as
        layouts that balance the first and last stages (Megatron-Core's
        ``account_for_embedding/loss_in_pipeline_split``, uneven first / last stage layers).
        ``"last"``: ``ceil(L/pp)`` layers on every stage and the whole head on the last, as
        Megatron-Core ran before uneven pipeline splits (Megatron-LM !1881, Sept 2024; NeMo
        24.07 and earlier): the last stage, ``t_layers(ceil(L/pp)) + t_head``, sets the pace.
    cross_entropy : {"fused", "native", "unfused"}
        Training: the loss in one pass (TE's kernel: 4 + 6 bytes per logit) or Megatron-Core's
        fp32 ones, ``"native"`` 22 + 10, ``"unfused"`` 38 + 14 (:func:`.layers.loss`).
    overlap : bool
        Training: overlap data-parallel / FSDP communication with compute.
    cuda_graph_scope, moe_load_balancing, moe_expert_bias, moe_dispatcher : optional
        Training, Megatron-Core MoE (:func:`.moe_host.moe_train_options`): the parts captured
        in CUDA graphs (``"attn"``, ``"moe_router"``, ``"moe_preprocess"``: one host call per
        replay, :mod:`.moe_host`), the router's load-balancing loss (``"none"``,
        ``"aux_loss"``, ``"seq_aux_loss"``: ``moe_router_load_balancing_type``), its expert
        bias (``moe_router_enable_expert_bias``) and the dispatcher (``"alltoall"``,
        ``"hybridep"``, ``"hybridep_2511"``: :data:`.moe_host.HYBRIDEP_DISPATCHERS`;
        ``"deepep"``: DeepEP's normal kernels, :mod:`.deepep`).
    moe_router : {"topk", "force_balanced", "fake_balanced"}
        MoE: a learned gate (default); training only, the same gate with random logits
        (Megatron-Core's ``moe_router_force_load_balancing``: the busiest EP rank's expected
        rows, :func:`.routing.random_routing_spread`) or NeMo AutoModel's benchmark gate, no
        gating GEMM, token ``i`` to experts ``(i·k + j) mod E`` (:data:`.routing.MOE_ROUTERS`).
    moe_capacity_factor, moe_pad_to_capacity : float, bool, optional
        Training, Megatron-Core MoE, ``"alltoall"``: token dropping as Megatron's
        ``moe_expert_capacity_factor`` / ``moe_pad_expert_input_to_capacity`` run it: a rank
        sends each expert at most ``C = ceil(T·k/E · factor)`` rows, padded exactly ``C``
        and no host sync (:func:`.routing.capacity_counts`, :func:`.moe_sync.sync_points`).
    moe_a2a_overlap : bool
        Training, Megatron-Core MoE, ``ep > 1``: Megatron-Bridge's ``moe_a2a_overlap``, the
        combined 1F1B schedule hiding each layer's all-to-alls behind another micro-batch's
        compute (:mod:`.moe_overlap`; ``pp > 1`` needs ``virtual_stages > 1``).
    moe_shared_overlap : bool
        Training, MoE with shared experts: the shared experts on a side stream beside the
        dispatch, as NeMo AutoModel runs them (:func:`.moe_overlap.overlap_shared_experts`).
    megatron_core, moe_permute_fusion : str, bool
        Training, Megatron-Core MoE, ``"alltoall"`` (:func:`.moe_host.moe_core_options`):
        ``"0.11"`` / ``"0.12"`` apply the router probabilities in the unpermute (no
        probabilities all-to-all); ``moe_permute_fusion=False`` runs their eager permute.
    overlap_param_gather : bool, optional
        Training with ``zero`` 1 or 2: all-gather the updated weights per unit behind the first
        forward (Megatron's ``overlap_param_gather``; default: ``overlap``). ``False``: the
        distributed optimizer gathers every unit's weights in its step, before the next
        forward starts, so the whole all-gather is exposed (Megatron-Bridge turns it off for
        its MXFP8 DeepSeek-V3 runs).
    sequence_parallel : bool, optional
        Training: Megatron sequence parallelism (norm / residual activations split by ``tp``).
        Default ``tp > 1``, as Megatron runs tensor parallelism and as
        ``rl.transformer.plan`` assumes.
    optimizer_update : bool
        Training: add the optimizer update (memory-bound pass over the optimizer shard) to the
        step time (default: every step updates the weights, as ``rl.transformer.plan``
        assumes; ``False`` for forward + backward alone).
    routing_skew : float
        MoE routing: Zipf exponent of tokens per expert (0 = uniform). The most loaded
        expert-parallel rank sets the time.
    gpus_per_node : int, optional
        GPUs per scale-up domain: groups spanning more ranks (ranks ordered tp, cp, dp, pp; ep
        spans the first ``ep``) leave it through the NICs of their ranks there (one per GPU:
        a data-parallel ring at ``min(link, g·network)`` per rank, ``g`` its ranks per domain,
        ``rl.all_reduce(ranks_per_node=...)``; a pipeline send through one); an expert group
        wider than a domain sends the off-domain share of its all-to-alls through the NICs
        while the on-domain share crosses the scale-up link
        (``rl.all_to_all(ranks_per_node=...)``).
        Default: one domain.
    network_bytes_per_s : float, optional
        Scale-out line rate per NIC (one per GPU) and direction (default 50 GB/s: 400 Gb/s);
        training (NCCL) carries ``NCCL_NIC_FRACTION`` (0.96) of it.
    runtime : {"megatron", "hf", "compiled", "vllm", "sglang"}
        Which program runs the step. ``"megatron"`` (default): fused kernels as Megatron /
        Transformer Engine run them (one QKV GEMM, fused norms, RoPE and SiLU, the cache append
        fused into the QKV kernel): the idealized program, as before. ``"hf"``: the kernels a
        Hugging Face ``*ForCausalLM`` launches in eager PyTorch (SDPA attention, transformers
        5.x), priced by the op registry as ``roofline.torch.estimate`` prices the real module:
        separate q/k/v/o projections, RMSNorm as fp32 pointwise ops, RoPE as several
        elementwise ops, the ``DynamicCache`` ``torch.cat`` of K and V every step (aten's
        batched copy, at the rate its threads in flight per SM set: 0.68 TB/s on H100 and
        H200; ``cache="static"``: ``index_copy_``), unfused SiLU gating, Mixtral's experts
        through ``_grouped_mm``, fp32 logits and loss, and the backward of all of it. Decode
        runs ``q_len`` new tokens against a cache of ``kv_len - q_len``; prefill fills an
        empty cache and computes the last token's logits (``logits_to_keep=1``); training
        uses the cache too (HF's ``use_cache`` default). ``tp``, ``ep``, ``cp`` (but with
        ``cp_comm`` torch's), float8 recipes, MLA and MoE training raise NotImplementedError.
        ``"compiled"``: the same HF model under ``torch.compile`` as Inductor runs it (see
        :mod:`roofline.transformer.compiled`): GEMMs and SDPA extern, the pointwise and
        reduction ops between them fused into Triton kernels priced as one memory pass each
        (residual add + RMSNorm, RoPE with the cache write, SiLU · up, the loss's fp32
        statistics), the mask HF builds under Dynamo and, with more query than KV heads,
        ``repeat_kv`` copies of K and V before a masked SDPA; training with AOTAutograd's
        saved tensors and zeros tangents for the returned logits. ``launch`` defaults to
        ``"compiled"`` (one region per pass: forward; backward when training);
        ``launch="graph"`` is ``mode="reduce-overhead"`` (CUDA graphs). The same limits as
        ``"hf"``.
        ``"vllm"`` / ``"sglang"``: the serving engines' program (decode and prefill;
        :mod:`.engines`): fused add + RMSNorm, fused SiLU-and-mul and RoPE, a KV-cache write
        kernel, the engine's attention kernel on its paged cache (Hopper: FlashAttention-3,
        FlashMLA for MLA; vLLM FA2 / SGLang FlashInfer elsewhere), bf16 logits cast to fp32
        by the sampler, decode under CUDA graphs at the engine's next capture size (the
        engine picks the launch mode: ``launch`` other than ``"compiled"`` is ignored).
    cache : {"dynamic", "static"}
        ``runtime="hf"`` or ``"compiled"``, decode and prefill: the KV cache class
        (:data:`.program_choices.CACHES`); training takes ``"dynamic"`` only.
    decode_kv_reads : {"per_kv_head", "per_query_head"}
        Decode, GQA / MQA models, ``runtime="megatron"``: the decode attention kernel reads
        the KV cache once per KV head (default) or once per query head
        (:data:`.program_choices.DECODE_KV_READS`).
    sustained : bool, optional
        GEMMs and attention at the power limiter's settled clock
        (:mod:`roofline.ops.sustained`) instead of each kernel's clock run alone. Default:
        a training step does (``phase="train"``), a decode / prefill step does not; pass
        ``True`` for a step of an engine kept full for minutes (a maximum-throughput serving
        run), whose steps run back to back as a training step's kernels do.
    gated_mlp : {"fused", "separate"}
        Gated (SwiGLU) dense MLPs, ``runtime="megatron"``: ``"fused"`` (default) runs the gate
        and up projections as one GEMM of ``N = 2·intermediate / tp`` over the concatenated
        weights (Megatron-Core's ``linear_fc1``, the engines' ``gate_up_proj``).
        ``"separate"``: two GEMMs of ``N = intermediate / tp`` over the same input, as
        TensorRT-LLM's ``GatedMLP`` builds them before its ``FusedGatedMLP`` (``fc`` and
        ``gate`` ColumnLinear, or FP8Linear each quantizing its input with its own static
        scale, then ``SiLU(fc)·gate`` and ``proj``): the same FLOPs and weight bytes, one
        more GEMM launch (and one more input quantization under an FP8 recipe) per layer,
        the input read twice. Non-gated and MoE MLPs are unchanged.
    mlp_activation : {"fused", "relu_pow"}
        Non-gated dense MLPs, ``runtime="megatron"``: one fused kernel (default) or NeMo 2.x's
        eager squared ReLU (:func:`.framework_ops.squared_relu_eager`).
    allreduce : {"custom", "nccl"}
        Inference steps: who carries the collectives. ``"custom"`` (default): the engine's
        own all-reduce kernels: ``runtime="vllm"`` / ``"sglang"``, vLLM's
        ``custom_all_reduce`` one- / two-stage kernels under its 8 MiB ``max_size`` at TP 2,
        4, 6 or 8 (``rl.all_reduce(..., algorithm="custom")``), NCCL above and at other TP
        sizes; other runtimes (TensorRT-LLM's custom all-reduce plugin) the alpha-beta ring
        at the line rate and ``latency_s`` per step.
        ``"nccl"``: all through NCCL (``rl.all_reduce(..., algorithm="nccl")``: its tuning
        model's protocols at ``nccl_nvlink_fraction`` of the line rate), as TensorRT-LLM's
        2023 engines' NCCL plugin (and training, unless ``tp_comm_overlap``).
    attention_plugin : bool
        ``runtime="megatron"`` attention as TensorRT-LLM's GPT attention plugin runs it:
        prefill (``enqueueContext``) builds the decoder info in one more kernel per layer
        (``invokeBuildDecoderInfo``), its RoPE kernel also writes K and V into the cache
        (``invokeApplyBiasRopeUpdateKVCache``); decode's masked MHA applies RoPE itself.
    attention_backend : {"auto", "flash", "flash_triton", "flash_varlen", "fa3", "cudnn", \
"efficient", "standard", "flex"}
        ``runtime="megatron"``: each layer's fused attention kernel (``backend`` of
        :func:`roofline.ops.attention`; each: :data:`.program_choices.ATTENTION_BACKENDS`).
        ``"flash"`` with TE modules adds :func:`.framework_ops.te_flash_layout`'s copies.
        ``runtime="hf"`` / ``"compiled"`` with ``cp > 1``: ``"flash"``, ``"cudnn"`` or
        ``"efficient"`` is the kernel of PyTorch's ring SDPA (``"auto"``: torch >= 2.10's).
    modules : {"te", "torch", "automodel"}
        ``runtime="megatron"``, training: Transformer Engine's layer modules (default),
        PyTorch's eager ones (MPT's) or NeMo AutoModel's TE-backed ones
        (:data:`.program_choices.MODULES`; :mod:`.automodel`).

    Returns
    -------
    ModelEstimate
        ``.to_pandas()`` (per layer and op), ``.summary()``, ``.totals``, ``.memory``;
        ``.time_s`` (GPU time), ``.wall_s`` and ``.launch_bound`` (host launch overhead).

    Notes
    -----
    Layers of one kind (dense / MoE) have identical ops, so each kind is computed once and
    multiplied by its layer count; the per-layer table repeats the rows. Ops per layer:
    norm, QKV projection (MLA: fused q_a/kv_a, norms, q_b; decode absorbs ``W_UK`` /
    ``W_UV`` into batched per-head GEMMs and runs FlashMLA-style attention with
    ``kv_heads=1``, ``head_dim = kv_lora_rank + rope``, ``shared_kv``; prefill/train
    expand K and V with ``kv_b``), optional qk-norm, RoPE, attention (causal, bottom-right
    aligned), output projection, TP all-reduce, residual add; then norm, MLP (gate/up,
    activation, down) or MoE (router, top-k, dispatch all-to-all, routed experts, shared
    experts, combine all-to-all, weighted sum), TP all-reduce, residual add. The cache append
    is assumed fused into the QKV/RoPE kernels.

    MoE layers (their experts, routing and host sync): :func:`.layers.moe_mlp`. Elementwise
    kernels run in bf16; their backward reads the output gradient and saved inputs and
    writes one gradient per input.

    Training with the parallel arguments (see :mod:`roofline.transformer.training`): the op
    table is one micro-batch on one GPU holding every layer; ``time_s`` is the step
    ``m·(fwd + bwd + recompute + host)/pp`` plus the bubble ``(p-1)/v`` of a micro-batch, pipeline
    sends, exposed data-parallel communication (per unit: embedding, each layer, head, one
    unit prefetched behind its neighbour's compute; see :func:`.training.compose`) and the
    optimizer update (``optimizer_update=True``,
    the default); ``.step`` holds the decomposition, ``tokens_per_s`` counts the whole job
    and ``mfu`` uses the table's FLOPs (recomputation excluded). With every parallel argument
    at its default and ``optimizer_update=False`` the step is the table's sum. The defaults
    are those of ``rl.transformer.plan``, whose rows carry every setting they used:
    ``estimate(model, "train", **row_settings)`` reproduces a row's time and memory.

    Memory per GPU: weights sharded by ``tp`` (attention heads, MLP width, vocabulary) and
    ``ep`` (routed experts), at 2 bytes per parameter or the recipe's element size for
    linear weights (block scales ignored); the KV cache of ``batch`` sequences (MLA's latent
    is replicated across ``tp``); for training, bf16 gradients and fp32 Adam state
    (master weights, two moments: 12 bytes per parameter, no ZeRO sharding) and the saved
    activations (every op's inputs in bf16, no recomputation: an upper estimate).
    """
    fn = "transformer.estimate"
    cfg = config(model)
    phase = phase_name(fn, phase)
    runtime, launch, cache, reads, gated, nccl, plugin, attn_backend, mods, act = \
        program_choices(fn, phase, runtime, launch, cache, decode_kv_reads, gated_mlp,
                        allreduce, attention_plugin, attention_backend, modules, mlp_activation,
                        cfg.mlp_gated)
    batch = integer(fn, "batch", batch)
    tp, ep = integer(fn, "tp", tp), integer(fn, "ep", ep)
    q, kv = step_lengths(fn, phase, seq_len, kv_len, q_len)
    latency_s = positive_number(fn, "latency_s", latency_s, zero=True)
    link_bytes_per_s = optional_positive(fn, "link_bytes_per_s", link_bytes_per_s)
    network_bytes_per_s = optional_positive(fn, "network_bytes_per_s", network_bytes_per_s)
    check_split(fn, tp, ep, cfg.num_heads, cfg.num_experts if cfg.is_moe else 0, cfg.name)
    wo, f8_recipe = linear_recipes(fn, linear_recipe, phase, dtype)
    flash = flag(fn, "flash", flash)
    hw: Hardware = _hardware(hardware)
    check_te_support(fn, f8_recipe, hw, "linear_recipe")  # TE refuses MXFP8 before sm100
    comm_bw = link_bytes_per_s
    train = phase == "train"
    # training (and allreduce="nccl") uses NCCL: the NVLink line rate less its protocol overhead
    nvlink_fraction = nccl_nvlink_fraction(hw) if train or nccl else 1.0
    if comm_bw is None and (tp > 1 or ep > 1):
        comm_bw = _link_bw(hw, nvlink_fraction)

    par = train_args(fn, phase, batch, dp=dp, pp=pp, cp=cp, tp=tp, zero=zero, recompute=recompute,
                     micro_batch=micro_batch, grad_accum=grad_accum, fsdp=fsdp,
                     virtual_stages=virtual_stages, optimizer=optimizer, overlap=overlap,
                     sequence_parallel=sequence_parallel, optimizer_update=optimizer_update,
                     gpus_per_node=gpus_per_node, network_bytes_per_s=network_bytes_per_s,
                     reduce_dtype=reduce_dtype, reshard_after_forward=reshard_after_forward,
                     cp_comm=cp_comm, tp_comm_overlap=tp_comm_overlap, runtime=runtime,
                     overlap_param_gather=overlap_param_gather, train_metrics=train_metrics,
                     clip_grad_norm=clip_grad_norm, offload_layers=offload_layers,
                     host_bytes_per_s=host_bytes_per_s, pipeline_head=pipeline_head,
                     cross_entropy=cross_entropy, fp8_param_gather=fp8_param_gather,
                     check_for_nan_in_grad=check_for_nan_in_grad)
    if not par["fp8_param_gather"] and f8_recipe not in ("tensorwise_te", "blockwise_te"):
        raise ArgumentValueError(fn, "fp8_param_gather", f"False applies to linear_recipe="
                                 f"'tensorwise_te' or 'blockwise_te', got {f8_recipe!r}")
    graphed, balancing, dispatcher, capacity = moe_train_options(
        fn, phase, cuda_graph_scope, moe_load_balancing, moe_expert_bias, moe_dispatcher, ep,
        (moe_capacity_factor, moe_pad_to_capacity), runtime)
    par["moe_a2a_overlap"] = a2a_overlap_option(fn, moe_a2a_overlap, phase, runtime, ep, cfg,
                                                dtype, par, recompute)
    if train:  # "layer:k" recomputes some block only when k <= num_layers
        recompute_mode(fn, recompute, cfg.num_layers)
        par["offload_layers"], par["host_bytes_per_s"] = check_offload(
            fn, offload_layers, host_bytes_per_s, cfg.num_layers, par["pp"], recompute, hw)
    batch, cp = par["micro_batch"], par["cp"]
    check_sizes(fn, phase, batch, q, kv, cfg.num_heads // tp, flash)
    check_layout(fn, cfg, q, cp, par["cp_comm"], par["pp"], routing_skew)
    net_bw = nccl_nic_bytes_per_s(network_bytes_per_s or DEFAULT_NETWORK_BYTES_PER_S, train or nccl)
    if comm_bw is None and (cp > 1 or par["dp"] > 1 or par["pp"] > 1):
        comm_bw = _link_bw(hw, nvlink_fraction)
    settle = train if sustained is None else flag(fn, "sustained", sustained)
    ops = Program(train=train, recipe=f8_recipe, weight_only=wo, sustained=settle,
                  dispatcher=dispatcher, amax_ranks=tp if par["sequence_parallel"] else 1,
                  router=moe_router_option(fn, moe_router, phase, cfg.is_moe, routing_skew,
                                           capacity),
                  moe_capacity=capacity, moe_core=moe_core_options(
                      fn, phase, runtime, dispatcher, capacity, megatron_core, moe_permute_fusion))
    ops.ep_span = (gpus_per_node, net_bw) if gpus_per_node and ep > gpus_per_node else None
    tokens = batch * q
    act_bytes, kv_dtype_bytes = element_bytes(fn, dtype, kv_dtype, kv_dtype_bytes)
    # An 8-bit KV cache is fp8 attention: K, V read in fp8, math at the fp8 peak (prefill)
    attn_kw: dict[str, Any] = dict(causal=True, flash=flash, backend=attn_backend,
                                   dtype="fp8" if kv_dtype_bytes == 1.0 else dtype)
    if cp > 1:
        attn_kw["scale"] = 1.0 / cp
    local = tokens // cp  # tokens per GPU
    groups, engine, launch = record_program(
        fn, ops, cfg, hw, runtime=runtime, phase=phase, batch=batch, q=q, kv=kv, tp=tp, ep=ep,
        cp=cp, par=par, attn_kw=attn_kw, act_bytes=act_bytes, kv_dtype_bytes=kv_dtype_bytes,
        lowp=f8_recipe is not None, skew=float(routing_skew), choices=dict(
            launch=launch, cache=cache, reads=reads, gated=gated, plugin=plugin, mods=mods,
            act=act, flash=flash, recipe=linear_recipe, dtype=dtype))

    try:
        # NCCL carries the step's collectives in training (unless TransformerEngine's
        # userbuffers overlap them) and under allreduce="nccl"; an engine's from max_size
        whole = nccl or (train and not par["tp_comm_overlap"])
        nccl_bw, custom_max = (comm_bw, 0.0) if whole or comm_bw is None else engine_nccl(
            engine, link_bytes_per_s or _link_bw(hw, nccl_nvlink_fraction(hw)))
        cols = evaluate(ops, hw, efficiency, f8_recipe, comm_bw, latency_s, dtype,
                        nccl_bw=nccl_bw, custom_max_bytes=custom_max)
    except (ValueError, OverflowError) as exc:  # an op's own limit: name the step's sizes
        sizes = (f"batch={batch}, " + (f"q_len={q}, kv_len={kv}" if phase == "decode"
                                       else f"seq_len={q}") + f", tp={tp}, ep={ep}")
        raise ValueError(f"{fn}: this step cannot be priced ({sizes}): {exc}") from None
    if shared_overlap_option(fn, moe_shared_overlap, phase, cfg, par["moe_a2a_overlap"]):
        cols = dict(cols, time_s=overlap_shared_experts(
            [(g, n, k) for g, n, k, _ in ops.rows], cols["time_s"], dispatcher, hw.sms or 1))
    if par["tp_comm_overlap"] and tp > 1:
        cols = dict(cols, time_s=overlap_tp_collectives(
            [(g, name, kind) for g, name, kind, _ in ops.rows], groups, cols["time_s"], tp))
    weight_bytes = weight_bytes_of(linear_recipe, act_bytes) if par["fp8_param_gather"] \
        else act_bytes
    memory = step_memory(cfg, hw, batch, kv, tp, ep, phase, weight_bytes, kv_dtype_bytes, ops,
                         groups, dtype_bytes=act_bytes, optimizer=par["optimizer"])
    peak = table_peak(hw, dtype, f8_recipe, weight_bytes)
    with kernel_limit(fn, cfg):  # the host-time model takes at most MAX_KERNELS kernels
        host = wall(ops, cols["time_s"], groups, hw, efficiency, launch, phase)
        step = None
        if train:
            share, mod_share, base = train_terms(
                cfg, ops, cols, groups, memory, hw, efficiency, tp=tp, ep=ep, local=local,
                act_bytes=act_bytes, weight_bytes=weight_bytes, f8_recipe=f8_recipe,
                par=par, moe_host=runtime == "megatron" and launch == "eager"
                and cfg.is_moe, graphed=graphed, balancing=balancing)
            step = train_step(base, hw, par, tp=tp, ep=ep, seq_len=q,
                              link_bytes_per_s=comm_bw or 1.0, network_bytes_per_s=net_bw,
                              latency_s=latency_s, peak_flops_per_s=peak,
                              param_tensors=(layer_tensors(cfg), root_tensors(cfg, q)),
                              efficiency=efficiency)
            memory = dict(memory, **step.memory)
            host = train_wall(ops, cols["time_s"], groups, hw, efficiency, launch,
                              step_s=step.time_s, pp=par["pp"], grad_accum=par["grad_accum"],
                              recompute=step.layout["recompute"],
                              op_share=share if mod_share is None else mod_share)
    est = ModelEstimate(config=cfg, phase=phase, hardware=hw.name, batch=batch, q_len=q,
                        kv_len=kv, tp=tp, ep=ep, tokens=tokens, groups=groups, columns=cols,
                        rows=[(g, name, kind) for g, name, kind, _ in ops.rows], memory=memory,
                        peak_flops_per_s=peak, linear_recipe=linear_recipe, launch=launch,
                        wall=host, step=step)
    if train:  # the planner re-composes other layouts from these micro-batch terms
        est._cache["train_base"] = base
    return est
