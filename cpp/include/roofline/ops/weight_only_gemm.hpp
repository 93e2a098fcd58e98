#pragma once
#include <cstddef>
#include <cstdint>

#include "roofline/cost.hpp"
#include "roofline/dtype.hpp"
#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"

namespace roofline {

/// The kernel a weight-only GEMM runs as (vLLM picks Machete on Hopper, Marlin elsewhere).
enum class WeightOnlyKernel : std::uint8_t {
  marlin,  ///< Marlin (IST-DASLab, vLLM's gptq_marlin / awq_marlin): mma.sync, striped k-tiles
  machete  ///< Machete (vLLM, CUTLASS 3 on sm90): wgmma tiles, dequantization overlapping MMAs
};

/// A weight-only quantized GEMM C[m, n] = A[m, k] @ dequant(W)[k, n] as Marlin-style kernels
/// (vLLM's gptq_marlin / awq_marlin) run it: 16-bit activations, 4- or 8-bit integer weights
/// with one 16-bit scale per group of `group_size` rows of W (and a packed zero point per
/// group for AWQ), dequantized in registers and multiplied on the 16-bit tensor cores.
struct WeightOnlyGemmShape {
  double m = 1;               ///< rows of A and C (tokens)
  double k = 1;               ///< reduction dimension (input features)
  double n = 1;               ///< columns of W and C (output features)
  DType a = DType::bf16;      ///< activation (and scale) format: bf16 or fp16
  DType out = DType::bf16;    ///< format of C
  double weight_bits = 4;     ///< bits of one stored weight (4 or 8)
  double group_size = 128;    ///< rows of W sharing one scale (0 = one scale per column)
  bool zero_points = false;   ///< one packed zero point per group and column (AWQ)
  WeightOnlyKernel kernel = WeightOnlyKernel::marlin;  ///< the kernel that runs it
};

/// Rows of A one Marlin pass takes (four 16-row MMA blocks per CTA); each pass dequantizes
/// the whole weight once.
inline constexpr double kMarlinRowsPerPass = 64.0;

/// Passes one Marlin launch runs side by side (max_par): a launch takes up to 1024 rows and
/// streams the weight once (the passes' stripes meet the same weight tiles in L2).
inline constexpr double kMarlinPassesPerLaunch = 16.0;

/// Rows of A one Machete CTA tile takes (two consumer warpgroups of 64-row wgmma): each tile
/// row dequantizes its slice of the weight once.
inline constexpr double kMacheteRowsPerTile = 128.0;

/// FLOPs 2*m*k*n at the activation format's tensor peak; bytes: A once, the packed weight,
/// its scales and zero points once per launch (Marlin: ceil(floor(m / 64) / 16) launches plus
/// one for a remainder under 64 rows; Machete: one), C once; kind gemm.
Cost weight_only_gemm_cost(const WeightOnlyGemmShape& s) noexcept;

/// Non-tensor lane instructions of the dequantization (unpack, zero point, group scale): per
/// weight element, times k*n*ceil(m / rows), rows = 64 (Marlin pass) or 128 (Machete tile).
double weight_only_dequant_ops(const WeightOnlyGemmShape& s) noexcept;

/// Time of one weight-only GEMM: the cost above under `rates`, shape-aware through
/// estimate_fixed_tile_gemm. Marlin: m padded to 16-row blocks, k-tiles striped over all SMs,
/// the dequantization in the tensor cores' issue slots. Machete: 128 weight columns by a
/// 16-128-token tile per CTA in waves over the SMs, the dequantization overlapping the
/// asynchronous MMAs.
Estimate weight_only_gemm_estimate(const WeightOnlyGemmShape& s, const Rates& rates) noexcept;

/// A grouped (MoE) weight-only GEMM as vLLM's fused Marlin MoE kernel runs it: expert g
/// multiplies its counts[g] rows by its own k x n weight, all experts in one launch; an expert
/// with no rows reads nothing, one with rows streams its weight once. Marlin tiling per expert
/// (16-row blocks, 64-row passes), work striped over all SMs; `s.m` and `s.kernel` are ignored.
Estimate weight_only_grouped_estimate(const WeightOnlyGemmShape& s, const double* counts,
                                      std::size_t n_groups, const Rates& rates) noexcept;

/// weight_only_grouped_estimate() per point: `counts` row-major (n_points x n_groups).
void weight_only_grouped_sweep(const double* counts, std::size_t n_groups, const double* k,
                               const double* n, std::size_t n_points,
                               const WeightOnlyGemmShape& formats, const Rates& rates,
                               EstimateColumns out) noexcept;

/// Weight-only GEMM estimates over arrays m, k, n (length n_points); formats fixed.
void weight_only_gemm_sweep(const double* m, const double* k, const double* n,
                            std::size_t n_points, const WeightOnlyGemmShape& formats,
                            const Rates& rates, EstimateColumns out) noexcept;

}  // namespace roofline
