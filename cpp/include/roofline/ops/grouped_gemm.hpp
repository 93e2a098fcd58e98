#pragma once
#include <cstddef>
#include <cstdint>

#include "roofline/cost.hpp"
#include "roofline/dtype.hpp"
#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"

namespace roofline {

/// How the rows of the groups of a grouped GEMM are laid out.
enum class GroupedLayout : std::uint8_t {
  contiguous,  ///< groups' rows back to back (sum of counts rows); each group pads to whole tiles
  masked,      ///< one buffer of `m_per_group` rows per group, all computed (max-M per group)
  looped,      ///< one GEMM kernel per non-empty group, launched in turn (Transformer Engine's
               ///< GroupedLinear: general_grouped_gemm issues one cuBLAS GEMM per expert)
  looped_wgrad,  ///< as looped, each group's weight gradient: dB_g[k, n] = A_g^T @ dC_g, a GEMM
                 ///< of m = k, reduction = the group's count, n columns
  fused_moe  ///< vLLM / SGLang's Triton fused_moe kernel: one kernel over every expert, the rows
             ///< sorted by expert and each expert's padded to whole BLOCK_SIZE_M blocks
             ///< (moe_align_block_size); no setup kernel, not torch's CUTLASS grouped kernel
};

/// Shape and formats of a grouped GEMM: group g computes C_g[m_g, n] = A_g[m_g, k] @ B_g[k, n].
struct GroupedGemmShape {
  double groups = 1;       ///< groups (experts) in the kernel
  double m_per_group = 1;  ///< rows per group (uniform), or the masked buffer's rows per group
  double k = 1;            ///< reduction dimension
  double n = 1;            ///< columns of every B_g and C_g
  DType a = DType::bf16;   ///< format of the A rows
  DType b = DType::bf16;   ///< format of the B_g weights
  DType out = DType::bf16;  ///< format of C
  GroupedLayout layout = GroupedLayout::contiguous;  ///< row layout (matters with counts only)
  Scaling scaling = Scaling::none;  ///< how A and B are scaled (fp8: tensorwise or rowwise)
  bool accumulate = false;  ///< each C_g is read and added to (a weight gradient accumulated
                            ///< into an fp32 main_grad, as Megatron-Core runs TE's wgrad)
};

/// Rows of the smallest CTA tile (kept for compatibility; the tile model now pads each group
/// to whole clusters of the tile torch's CUTLASS grouped kernels choose, see grouped_gemm.cpp).
inline constexpr double kGroupRowAlignment = 64.0;

/// Rows of one block of the Triton fused_moe kernel in the small-batch (decode) regime: the
/// BLOCK_SIZE_M of vLLM's tuned configs for M <= 32 tokens (fused_moe/configs/E=8,N=7168,
/// device_name=NVIDIA_H100_80GB_HBM3.json, Mixtral at TP 2) and of get_default_config for M <= E.
/// Each expert with tokens pads to whole blocks of it (GroupedLayout::fused_moe); the larger
/// blocks the configs take at larger M pad less than one block per expert more, not modelled.
inline constexpr double kFusedMoeBlockRows = 16.0;

/// Share of the library GEMM's compute rate (compute_scale_16 / 8 alone) the Triton fused_moe
/// kernel reaches: its A rows are gathered by token index (no TMA for A) through Triton's
/// software pipeline. From vLLM PR #24700 (H100 80GB HBM3, benchmark_moe.py, Mixtral-8x7B at
/// TP 2 with its tuned config, BLOCK 128 x 256 x 64): the 1536-token call, 1122.9 us, the
/// table's most compute-bound point, solved for this fraction with the rest of the model
/// fixed (0.65, two digits; the 512 and 1024-token points are checks, see
/// benchmarks/vllm_fused_moe.py). Applied with the library terms (default preset).
inline constexpr double kFusedMoeComputeFraction = 0.65;

/// Uniform groups: a batched GEMM (batch = groups, m = m_per_group, one B per group) with
/// real FLOPs and bytes; kind = gemm, grouped = true, and the tile model sees each group's
/// m and n padded to whole CTA clusters of torch's CUTLASS grouped kernel tiles (Hopper).
Cost grouped_gemm_cost(const GroupedGemmShape& s) noexcept;

/// Per-group row counts (length `n_groups`; `s.groups` is ignored). Contiguous: empty groups
/// launch no tiles and read no weight; bytes and FLOPs are the sum over non-empty groups; the
/// tile model sees one GEMM of the sum of each group's rows padded to whole CTA clusters.
/// Masked: every group computes max(s.m_per_group, max count) rows.
Cost grouped_gemm_cost(const GroupedGemmShape& s, const double* counts,
                       std::size_t n_groups) noexcept;

/// Streams Transformer Engine spreads the GEMMs of a GroupedLinear over (multi_stream_cublas_gemm:
/// GEMM i runs on compute stream i mod 4, transformer_engine/common/util/multi_stream.cpp).
inline constexpr double kLoopedGemmStreams = 4.0;

/// One GEMM per non-empty group (layouts looped / looped_wgrad), launched round-robin on
/// kLoopedGemmStreams streams: every kernel has its own tiles, waves and latency floor, and up
/// to that many overlap. With S = sum_g time(gemm(m_g, k, n)) (looped_wgrad: gemm(k, m_g, n),
/// A transposed) and U the time of one batched GEMM of the same FLOPs (the groups' mean rows),
/// time = min(S, max(U, S / min(streams, groups used))); FLOPs and bytes are the sums, the
/// other terms scale with the time; empty groups launch nothing.
Estimate looped_gemms(const GroupedGemmShape& s, const double* counts, std::size_t n_groups,
                      const Rates& rates) noexcept;

/// Uniform grouped GEMM estimates over arrays m_per_group, k, n, groups (length n_points).
void grouped_gemm_sweep(const double* m_per_group, const double* k, const double* n,
                        const double* groups, std::size_t n_points, const GroupedGemmShape& formats,
                        const Rates& rates, EstimateColumns out) noexcept;

/// Grouped GEMM estimates with per-group counts: `counts` is row-major (n_points x n_groups);
/// `capacity` is the masked buffer's rows per point (0 = the largest count).
void grouped_gemm_counts_sweep(const double* counts, std::size_t n_groups,
                               const double* capacity, const double* k, const double* n,
                               std::size_t n_points, const GroupedGemmShape& formats,
                               const Rates& rates, EstimateColumns out) noexcept;

}  // namespace roofline
