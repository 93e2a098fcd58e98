#pragma once
#include <array>
#include <cstdint>

#include "roofline/cost.hpp"
#include "roofline/dtype.hpp"
#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"

namespace roofline {

/// Shape of one attention call: batch x heads queries of q_len against kv_len keys.
struct AttentionShape {
  double batch = 1;         ///< sequences
  double heads = 1;         ///< query heads
  double kv_heads = 1;      ///< key/value heads (divides heads; 1 = MQA / absorbed MLA)
  double q_len = 1;         ///< queries per sequence (1 for decode)
  double kv_len = 1;        ///< keys per sequence (cached + new tokens)
  double head_dim = 1;      ///< query/key head dimension
  double v_head_dim = 1;    ///< value/output head dimension
  bool shared_kv = false;   ///< V is a slice of K (absorbed MLA): the cache is read once
  bool causal = false;      ///< causal mask, bottom-right aligned (see attention_pairs)
  bool flash = true;        ///< fused kernel (scores stay on chip) vs materialized scores
  bool backward = false;    ///< the backward pass only (gradients of Q, K, V)
  bool dropout = false;     ///< dropout on the probabilities (dropout_p > 0; see kDropoutIntOps)
  DType dtype = DType::bf16;  ///< format of Q, K, V and of the scores when materialized
  AttentionBackend backend = AttentionBackend::standard;  ///< implementation (math: SDPA's
                                                          ///< materialized path in fp32)
  double page_tokens = 0;   ///< tokens per KV-cache page (0: contiguous cache)
};

/// ``flags`` (the call's switches: mask, backend, dtype, ...) with these dimensions.
inline AttentionShape with_dims(const AttentionShape& flags, double batch, double heads,
                                double kv_heads, double q_len, double kv_len, double head_dim,
                                double v_head_dim) noexcept {
  AttentionShape s = flags;
  s.batch = batch;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = head_dim;
  s.v_head_dim = v_head_dim;
  return s;
}

/// Integer instructions a fused kernel issues per score for dropout: FlashAttention-2's scheme
/// (flash_attn/src/dropout.h, philox.cuh), one Philox-4x32-10 call per 16 scores (10 rounds of
/// 2 wide multiplies, 2 three-input XORs and 2 key additions: 60 instructions for 128 random
/// bits, one byte per score), then per score a byte extract, a compare against p and a select.
/// The backward regenerates the same mask once (no mask is stored).
inline constexpr double kDropoutIntOps = 60.0 / 16.0 + 3.0;

/// Query rows one CTA of a fused (flash) attention kernel owns in the forward (KV rows in the
/// backward): 128, the M of one tcgen05 / two wgmma tiles (FlashAttention-2/3, cuDNN).
inline constexpr double kAttentionQueryTile = 128.0;

/// Keys per query a tiled kernel scores in a sliding-window layer of `window` keys (prefill /
/// training, the sequence longer than the window): a tile of kAttentionQueryTile queries
/// visits every KV block its band [first - window, last] touches and skips only the fully
/// masked ones, so it scores window + tile keys per query (window a multiple of the KV block).
double sliding_window_visited_keys(double window) noexcept;

/// Side of FlexAttention's BlockMask blocks: create_block_mask's default BLOCK_SIZE (128 query
/// rows x 128 keys; torch/nn/attention/flex_attention.py, _DEFAULT_SPARSE_BLOCK_SIZE).
inline constexpr double kFlexBlock = 128.0;

/// Blocks of `block` x `block` (query, key) pairs FlexAttention computes per (sequence, head)
/// for a causal mask (window <= 0: kv_idx <= q_idx, bottom-right aligned when q < kv) or a
/// causal sliding window of `window` keys (kv_idx <= q_idx and q_idx - kv_idx < window): every
/// block holding one kept pair is computed whole (full blocks without the mask_mod, partial
/// ones with it); fully masked blocks are skipped. Query block i spans rows [i b, (i+1) b) at
/// offset o = kv - q; it visits key blocks j with j b <= o + (i+1) b - 1 and
/// (j+1) b - 1 >= o + i b - window + 1. Causal q = kv = n b: n(n+1)/2 blocks.
double flex_visited_blocks(double q_len, double kv_len, double window,
                           double block = kFlexBlock) noexcept;

/// Query-key pairs scored per (sequence, head): q*kv, or with a causal mask
/// sum_i min(kv, max(0, kv - q + i + 1)) = q*kv - q(q-1)/2 (q <= kv), kv(kv+1)/2 (q > kv).
double attention_pairs(double q_len, double kv_len, bool causal) noexcept;

/// One kernel of an op: a static label and its cost.
struct OpKernel {
  const char* name = "";  ///< short label, e.g. "QK^T"
  Cost cost{};            ///< its work
};

/// A fixed-capacity list of kernels (no allocation in sweeps).
struct OpKernels {
  std::array<OpKernel, 16> items{};  ///< storage
  int size = 0;                     ///< kernels in use

