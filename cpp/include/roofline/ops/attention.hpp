#pragma once
#include <array>

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
  DType dtype = DType::bf16;  ///< format of Q, K, V and of the scores when materialized
  AttentionBackend backend = AttentionBackend::standard;  ///< implementation (math: SDPA's
                                                          ///< materialized path in fp32)
};

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
  std::array<OpKernel, 8> items{};  ///< storage
  int size = 0;                     ///< kernels in use

  /// Appends a kernel (ignored beyond capacity, which no formula reaches).
  void push(const char* name, const Cost& c) noexcept;
};

/// Every kernel of the attention call: flash = 1 kernel forward, 3 backward (preprocess,
/// main, dQ conversion); materialized = QK^T GEMM, softmax, PV GEMM forward, 5 backward.
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

}  // namespace roofline
