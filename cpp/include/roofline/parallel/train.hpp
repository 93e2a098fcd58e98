#pragma once
// Training-step arithmetic of a parallel job: memory per GPU (ZeRO / FSDP sharding,
// optimizer formats, in-flight activations) and step time (pipeline bubble, data-parallel and
// FSDP communication scheduled per unit against the compute it can hide behind). Inputs are
// per-GPU quantities already derived from the op estimates; nothing here knows hardware.
#include <cstddef>
#include <cstdint>

namespace roofline {

/// Optimizer state formats (bytes per parameter beyond the weight and its gradient).
enum class OptimizerKind : std::uint8_t {
  adam,       ///< fp32 master weight + fp32 first and second moments: 12 bytes
  adam_8bit,  ///< fp32 master weight + 8-bit moments (bitsandbytes): 6 bytes
  adam_bf16   ///< bf16 moments, no master copy (pure bf16 training): 4 bytes
};

/// Bytes of optimizer state per parameter for `kind`.
double optimizer_bytes_per_param(OptimizerKind kind) noexcept;

/// Kernel launches of one torch `_foreach_*` / fused-optimizer call over tensors of `numel[i]`
/// elements touching `depth` tensor lists (ATen's multi_tensor_apply, MultiTensorApply.cuh):
/// each tensor is cut into 65536-element chunks, one 512-thread CTA per chunk, and a kernel is
/// launched every 320 CTAs or when depth_to_max_tensors[depth-1] = {110, 64, 48, 36, 30}
/// tensors have been packed (the tensor-list metadata travels in the kernel's parameters).
double multi_tensor_apply_launches(const double* numel, std::size_t n, int depth) noexcept;

/// PyTorch FSDP1's gradient pre-divide factor for `world` data-parallel ranks
/// (`_get_gradient_predivide_factor`, torch 2.x `fsdp/_init_utils.py`): f starts at 1 and
/// doubles while world % f == 0 and world / f > f (8 ranks: 4; 512: 32); 1 for world <= 1.
/// FSDP1 divides the unsharded gradient by f before its reduce-scatter (skipped when f = 1)
/// and the shard by world / f after it.
double fsdp_predivide_factor(double world) noexcept;

/// Most original tensors whose elements fall in one rank's shards of FSDP1 FlatParameters
/// (use_orig_params: the optimizer steps each such tensor's shard view). Tensor i of
/// `numel[i]` elements belongs to flat parameter `unit[i]` (its tensors laid out in order);
/// each flat parameter is padded to a multiple of `world` and cut into `world` equal
/// contiguous chunks, rank r holding chunk r of each, and flat parameter u occurs
/// `copies[u]` times (identical blocks, cut alike). Returns max over ranks of the sum over
/// flat parameters of copies x the tensors overlapping that rank's chunk (empty tensors
/// overlap none); `world` <= 1: every tensor with elements, times its copies. `unit[i]`
/// must be < `units` (others are skipped).
double flat_shard_tensors(const double* numel, const double* unit, std::size_t n,
                          const double* copies, std::size_t units, double world) noexcept;

/// Gradient buckets Megatron-Core's DDP builds over tensors of `numel[i]` elements walked in
/// the given order (the reverse of registration, as `_ParamAndGradBuffer` walks them): a
/// bucket closes as soon as it holds at least `bucket_elements` elements, a last partial one
/// counts, empty tensors are skipped; `bucket_elements` <= 0 (bucketing off): one bucket
/// (none without elements).
double ddp_bucket_count(const double* numel, std::size_t n, double bucket_elements) noexcept;

/// Time floor of `launches` multi_tensor_apply kernels whose largest chunk holds
/// `chunk_elements` elements, on `sms` SMs (0: unknown, all CTAs resident): each 512-thread CTA
/// walks its chunk 2048 elements (512 threads x ILP 4) per step, one dependent DRAM round trip
/// of `step_s` per step (a step's loads wait for the previous step's stores: the functors'
/// pointers may alias), with 4 CTAs resident per SM (2048 threads):
/// launches x ceil(320 / (4 sms)) x ceil(min(chunk_elements, 65536) / 2048) x step_s.
double multi_tensor_apply_floor_s(double launches, double chunk_elements, double sms,
                                  double step_s) noexcept;

/// Idle fraction of a pipelined step: (p-1) / (v*m + p-1) for p stages, m micro-batches and
/// v virtual stages per GPU (1F1B: v = 1); 0 when p <= 1.
double pipeline_bubble_fraction(double stages, double microbatches, double virtual_stages) noexcept;

/// Micro-batches whose activations the first stage holds at once under 1F1B: min(m, p),
/// times (1 + (p-1)/(p*v)) with v > 1 interleaved virtual stages (Narayanan et al. 2021).
double inflight_microbatches(double stages, double microbatches, double virtual_stages) noexcept;

/// Blocks that torchtitan's selective layer activation checkpointing wraps when every
/// `every`-th block is checkpointed: a running count 1..layers, block i wrapped when
/// i % every == 0, so floor(layers / every); every <= 1 wraps them all.
double checkpointed_layers(double layers, double every) noexcept;

/// Layers the busiest of `stages` pipeline stages holds: every layer sits whole on one
/// stage, so some stage holds at least ceil(layers / stages) of them (and Megatron's
/// layouts reach that bound); `layers` when stages <= 1.
double busiest_stage_layers(double layers, double stages) noexcept;

/// Layers left to the last of `stages` pipeline stages when the others hold
/// busiest_stage_layers each (Megatron's layouts put the remainder there, beside the loss and
/// any multi-token-prediction block): max(layers - (stages-1) x ceil(layers/stages), 0);
/// `layers` when stages <= 1.
double last_stage_layers(double layers, double stages) noexcept;

/// Exposed time of tensor-parallel collectives pipelined with the GEMMs next to them
/// (Transformer Engine's userbuffers overlap, Megatron's tp_comm_overlap): the collective is
/// split into `tp` chunks, each exchanged while the GEMM works on the previous one, so the
/// first chunk and whatever the collective takes beyond the GEMM stay exposed:
/// max(comm - gemm, 0) + comm / tp.
double tp_overlap_exposed_s(double comm_s, double gemm_s, double tp) noexcept;

/// Seconds one micro-batch's forward + backward waits on activation offloading (Transformer
/// Engine's default CPU-offload schedule, as Megatron-Core's cpu_offloading_num_layers runs
/// it): the first `offloaded` of `layers` equal layers (forward `fwd_layer_s`, backward
/// `bwd_layer_s`, `layer_bytes` saved each) are copied to the host and back at
/// `host_bytes_per_s` on one copy stream, in order; a layer's copy-out starts with its forward
/// and ends no earlier; at most layers - offloaded layers' activations are on the GPU, so
/// layer j's forward waits for the copy-out of layer j - (layers - offloaded) and layer i's
/// copy-in for the end of layer i + (layers - offloaded)'s backward; layer i's backward waits
/// for its copy-in. 0 when nothing is offloaded or the link is not finite and positive.
double offload_exposed_s(double layers, double offloaded, double fwd_layer_s, double bwd_layer_s,
                         double layer_bytes, double host_bytes_per_s) noexcept;

/// Per-GPU inputs of the training memory model.
struct TrainMemoryInputs {
  double dense_params = 0;         ///< non-expert parameters held by this GPU before ZeRO
  double expert_params = 0;        ///< routed-expert parameters held by this GPU before ZeRO
  double dense_weight_bytes = 0;   ///< bytes of those dense weights as stored
  double expert_weight_bytes = 0;  ///< bytes of those expert weights as stored
  double dense_dp = 1;             ///< ranks replicating the dense parameters (dp * cp)
  double expert_dp = 1;            ///< ranks replicating each expert's parameters
  double grad_bytes = 2;           ///< bytes per gradient element
  double optimizer_bytes = 12;     ///< optimizer bytes per parameter
  int zero = 0;                    ///< ZeRO stage 0..3 (3 = FSDP full sharding)
  double gathered_bytes = 0;       ///< ZeRO-3: unsharded weights live at once (prefetch)
  double activation_bytes = 0;     ///< saved activations of one micro-batch on this GPU
  double inflight = 1;             ///< micro-batches of activations held at once
  double transient_bytes = 0;      ///< working set on top (a recomputed layer's activations)
};

/// Memory per GPU of a training step, in bytes.
struct TrainMemory {
  double weights = 0;      ///< weights (sharded under ZeRO-3, plus gathered layers)
  double gradients = 0;    ///< gradients (sharded from ZeRO-2 on)
  double optimizer = 0;    ///< optimizer states (sharded from ZeRO-1 on)
  double activations = 0;  ///< saved activations of the in-flight micro-batches
  double total = 0;        ///< sum of the above
};

/// Memory of one GPU: weights W, gradients G = P*g, optimizer O = P*o; ZeRO-1 divides O,
/// ZeRO-2 also G, ZeRO-3 also W by the data-parallel ranks sharing them; activations =
/// activation_bytes * inflight + transient_bytes.
TrainMemory train_memory(const TrainMemoryInputs& in) noexcept;

/// One unit of a sharded pass: its all-gather (0 when its parameters are resident), its compute
/// and the reduction of its gradients issued when that compute ends (0 in a forward pass).
struct CommUnit {
  double gather_s = 0;   ///< all-gather of the unit's parameters before its compute
  double compute_s = 0;  ///< the unit's kernels on the compute stream
  double reduce_s = 0;   ///< reduce-scatter / all-reduce of its gradients after its compute
};

/// Wall time of units run in order on one compute stream while one link carries their
/// collectives in issue order: unit k's all-gather may start once unit k-2 has finished
/// computing (one unit prefetched, at most two gathered at once, as FSDP2 and Megatron's
/// bucketed gathers run) and unit k computes once it is gathered; a unit's reduction starts
/// when its compute ends and the link is free. Returns the end of the last compute or of the
/// last collective, whichever is later (>= the sum of the computes). While a collective's
/// kernels run they hold `comm_sm_fraction` of the SMs (NCCL runs one CTA per channel for the
/// whole collective), so compute overlapping them progresses at 1 - comm_sm_fraction of its
/// rate: a unit of compute c starting with the link busy for b more seconds takes
/// c/(1-f) when that fits in b, else b + c - b(1-f).
double overlapped_pass_s(const CommUnit* units, std::size_t n,
                         double comm_sm_fraction = 0.0) noexcept;

/// Pipeline sends on a stage's critical path per step, `send_s` each (activation forward,
/// gradient backward), for p stages, m micro-batches and v model chunks per GPU. Blocking
/// sends (1F1B, batch_p2p_comm; or `overlapped` false): 2 (v m + p - 1) send_s. Megatron-Core's
/// interleaved schedule with overlap_p2p_comm (what NeMo and Megatron-Bridge set whenever
/// v > 1) posts each send asynchronously and waits for it only before the chunk that needs
/// it, so in the steady state a send hides behind one chunk's compute (at least `chunk_s`,
/// one chunk's forward); only the fill and drain chains stay exposed:
/// 2 (p - 1) send_s + 2 v m max(send_s - chunk_s, 0). 0 when p <= 1.
double pipeline_p2p_s(double send_s, double stages, double microbatches, double virtual_stages,
                      double chunk_s, bool overlapped) noexcept;

/// Exposed expert-parallel all-to-all time of one layer pair in Megatron-Core's combined 1F1B
/// schedule (`overlap_moe_expert_parallel_comm`, `TransformerLayerSchedulePlan.run`,
/// megatron/core/models/common/model_chunk_schedule_plan.py @23dd639c): micro-batch A's forward
/// of a MoE layer runs beside micro-batch B's backward of one, the all-to-alls on a
/// communication stream, in three phases:
///   comm: combine_bwd(B) | dispatch_fwd(A) -> dispatch_bwd(B) | combine_fwd(A)
///   comp: attn_fwd(A)    | mlp_bwd(B) -> mlp_dw(B) -> mlp_fwd(A) | attn_bwd(B)
/// A phase with all-to-all time a beside compute c lasts max(a, c + f a): while the exchange's
/// kernels run they hold `comm_sm_fraction` f of the SMs, so the compute progresses at 1 - f
/// of its rate (as overlapped_pass_s). Returns the sum over the phases of what exceeds the
/// compute, max(a - c, f a) (0 where a = 0). The dependencies inside the middle phase (the
/// forward's experts wait for its dispatch, the backward's dispatch for the experts' dgrad)
/// are not followed: a lower bound where one side of that phase is much shorter.
double a2a_overlap_exposed_s(double combine_bwd_s, double attn_fwd_s, double dispatch_s,
                             double mlp_s, double combine_fwd_s, double attn_bwd_s,
                             double comm_sm_fraction) noexcept;

/// Forward / backward pairs of one model chunk's micro-batch that Megatron-Core's combined 1F1B
/// schedule runs overlapped on the first pipeline stage, per step, for p stages, m micro-batches
/// and v model chunks (schedules.py get_pp_rank_microbatches @23dd639c): the stage runs v m
/// chunk forwards and backwards, of which W = min(v m, 2 (p - 1) + (v - 1) p + 1) forwards
/// (the warmup, one more than the interleaved schedule's: "one extra micro-batch forward step
/// before the 1f1b stages", microbatch_group_size_per_vp_stage = p) and as many backwards (the
/// cooldown) run alone; the rest pair up: v m - W. Without pipelining (p = 1) the first forward
/// and the last backward run alone: m - 1.
double combined_1f1b_pairs(double stages, double microbatches, double virtual_stages) noexcept;

/// What one overlapped layer pair of Megatron-Core's combined 1F1B saves against the plain
/// schedule's layer, seconds (negative: it costs). The plain schedule prices the layer's forward
/// and backward as its GPU time g plus the host time its launches expose, e (the dispatcher's
/// device-to-host wait leaves the queue empty; the backward runs ahead). The combined schedule
/// issues both micro-batches' sub-modules from one Python thread
/// (TransformerLayerSchedulePlan.run, model_chunk_schedule_plan.py @23dd639c): the host issues
/// the pair's launches h (the layer's forward and backward calls plus the schedule's own node
/// calls) one after another, so the pair lasts at least h; on the GPU it lasts g less the
/// all-to-all time the overlap hides, a. Pair wall max(g - a, h); saving g + e - max(g - a, h).
/// The dispatcher's wait before the forward dispatch finds the GPU past the forward's router
/// whenever the host is the slower side (it issued the backward's expert kernels since), so it
/// adds nothing to h there; where the GPU is the slower side the backward's queued expert
/// kernels keep it busy across the wait (not followed: a lower bound).
double combined_1f1b_saving_s(double gpu_s, double exposed_host_s, double a2a_hidden_s,
                              double host_issue_s) noexcept;

/// Exposed time of ring (pass-KV) context parallelism in one attention call: `steps` = cp-1
/// exchanges of `send_s` each, each overlapped with one of the cp equal blocks of the local
/// attention `attention_s` (load-balanced causal chunks): steps * max(send_s - attention_s/cp, 0).
double ring_exposed_s(double send_s, double attention_s, double ranks) noexcept;

/// Exposed K/V rotation of one pass of PyTorch's ring SDPA (`context_parallel`, load-balanced
/// causal), per layer: `first_s` the diagonal (step 0) SDPA call, `step_s` each of the p-1
/// later calls, `kv_s` one K/V transfer (the all-gather when `all_gather`, else one
/// all-to-all permute to the next rank), `dkv_s` one fp32 dK/dV permute (backward only), all
/// on one link, each issued at the start of a call and waited at its end.
/// Forward: max(kv - first, 0), plus (p-2) max(kv - step, 0) when permuting.
/// Backward: the K/V transfer the same way; the dK/dV permute of step k rides behind call
/// k+1 (beside the next K/V permute), and the last one is waited right after the loop:
/// all-gather max(kv - first, 0) + (p-1) max(dkv - step, 0) + dkv;
/// permute max(kv - first, 0) + (p-2) max(kv + dkv - step, 0) + max(dkv - step, 0) + dkv.
double torch_cp_exposed_s(double first_s, double step_s, double kv_s, double dkv_s,
                          double ranks, bool all_gather, bool backward) noexcept;

/// Per-GPU times of one training step, before composition.
struct TrainStepInputs {
  double fwd_s = 0;              ///< forward of one micro-batch on one stage (layers + head)
  double bwd_s = 0;              ///< backward of one micro-batch on one stage (layers + head)
  double recompute_s = 0;        ///< recomputed forward of one micro-batch's layers
  double p2p_s = 0;              ///< one activation (or gradient) send between stages
  double stages = 1;             ///< pipeline stages p
  double microbatches = 1;       ///< micro-batches per step m (gradient accumulation)
  double virtual_stages = 1;     ///< interleaved model chunks per GPU v
  double layers = 1;             ///< layers on one stage (the units of overlap)
  double head_fwd_s = 0;         ///< part of fwd_s outside the layers (embedding, head, loss)
  double head_bwd_s = 0;         ///< part of bwd_s outside the layers
  double layer_gather_s = 0;     ///< one layer's parameter all-gather (ZeRO-3 every pass;
                                 ///< ZeRO-1/2 once per step, after the update)
  double layer_reduce_s = 0;     ///< one layer's gradient reduction (ZeRO-3 every micro-batch;
                                 ///< ZeRO-0/1/2 in the last micro-batch's backward)
  double embed_gather_s = 0;     ///< the same for the embedding unit (first forward, last bwd)
  double embed_reduce_s = 0;     ///< the embedding unit's gradient reduction
  double head_gather_s = 0;      ///< the same for the head unit (final norm, output layer)
  double head_reduce_s = 0;      ///< the head unit's gradient reduction
  int zero = 0;                  ///< ZeRO stage 0..3 (3: gathers and reductions per micro-batch)
  bool reshard_after_forward = true;  ///< ZeRO-3: free gathered layers after the forward (all
                                      ///< but the last layer; the head is kept) and gather them
                                      ///< again in the backward
  double optimizer_s = 0;        ///< optimizer update of this GPU's shard
  bool overlap = true;           ///< communication overlapped with compute where possible
  double host_s = 0;             ///< host launch time exposed by syncs, per micro-batch
  double comm_sm_fraction = 0;   ///< SMs the data-parallel collectives' kernels hold while
                                 ///< they run (slows the compute they overlap)
};

/// One training step on one GPU, decomposed.
struct TrainStep {
  double time_s = 0;           ///< the step: compute + bubble + p2p + exposed comm + optimizer
  double compute_s = 0;        ///< m * (fwd + bwd + recompute + host)
  double bubble_s = 0;         ///< (p-1)/v * (fwd + bwd + recompute)
  double p2p_s = 0;            ///< pipeline sends on the critical path (pipeline_p2p_s)
  double exposed_comm_s = 0;   ///< DP / FSDP communication not hidden behind compute (>= 0)
  double comm_s = 0;           ///< all DP / FSDP communication, hidden or not
  double optimizer_s = 0;      ///< optimizer update
  double bubble_fraction = 0;  ///< (p-1)/(v*m + p-1)
  double host_s = 0;           ///< m * exposed host time (inside compute_s)
};

/// Composes a training step. A stage's units are the embedding, `layers` equal layers and the
/// head; with overlap each pass runs as overlapped_pass_s: ZeRO-3 gathers every unit in every
/// micro-batch's forward and again in its backward (unless kept), and reduces per unit in every
/// backward; ZeRO-1/2 gather once (first micro-batch's forward) and all ZeRO stages below 3
/// reduce in the last micro-batch's backward. Exposed = pass wall - pass compute, summed
/// (with comm_sm_fraction > 0 it includes the time the collectives' kernels take from the
/// compute they overlap); without overlap all communication is exposed.
TrainStep train_step(const TrainStepInputs& in) noexcept;

/// train_memory over n packed input rows (the fields of TrainMemoryInputs in order, zero as a
/// double) writing 5 outputs per row.
void train_memory_sweep(const double* in, std::size_t n, double* out) noexcept;

/// train_step over n packed input rows (the fields of TrainStepInputs in order, zero and the
/// flags as doubles) writing 9 outputs per row.
void train_step_sweep(const double* in, std::size_t n, double* out) noexcept;

/// Fields per row of train_memory_sweep's input.
inline constexpr std::size_t train_memory_fields = 13;
/// Fields per row of train_step_sweep's input.
inline constexpr std::size_t train_step_fields = 22;

}  // namespace roofline