  /// Appends a kernel (ignored beyond capacity, which no formula reaches).
  void push(const char* name, const Cost& c) noexcept;
};

/// Every kernel of the attention call: flash = 1 kernel forward, 3 backward (preprocess,
/// main, dQ conversion); materialized = QK^T GEMM, softmax, PV GEMM forward, 5 backward;
/// SDPA's math path = the aten kernels _scaled_dot_product_attention_math launches (an entry
/// may stand for several launches of one kind: Cost::kernels).
/// FLOPs count matrix multiplies only (2 per multiply-add); softmax arithmetic is not counted.
void attention_kernels(const AttentionShape& s, OpKernels& out) noexcept;

/// Sum of the estimates of every kernel of the attention call (each kernel with its floor).
Estimate attention_estimate(const AttentionShape& s, const Rates& rates) noexcept;

/// Attention estimates over arrays (length n_points) of batch, heads, kv_heads, q_len, kv_len,
/// head_dim, v_head_dim; flags and dtype from `flags`.
void attention_sweep(const double* batch, const double* heads, const double* kv_heads,
                     const double* q_len, const double* kv_len, const double* head_dim,
                     const double* v_head_dim, std::size_t n_points, const AttentionShape& flags,
                     const Rates& rates, EstimateColumns out) noexcept;

/// Architecture family that decides which SDPA backends exist (from the accelerator's name).
enum class SdpaArch : std::uint8_t {
  other,               ///< no CUDA/ROCm SDPA (TPU, Gaudi, ...): the standard kernel only
  volta,               ///< sm70 / sm75: no flash, no bf16 tensor cores
  ampere,              ///< sm80 / sm86 (and unknown NVIDIA parts)
  ada,                 ///< sm89
  hopper,              ///< sm90: cuDNN first
  blackwell,           ///< sm100 / sm103: cuDNN first
  blackwell_consumer,  ///< sm120
  rocm                 ///< AMD: AOTriton flash / efficient, head dims up to 512
};

/// The backend PyTorch's SDPA (torch >= 2.10, cuDNN > 9.15) dispatches to at shape s on arch
/// (s.backend and s.flash are ignored): cuDNN, flash, efficient, math in that order of
/// preference, standard for shared_kv, formats SDPA does not take and arch == other; a causal
/// mask on q_len != kv_len (bottom-right) is CausalBias(LOWER_RIGHT)'s dispatch: flash,
/// efficient, math (no cuDNN).
AttentionBackend sdpa_backend(const AttentionShape& s, SdpaArch arch) noexcept;

/// Bit mask (bit = 1 << backend) of the backends "auto" takes the fastest of at shape s: those
/// SDPA runs at s or at some larger shape (head dims padded up, longer sequences).
unsigned auto_candidates(const AttentionShape& s, SdpaArch arch) noexcept;

/// Latency chain of an attention forward whose KV loop waits on each block's loads in turn
/// (cuDNN's sm90 kernel on a short query under a mask): ceil(tiles / sms) waves (one CTA per
/// SM, each looping over its query tiles) x (kv_blocks x round_trips_per_block +
/// round_trips_per_tile) x step_s, step_s being one loaded DRAM round trip. 0 without tiles,
/// blocks or a step; sms <= 0 counts one wave.
double masked_attention_chain_s(double tiles, double sms, double kv_blocks,
                                double round_trips_per_block, double round_trips_per_tile,
                                double step_s) noexcept;

/// "auto" on ROCm: the estimate of the one backend SDPA dispatches to (sdpa_backend), forward
/// and backward alike (it steps where PyTorch switches backends). Elsewhere: the least estimate
/// over auto_candidates (earlier of cuDNN, flash, efficient, math on ties; standard keeps
/// s.flash, math is materialized, the others fused), monotone by construction. `winner` gets
/// its backend. An all-infinite estimate when no candidate is finite.
Estimate attention_auto_estimate(const AttentionShape& s, SdpaArch arch, const Rates& rates,
                                 AttentionBackend& winner) noexcept;

/// attention_auto_estimate over arrays (as attention_sweep) on `threads` threads (0 = all
/// cores, one below a few thousand points); winner[i] = backend code of row i.
void attention_auto_sweep(const double* batch, const double* heads, const double* kv_heads,
                          const double* q_len, const double* kv_len, const double* head_dim,
                          const double* v_head_dim, std::size_t n_points,
                          const AttentionShape& flags, SdpaArch arch, const Rates& rates,
                          int threads, EstimateColumns out, std::uint8_t* winner);

}  // namespace roofline
