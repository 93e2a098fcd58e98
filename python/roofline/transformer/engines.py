"""Serving engines as programs: ``runtime="vllm"`` and ``runtime="sglang"``.

What the engines launch for a Llama-style layer (vLLM ``model_executor/models/llama.py``,
``layers/layernorm.py``, ``layers/activation.py``; SGLang ``srt/models/llama.py`` over
``sgl-kernel``), as opposed to the idealized program of ``runtime="megatron"``:

- **Fused residual add + RMSNorm**: ``RMSNorm(x, residual)`` is one kernel
  (``fused_add_rms_norm``: reads x and the residual, writes the new residual and the normed
  output). Each layer runs two (input and post-attention norms) and the model one more at the
  end; no separate residual-add kernel remains. (vLLM V1 under ``torch.compile`` generates the
  same fusion with Inductor; the passes over memory are the same.)
- **Fused SiLU-and-mul** over the merged ``gate_up_proj`` output (one kernel, two reads).
- **Fused RoPE** in place on Q and K (one kernel), then the **KV-cache write** of the new
  tokens' K and V into the paged cache (``reshape_and_cache_flash`` / SGLang's
  ``set_kv_buffer``): one copy kernel.
- **Attention** with the engine's kernels on a paged cache: on Hopper vLLM runs
  FlashAttention-3 (block size 16) and FlashMLA for MLA (block size 64); SGLang FA3 (page size
  1, its default) and FlashMLA for MLA. Elsewhere vLLM runs FlashAttention-2 (vllm_flash_attn),
  SGLang FlashInfer. Non-NVIDIA accelerators keep the SDPA model (``backend="auto"``).
  (FA3 became SGLang's Hopper default in 2025; v0.4 of Dec 2024 decoded GQA groups above 4 with
  FlashInfer 0.1.6's tensor-core path over its one-token pages, which is not distinguished:
  ``backend="flashinfer"`` prices that kernel, and no published figure gives page size 1 a
  decode penalty beyond ~10 %, data/hardware-notes.md section 33.)
- **Logits of the last token** of each sequence only (prefill), in bf16 from the LM head, cast
  to fp32 by the sampler (one more pass over ``rows x vocab``).
- **Vocabulary-parallel embedding** at TP > 1 (both engines' ``VocabParallelEmbedding``,
  ``layers/vocab_parallel_embedding.py``): each rank maps the token ids into its shard
  (``get_masked_input_and_mask``, one fused kernel under ``torch.compile`` /
  ``torch.jit.script``), looks them up, zeroes the other shards' rows (``masked_fill_``) and
  all-reduces the ``tokens x hidden`` result (the engine's all-reduce, with its input copy
  outside a graph).
- **SGLang's own copies** (``runtime="sglang"``, from SGLang's ``layers/attention/*_backend.py``,
  ``mem_cache/memory_pool.py``, ``layers/logits_processor.py`` and the ``GroupCoordinator``
  it took from vLLM): its attention backends (FlashInfer's and FA3's) call the kernel on
  ``q.contiguous()``, and Q is a column slice of the fused QKV output, so each layer copies
  the step's query (one kernel); ``set_kv_buffer`` writes K and V by two index copies
  (``k_buffer[layer][loc] = k``, then V), not one kernel; and the logits processor
  all-gathers the vocabulary shards' logits over TP (``tensor_model_parallel_all_gather``:
  NCCL's all-gather into ``[tp, rows, V/tp]``, then ``movedim`` + ``reshape``, one copy),
  so the sampler's fp32 cast covers the whole vocabulary. vLLM writes K and V in one
  ``reshape_and_cache_flash``, passes the strided query to its attention kernel and gathers
  the logits to rank 0 only (not modelled).
- **MoE layers as ``FusedMoE`` runs them** (vLLM ``model_executor/layers/fused_moe/``
  ``fused_moe.py`` at 000d145 and ``moe_align_block_size.py`` at 05be992, May 2025, between
  v0.9.0 and v0.9.1; SGLang's ``srt/layers/moe/fused_moe_triton/fused_moe.py`` at 006fc20,
  adapted from it): the gate GEMM, the logits cast to fp32, ``topk_softmax``, the top-k
  renormalization (two kernels), ``moe_align_block_size`` (a fill, a zeros and the align
  kernel: :func:`_fused_moe_routing`), then the Triton ``fused_moe_kernel`` twice (``w1`` and
  ``w2``, one kernel over every expert with tokens, each expert's rows padded to whole
  ``BLOCK_SIZE_M`` blocks: ``rl.grouped_gemm(layout="fused_moe")``, not torch's CUTLASS
  grouped kernel and its setup kernel), ``silu_and_mul`` between and ``moe_sum`` after.
  Experts are split over TP along their intermediate size (vLLM's default; expert
  parallelism only with ``--enable-expert-parallel``, ``ep=``). A decode step reads the
  weights of the experts its batch touches in expectation (:func:`.routing.touched_experts`).
- **CUDA graphs for decode**: a decode batch runs the graph captured for the next capture
  size (vLLM: 1, 2, 4, then multiples of 8 to 256 and of 16 to 512; SGLang v0.4 of Dec 2024:
  1, 2, 4, then multiples of 8 to ``cuda_graph_max_bs`` = 160), so its GEMMs and elementwise
  kernels run on the padded batch (the padded sequences' attention is empty). Larger
  batches launch eagerly (SGLang's ``CudaGraphRunner.can_run``: ``batch_size <= max_bs``).
  Prefill: vLLM V1 replays piecewise graphs around attention (``"graph"``), SGLang launches
  eagerly. SGLang's ``--enable-torch-compile`` graphs (sizes up to ``torch_compile_max_bs``,
  32) run the same ops through Inductor, at most the RoPE kernel, the query copy and one KV
  index copy fewer per layer; not distinguished (docs/model.md, session 11b).
- **All-reduce outside a CUDA graph**: the engines' custom all-reduce
  (``custom_all_reduce.py``, SGLang's through vLLM's ``parallel_state`` in 2024) reduces in
  place only in buffers registered with its peers: graph capture registers the graph's
  buffers (``all_reduce_reg``), while an eager call allocates its output (``empty_like``)
  and copies its input into the pre-registered buffer before the kernel
  (``all_reduce_unreg``; the NCCL fallback above ``max_size`` clones its input the same
  way). An eager step so adds one device-to-device copy kernel of the all-reduce's bytes.
  The custom kernel takes inputs under ``max_size`` (8 MiB,
  :data:`CUSTOM_ALLREDUCE_MAX_BYTES`) on groups of 2, 4, 6 or 8 GPUs
  (:data:`CUSTOM_ALLREDUCE_RANKS`); a larger all-reduce (a prefill of 512 or more tokens
  of a 8192-wide bf16 model), or another TP size, runs NCCL, priced by NCCL's tuning model
  at its share of the NVLink line rate (``rl.all_reduce(..., algorithm="nccl")``).
- **The custom all-reduce's two kernels** (vLLM ``csrc/custom_all_reduce.cuh`` after PR
  #8558, v0.6.2 - v0.6.4, which SGLang v0.4 ran; ``rl.all_reduce(..., algorithm="custom")``):
  below 512 KiB at TP <= 4 (256 KiB at TP <= 8, always at TP 2) the one-stage kernel, every
  rank loading the whole buffer from its peers between two barriers; above, the two-stage
  kernel, a reduce-scatter into the peers' IPC buffers, a release/acquire barrier and an
  all-gather. Each is priced as a fixed time plus its remote bytes at a share of the
  NVLink rate, from vLLM's published H100 timings (docs/model.md, session 12): the 70B's
  TP 4 decode steps switch kernels at 32 requests, the 405B's TP 8 ones at 8.
  ``runtime="vllm"`` prices the same kernels (vLLM's default path until its PyTorch
  symmetric-memory all-reduce took the larger sizes, PR #24111, Sep 2025; not modelled).
- **Eager steps are PyTorch programs** (:func:`engine_host_calls`): an eagerly launched step
  runs the engine's ``nn.Module`` forward in Python, so its host time is priced as an eager
  framework program's (``roofline.ops.host``: each kernel's torch call by class, GEMM,
  attention or other, plus each layer's module calls and views), with the host terms
  measured on H200 Llama traces, not per bare kernel launch.
- **Scheduling of prompts** (:func:`engine_schedule`, used by ``serve(num_requests=...)``):
  vLLM V1 (like TensorRT-LLM's in-flight batching) puts prompt chunks into the decode steps
  (mixed steps). SGLang's scheduler (``managers/scheduler.py``, ``get_next_batch_to_run``)
  runs a prefill batch whenever a request is mid-prefill or a queued one fits, and decodes
  only otherwise: the decoding requests wait through it (mixing needs
  ``--enable-mixed-chunk``, off by default). Its overlap scheduler (on by default) forms
  batch ``k+1`` on the CPU while batch ``k`` runs, so a request that arrives during step
  ``k`` is scheduled with step ``k+2``; and it processes (streams) step ``k``'s results only
  once step ``k+1`` has been launched (``resolve_batch_result`` waits for the forward
  thread's ``launch_done``): at once after a graph decode, after the host launch time of an
  eager prefill batch (``StepPricer.launch_s``, used by ``serve(num_requests=...)``).
- **SGLang's gap between two graph decode steps** (:func:`engine_step_gap_s`; SGLang v0.4.0 to
  v0.4.1 of Dec 2024 with FlashInfer 0.1.6, ``managers/tp_worker_overlap_thread.py``,
  ``model_executor/cuda_graph_runner.py``, ``layers/attention/flashinfer_backend.py``,
  FlashInfer ``python/csrc/batch_prefill.cu``): the overlap scheduler's Python per request
  (``process_batch_result_decode``, ``stream_output``, ``prepare_for_decode``) runs on the
  scheduler thread while the GPU runs the previous step, and is hidden while it is shorter
  than that step; but the forward thread replays step ``k+1`` only after FlashInfer's
  ``plan`` (``begin_forward``, every step, in ``init_forward_metadata_replay_cuda_graph``)
  has copied the query and KV ``indptr`` to the CPU (``.to(kCPU)``: blocking copies on the
  forward stream, behind step ``k``). So between two steps the GPU runs the small ops the
  forward thread queued behind step ``k`` (:data:`SGLANG_REPLAY_OPS`; two more when the
  batch is padded to a capture size), the two copies' round trips, the host calls after
  the first one (the second copy, the plan's host-to-device copy) and the replay: a gap
  of ``~50 us`` on the host terms, the same at every batch size (the plan's own host loops
  run over at most ``2 x SMs`` work units, not priced).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

from .._errors import ArgumentValueError
from .config import TransformerConfig
from .program import Program

__all__ = ["CUSTOM_ALLREDUCE_MAX_BYTES", "CUSTOM_ALLREDUCE_RANKS", "ENGINE_RUNTIMES",
           "SGLANG_PAD_OPS", "SGLANG_PLAN_CALLS", "SGLANG_PLAN_SYNCS", "SGLANG_REPLAY_OPS",
           "EnginePlan", "capture_sizes", "engine_host_calls", "engine_nccl", "engine_plan",
           "engine_rewrite", "engine_schedule", "engine_step_gap_s"]

#: ``runtime=`` names of the serving engines.
ENGINE_RUNTIMES = ("vllm", "sglang")

#: Largest all-reduce input (bytes, exclusive) the engines' custom all-reduce takes: vLLM's
#: ``CustomAllreduce(max_size=8192 * 1024)`` (``distributed/device_communicators/
#: custom_all_reduce.py``, ``should_custom_ar``: ``inp_size < self.max_size`` on a fully
#: NVLinked group), which SGLang ran in 2024; larger inputs go to NCCL (pynccl or
#: ``torch.distributed``).
CUSTOM_ALLREDUCE_MAX_BYTES = 8192 * 1024

#: Group sizes the engines' custom all-reduce runs on (vLLM's
#: ``CustomAllreduce._SUPPORTED_WORLD_SIZES``); any other TP size reduces through NCCL.
CUSTOM_ALLREDUCE_RANKS = (2, 4, 6, 8)

#: Decode batch sizes each engine captures a CUDA graph for (defaults: vLLM V1
#: ``cudagraph_capture_sizes`` with ``max_num_seqs`` 256, i.e. up to 512; SGLang v0.4.0 -
#: v0.4.1 (Dec 2024, read at v0.4.0.post2 8f4d04e): ``model_executor/cuda_graph_runner.py``
#: captures ``[1, 2, 4] + [i * 8 for i in range(1, 21)]`` filtered to ``<=
#: cuda_graph_max_bs``, which ``server_args.py`` sets to 160 on every GPU of 25 GB or more
#: (8 or 80 below); the later 1, 2, 4, 8, 12, 16..256 list with ``cuda_graph_max_bs`` 256 /
#: 512 by GPU memory and TP came in 2025; the rows priced with this engine are SGLang v0.4
#: runs (data/hardware-notes.md section 39).
_CAPTURE = {
    "vllm": (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)),
    "sglang": (1, 2, 4, *range(8, 161, 8)),
}

#: KV-cache page (block) size each engine uses by default for non-MLA models.
_PAGE = {"vllm": 16, "sglang": 1}
#: FlashMLA's block size (both engines use it for MLA decode on Hopper).
_MLA_PAGE = 64


#: How each engine schedules prompts by default: (prompt chunks ride in decode steps, the
#: overlap scheduler forms the next batch while the current one runs). Every other runtime
#: (the idealized ``"megatron"`` program, TensorRT-LLM's in-flight batching) mixes and does
#: not overlap.
_SCHEDULE = {"vllm": (True, False), "sglang": (False, True)}


#: Ops SGLang's forward thread queues on the forward stream behind decode step ``k`` before
#: FlashInfer's plan reads ``indptr`` back for step ``k+1`` (SGLang v0.4.0 - v0.4.1, FlashInfer
#: 0.1.6, every step): ``resolve_future_token_ids`` (1 compiled kernel), ``clamp_position``
#: (1), the graph inputs' four copies (``input_ids``, ``req_pool_indices``, ``seq_lens``,
#: ``out_cache_loc``), ``kv_indptr[1:bs+1] = torch.cumsum(...)`` (2), the Triton
#: ``create_flashinfer_kv_indices_triton`` (1) and the plan's three buffer copies (indptr,
#: indices, last page lengths).
SGLANG_REPLAY_OPS = 12
#: ``seq_lens.fill_(1)`` and ``out_cache_loc.zero_()`` when the batch is padded to a capture size.
SGLANG_PAD_OPS = 2
#: Blocking device-to-host copies in FlashInfer 0.1.6's ``BatchPrefillWithPagedKVCache`` plan
#: (``qo_indptr`` and ``paged_kv_indptr`` ``.to(kCPU)``; the tensor-core decode path SGLang
#: takes for GQA groups above 4, which Llama 3 70B and 405B are).
SGLANG_PLAN_SYNCS = 2
#: Host calls between the first copy's return and the replay: the second copy and the plan's
#: ``cudaMemcpyAsync`` of its work lists to the device.
SGLANG_PLAN_CALLS = 2


def engine_step_gap_s(runtime: str, batch: int, hardware: Any,
                      efficiency: Any = "default") -> float:
    """Seconds between the end of one CUDA-graph decode step of ``batch`` requests and the start
    of the next that the engine's step loop adds (0 for runtimes without one, and above the
    largest capture size, where the step launches eagerly from an idle stream anyway).

    ``runtime="sglang"`` (see the module notes): ``_core.synced_replay_gap_s`` with
    ``SGLANG_REPLAY_OPS`` queued ops (plus ``SGLANG_PAD_OPS`` when ``batch`` is not a capture
    size), ``SGLANG_PLAN_SYNCS`` blocking copies and ``SGLANG_PLAN_CALLS`` host calls:
    ``ops x kernel_gap_s + syncs x kernel_latency_s + calls x op_kernel_launches x
    eager_launch_s + graph_launch_s`` on the host terms of ``hardware`` / ``efficiency``
    (all zero under the constant presets: no gap). The same at every batch size: the
    scheduler's per-request Python overlaps the GPU step.
    """
    if runtime != "sglang":
        return 0.0
    sizes = _CAPTURE[runtime]
    if batch > sizes[-1]:
        return 0.0
    from .. import _core
    from .._params.resolve import resolve_cached

    terms = resolve_cached(hardware, efficiency)[2].host
    ops = SGLANG_REPLAY_OPS + (0 if batch in sizes else SGLANG_PAD_OPS)
    return float(_core.synced_replay_gap_s(ops, SGLANG_PLAN_SYNCS, SGLANG_PLAN_CALLS, terms))


def engine_schedule(runtime: str) -> tuple[bool, bool]:
    """``(mixed_prefill, overlap_schedule)`` of ``runtime``'s default scheduler (see the
    module notes); ``(True, False)`` for runtimes that are not serving engines."""
    return _SCHEDULE.get(runtime, (True, False))


def engine_host_calls(cfg: TransformerConfig, groups: list[tuple[str, list[int]]]
                      ) -> dict[int, tuple[float, float]]:
    """Host calls of an engine's eager forward that launch no kernel, per layer of each group
    and once for the head: (views, ``nn.Module`` calls).

    Counted from the engines' Llama-style modeling code (SGLang ``srt/models/llama.py``, vLLM
    ``model_executor/models/llama.py``): a decoder layer calls 12 modules (the layer, its two
    RMSNorms, the attention block with its fused ``qkv_proj``, rotary embedding, attention
    backend and ``o_proj``, the MLP with its fused ``gate_up_proj``, activation and
    ``down_proj``) and makes 4 views (the fused QKV output split into q, k, v and the
    attention output reshaped); q/k norms add 2 modules; an MoE block replaces the MLP's 4
    module calls by 3 (block, router, fused experts); an MLA attention block calls 10
    (the block, q_a / q_b / kv_a / kv_b projections, the two latent norms, rotary embedding,
    attention, o_proj) instead of 5. The model level: the causal LM, the model, the
    embedding, the final norm and the logits processor (5 calls) and 2 views (the last
    token of each sequence).
    """
    out: dict[int, tuple[float, float]] = {}
    for g, (kind, _) in enumerate(groups):
        if kind == "head":
            out[g] = (2.0, 5.0)
            continue
        attention = 10.0 if cfg.is_mla else 5.0
        mlp = 3.0 if kind.startswith("moe") else 4.0
        modules = 3.0 + attention + mlp + (2.0 if cfg.qk_norm else 0.0)
        out[g] = (4.0, modules)
    return out


def capture_sizes(runtime: str) -> tuple[int, ...]:
    """The decode batch sizes ``runtime`` captures CUDA graphs for."""
    return _CAPTURE[runtime]


@dataclass(frozen=True)
class EnginePlan:
    """How an engine runs one step: attention kernel, page size, launch mode, padded batch."""

    runtime: str
    backend: str            # attention backend of full-attention layers
    page_tokens: int | None  # KV page size the attention kernel reads
    mla_backend: str        # attention backend of MLA decode (absorbed)
    launch: str             # "graph" (CUDA graph replay) or "eager"
    batch: int              # the batch the graph runs (>= the real batch)


def engine_nccl(plan: EnginePlan | None, nccl_bw: float) -> tuple[float | None, float]:
    """``(NCCL's bus bandwidth, the custom all-reduce's largest input)`` of an engine's step:
    its all-reduces under :data:`CUSTOM_ALLREDUCE_MAX_BYTES` run the engine's own kernel, the
    rest (and any other collective) NCCL at ``nccl_bw`` B/s; no engine (``plan`` None):
    ``(None, 0.0)``, every collective on the alpha-beta ring."""
    if plan is None:
        return None, 0.0
    return nccl_bw, float(CUSTOM_ALLREDUCE_MAX_BYTES)


def _arch(hw: Any) -> str:
    from .._params.architecture import architecture

    return architecture(hw)


def engine_plan(fn: str, runtime: str, cfg: TransformerConfig, hw: Any, phase: str, batch: int,
                cp: int, flash: bool, launch: str, kv_bytes: float) -> EnginePlan:
    """The engine's choices for this step; ArgumentValueError for what engines do not run."""
    if phase == "train":
        raise ArgumentValueError(fn, "phase", f"runtime={runtime!r} serves models (decode, "
                                 f"prefill), got phase='train'")
    if cp > 1:
        raise ArgumentValueError(fn, "cp", f"runtime={runtime!r} has no context parallelism, "
                                 f"got cp={cp}")
    if not flash:
        raise ArgumentValueError(fn, "flash", f"runtime={runtime!r} runs fused attention "
                                 f"kernels, got flash=False")
    arch = _arch(hw)
    if arch == "hopper":
        backend: str = "fa3"
        page: int | None = _PAGE[runtime]
        mla = "flashmla" if kv_bytes >= 2 else "standard"
    elif arch in ("ampere", "ada", "blackwell", "blackwell_consumer"):
        backend, page = ("flash", None) if runtime == "vllm" else ("flashinfer", _PAGE[runtime])
        mla = "standard"
    else:
        backend, page, mla = "auto", None, "standard"
    sizes = _CAPTURE[runtime]
    padded = batch
    mode = launch
    if launch != "compiled":  # "eager" / "graph": the engine's own choice
        mode = "eager"
        if phase == "decode" and batch <= sizes[-1]:
            padded = sizes[bisect.bisect_left(sizes, batch)]
            mode = "graph"
        elif phase == "prefill" and runtime == "vllm":
            mode = "graph"  # V1's piecewise graphs around the attention calls
    return EnginePlan(runtime, backend, page, mla, mode, padded)


