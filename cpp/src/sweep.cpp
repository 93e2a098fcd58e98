#include "roofline/sweep.hpp"

#include "roofline/parallel.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <thread>
#include <vector>

namespace roofline {
namespace {

using ConstColumn = Eigen::Map<const Eigen::ArrayXd>;
using Column = Eigen::Map<Eigen::ArrayXd>;

}  // namespace

void gemm_sweep(const double* m, const double* k, const double* n, const double* batch,
                std::size_t n_points, const GemmShape& formats, const Hardware& hw,
                const Efficiency& eff, int threads, EstimateColumns out) {
  const auto len = static_cast<Eigen::Index>(n_points);
  ConstColumn M(m, len), K(k, len), N(n, len), B(batch, len);
  Column time(out.time_s, len), compute(out.compute_s, len), memory(out.memory_s, len),
      overhead(out.overhead_s, len), flops(out.flops, len), bytes(out.bytes, len);
  const Rates rates(hw, eff);
  parallel_for(n_points, threads, [&](std::size_t begin, std::size_t end) {
    GemmMemo memo;  // repeated output extents (a grid's rows) share their tile tables
    for (auto i = static_cast<Eigen::Index>(begin); i < static_cast<Eigen::Index>(end); ++i) {
      GemmShape s = formats;
      s.m = M[i];
      s.k = K[i];
      s.n = N[i];
      s.batch = B[i];
      const Estimate e = estimate(gemm_cost(s, eff.torchao_conventions), rates, memo);
      time[i] = e.time_s;
      compute[i] = e.compute_s;
      memory[i] = e.memory_s;
      overhead[i] = e.overhead_s;
      flops[i] = e.flops;
      bytes[i] = e.bytes;
    }
  });
}

void cost_sweep(const double* flops, const double* bytes_read, const double* bytes_written,
                std::size_t n_points, PeakClass math, double kernels, const Hardware& hw,
                const Efficiency& eff, int threads, EstimateColumns out) {
  const Rates rates(hw, eff);
  parallel_for(n_points, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      Cost c;
      c.flops = flops[i];
      c.bytes_read = bytes_read[i];
      c.bytes_written = bytes_written[i];
      c.kernels = kernels;
      c.math = math;
      c.kind = KernelKind::memory;
      const Estimate e = estimate(c, rates);
      out.set(i, e);
    }
  });
}

void float8_linear_sweep(const double* m, const double* k, const double* n,
                         std::size_t n_points, const LinearSpec& spec, const Hardware& hw,
                         const Efficiency& eff, int threads, double* bf16_s,
                         double* lowp_gemm_s, double* cast_s) {
  {
    // Recipe/mode checks throw here, on the calling thread, never inside a worker.
    KernelList probe;
    float8_linear_kernels(spec, eff.torchao_conventions, probe);
  }
  const Rates rates(hw, eff);
  const auto len = static_cast<Eigen::Index>(n_points);
  ConstColumn M(m, len), K(k, len), N(n, len);
  Column bf16(bf16_s, len), lowp(lowp_gemm_s, len), cast(cast_s, len);
  parallel_for(n_points, threads, [&](std::size_t begin, std::size_t end) {
    GemmMemo memo;  // the GEMMs of a linear share their output extents pairwise
    for (auto i = static_cast<Eigen::Index>(begin); i < static_cast<Eigen::Index>(end); ++i) {
      LinearSpec s = spec;
      s.m = M[i];
      s.k = K[i];
      s.n = N[i];
      const LinearTimes t = float8_linear_times(s, rates, eff.torchao_conventions, memo);
      bf16[i] = t.bf16_s;
      lowp[i] = t.lowp_gemm_s;
      cast[i] = t.cast_s;
    }
  });
}

}  // namespace roofline
