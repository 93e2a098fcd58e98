#pragma once
#include <cstddef>

#include "roofline/estimate.hpp"
#include "roofline/ops/float8_linear.hpp"
#include "roofline/ops/gemm.hpp"

namespace roofline {

/// Output columns of a vectorised estimate, each of length n (caller-owned).
struct EstimateColumns {
  double* time_s;      ///< predicted time
  double* compute_s;   ///< compute term
  double* memory_s;    ///< memory term
  double* overhead_s;  ///< floor above max(compute, memory)
  double* flops;       ///< FLOPs
  double* bytes;       ///< DRAM bytes

  /// Writes estimate e into row i of every column.
  void set(std::size_t i, const Estimate& e) const noexcept {
    time_s[i] = e.time_s;
    compute_s[i] = e.compute_s;
    memory_s[i] = e.memory_s;
    overhead_s[i] = e.overhead_s;
    flops[i] = e.flops;
    bytes[i] = e.bytes;
  }
};

/// GEMM estimates over arrays m, k, n, batch (length n_points); formats fixed.
void gemm_sweep(const double* m, const double* k, const double* n, const double* batch,
                std::size_t n_points, const GemmShape& formats, const Hardware& hw,
                const Efficiency& eff, int threads, EstimateColumns out);

/// Estimates of arbitrary single-kernel costs given as columns (flops at one peak class).
void cost_sweep(const double* flops, const double* bytes_read, const double* bytes_written,
                std::size_t n_points, PeakClass math, double kernels, const Hardware& hw,
                const Efficiency& eff, int threads, EstimateColumns out);

/// Float8 linear times over arrays m, k, n: writes bf16, low-precision GEMM and cast times.
void float8_linear_sweep(const double* m, const double* k, const double* n,
                         std::size_t n_points, const LinearSpec& spec, const Hardware& hw,
                         const Efficiency& eff, int threads, double* bf16_s,
                         double* lowp_gemm_s, double* cast_s);

}  // namespace roofline