#: Rows per block of the Triton fused_moe kernel in decode (the C++ core's
#: ``kFusedMoeBlockRows``; ``rl.grouped_gemm(layout="fused_moe")``): the tuned configs'
#: ``BLOCK_SIZE_M`` for M <= 32 tokens (vLLM ``fused_moe/configs/E=8,N=7168,device_name=
#: NVIDIA_H100_80GB_HBM3.json``) and ``get_default_config``'s for M <= E.
FUSED_MOE_BLOCK_ROWS = 16


def _fused_moe_routing(ops: Program, cfg: TransformerConfig, g: int, t: float,
                       parts: list[tuple[str, int]],
                       rows: list[tuple[int, str, str, list[tuple[str, int]]]]) -> None:
    """The kernels of vLLM's ``FusedMoE`` layer between its gate GEMM and the first expert
    GEMM (``fused_moe/fused_moe.py`` ``fused_topk`` / ``fused_experts_impl``,
    ``moe_align_block_size.py``; vLLM 000d145 / 05be992 of May 2025, SGLang's
    ``fused_moe_triton`` adapted from it): ``gating_output.float()`` (the ``t x E`` logits to
    fp32), ``topk_softmax`` (the ``topk`` row), for top-k > 1 the renormalization
    ``w / w.sum(-1)`` (a sum and a division over ``t x k`` fp32), then
    ``moe_align_block_size``: ``sorted_ids.fill_`` over ``t·k + E·(B - 1)`` int32,
    ``torch.zeros`` of the blocks' expert ids (``/ B``) and the align kernel reading the
    ``t·k`` int32 expert ids (``B`` = :data:`FUSED_MOE_BLOCK_ROWS`). Counts in 2-byte
    elements (the division's read of the ``t`` sums is not counted). DeepSeek's
    ``grouped_topk`` (MLA models here) keeps the ``topk`` row alone before the align kernels;
    under ``--enable-expert-parallel`` the ``expert_map`` gather is not priced."""
    e, k, b = cfg.num_experts, cfg.experts_per_token, FUSED_MOE_BLOCK_ROWS

    def kernel(name: str, numel: float, reads: float, writes: float) -> None:
        ops.elts.append((numel, reads, writes))
        rows.append((g, name, "elementwise", [("elts", len(ops.elts) - 1)]))
    if not cfg.is_mla:
        kernel("router logits to fp32", t * e, 1, 2)
    rows.append((g, "topk", "elementwise", parts))
    if k > 1 and not cfg.is_mla:  # per token: k fp32 weights summed, then each divided
        kernel("topk renormalize sum", t, 2 * k, 2)
        kernel("topk renormalize div", t * k, 2, 2)
    sorted_ids = t * k + e * (b - 1)
    kernel("moe_align fill", sorted_ids, 0, 2)
    kernel("moe_align zeros", math.ceil(sorted_ids / b), 0, 2)
    kernel("moe_align_block_size", t * k, 2, 2)


def engine_rewrite(ops: Program, cfg: TransformerConfig, plan: EnginePlan, batch: int,
                   q: int, kv_heads: int, kv_bytes: float, tp: int = 1) -> None:
    """Turn the recorded step (``layers.record_step`` with the padded batch) into what the
    engine launches: fused add + RMSNorm in place of norm and residual rows, the KV-cache
    write before each attention, the sampler's fp32 cast of the logits, the engine's attention
    kernel and page size, attention over the real ``batch`` (padded slots are empty), and, in
    an eagerly launched step, the copy of each all-reduce's input into the custom
    all-reduce's registered buffer (one device-to-device copy of its bytes before the
    kernel). ``runtime="sglang"`` adds SGLang's own copies (see the module notes: the query's
    contiguous copy, K and V written by two index copies, the logits' all-gather over the
    ``tp`` vocabulary shards and its reorder copy)."""
    padded = plan.batch
    tokens = padded * q
    sglang = plan.runtime == "sglang"
    rows: list[tuple[int, str, str, list[tuple[str, int]]]] = []
    for g, name, kind, parts in ops.rows:
        if name in ("attn_residual", "mlp_residual"):
            continue  # folded into the next fused add + RMSNorm
        if name in ("attn_norm", "mlp_norm", "final_norm"):
            numel = ops.elts[parts[0][1]][0]
            ops.elts.append((numel, 2, 2))  # reads x and residual, writes both
            rows.append((g, f"{name} (fused add+rmsnorm)", kind, [("elts", len(ops.elts) - 1)]))
            continue
        if kind == "attention":
            if cfg.is_mla:
                width = (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * kv_bytes
            else:
                width = 2 * kv_heads * cfg.head_dim * kv_bytes
            # 2-byte elements: bytes / 2; SGLang writes K and V by two index copies
            writes = 2 if sglang and not cfg.is_mla else 1
            first = len(ops.elts)
            ops.elts.extend([(tokens * width / 2.0 / writes, 1, 1)] * writes)
            rows.append((g, "kv cache write", "elementwise",
                         [("elts", first + i) for i in range(writes)]))
            if sglang and not cfg.is_mla:  # q.contiguous(): Q is a column slice of QKV
                ops.elts.append((tokens * max(cfg.num_heads // tp, 1) * cfg.head_dim, 1, 1))
                rows.append((g, "q contiguous copy", "elementwise",
                             [("elts", len(ops.elts) - 1)]))
        if kind == "collective" and plan.launch == "eager" and parts[0][0] == "comms" and \
                ops.comms[parts[0][1]][0] == "all_reduce":  # outside a graph: unregistered
            ops.elts.append((ops.comms[parts[0][1]][1] / 2.0, 1, 1))
            rows.append((g, f"{name} input copy", "elementwise",
                         [("elts", len(ops.elts) - 1)]))
        if name == "embedding" and tp > 1:  # VocabParallelEmbedding: this rank's shard
            hid_elts = ops.elts[parts[0][1]][0]
            ops.elts.append((tokens * 4.0, 1, 1))  # int64 ids -> shard ids and mask: one kernel
            rows.append((g, "embedding vocab mask", "elementwise", [("elts", len(ops.elts) - 1)]))
            rows.append((g, name, kind, parts))
            ops.elts.append((hid_elts, 1, 1))  # masked_fill_ of the other shards' tokens
            rows.append((g, "embedding masked_fill", "elementwise",
                         [("elts", len(ops.elts) - 1)]))
            if plan.launch == "eager":  # outside a graph: the custom all-reduce's input copy
                ops.elts.append((hid_elts, 1, 1))
                rows.append((g, "embedding all_reduce input copy", "elementwise",
                             [("elts", len(ops.elts) - 1)]))
            ops.comms.append(("all_reduce", 2.0 * hid_elts, tp))
            rows.append((g, "embedding all_reduce", "collective", [("comms", len(ops.comms) - 1)]))
            continue
        if name == "topk":  # the FusedMoE layer's router and align kernels around it
            _fused_moe_routing(ops, cfg, g, ops.elts[parts[0][1]][0] / cfg.num_experts,
                               parts, rows)
            continue
        if name == "lm_head":
            rows.append((g, name, kind, parts))
            kind0, idx0 = parts[0]  # a bf16 GEMM, or under a recipe its f8 / lowp / wo spec
            m, _, n = getattr(ops, kind0)[idx0][:3]
            if sglang and tp > 1:  # every rank gathers the vocabulary shards' logits
                ops.comms.append(("all_gather", 2.0 * m * n * tp, tp))
                rows.append((g, "logits all_gather", "collective",
                             [("comms", len(ops.comms) - 1)]))
                n *= tp
                ops.elts.append((m * n, 1, 1))  # [tp, m, n/tp] -> [m, n]: movedim + reshape
                rows.append((g, "logits gather reorder", "elementwise",
                             [("elts", len(ops.elts) - 1)]))
            ops.elts.append((m * n, 1, 2))  # bf16 in, fp32 out
            rows.append((g, "logits to fp32 (sampler)", "elementwise",
                         [("elts", len(ops.elts) - 1)]))
            continue
        rows.append((g, name, kind, parts))
    ops.rows[:] = rows
    ops.grouped[:] = [(c, k, n, "fused_moe" if lay == "contiguous" else lay, alt)
                      for c, k, n, lay, alt in ops.grouped]  # the Triton fused_moe kernel
    # FlashMLA's kernels take DeepSeek's latent (512) + rope (64) only.
    flashmla = plan.mla_backend == "flashmla" and cfg.is_mla and (
        cfg.kv_lora_rank, cfg.qk_rope_head_dim) == (512, 64)
    for spec in ops.attn:
        absorbed = spec.get("shared_kv", False)
        if absorbed:
            spec["backend"] = "flashmla" if flashmla else "standard"
        else:
            spec["backend"] = plan.backend
        if absorbed and flashmla:
            spec["page_tokens"] = _MLA_PAGE
        elif not absorbed and plan.page_tokens is not None:
            spec["page_tokens"] = plan.page_tokens
        if padded != batch and spec["q_len"] < spec["kv_len"]:  # decode: real sequences only
            spec["batch"] = spec["batch"] * batch // padded
