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

namespace {

// float8_linear_sweep's points [begin, end), eight at a time (the last block padded with
// copies of the last point, whose results are dropped).
void float8_linear_block_range(const double* m, const double* k, const double* n,
                               std::size_t begin, std::size_t end, const LinearSpec& spec,
                               const Rates& rates, bool torchao, double* bf16_s,
                               double* lowp_gemm_s, double* cast_s) {
  GemmMemo memo;  // the GEMMs of a linear share their output extents pairwise (per lane)
  LinearSpecT<Lanes> s;
  s.recipe = spec.recipe;
  s.mode = spec.mode;
  s.fuse_with_prev = spec.fuse_with_prev;
  for (std::size_t i = begin; i < end; i += kLaneCount) {
    const std::size_t used = std::min(kLaneCount, end - i);
    if (used == kLaneCount) {  // a full block: whole-lane copies (the compiler vectorizes them)
      std::copy_n(m + i, kLaneCount, s.m.v);
      std::copy_n(k + i, kLaneCount, s.k.v);
      std::copy_n(n + i, kLaneCount, s.n.v);
    } else {
      for (std::size_t j = 0; j < kLaneCount; ++j) {
        const std::size_t p = i + std::min(j, used - 1);
        s.m[j] = m[p];
        s.k[j] = k[p];
        s.n[j] = n[p];
      }
    }
    const LinearTimesT<Lanes> t = float8_linear_times(s, rates, torchao, memo);
    if (used == kLaneCount) {
      std::copy_n(t.bf16_s.v, kLaneCount, bf16_s + i);
      std::copy_n(t.lowp_gemm_s.v, kLaneCount, lowp_gemm_s + i);
      std::copy_n(t.cast_s.v, kLaneCount, cast_s + i);
    } else {
      for (std::size_t j = 0; j < used; ++j) {
        bf16_s[i + j] = t.bf16_s[j];
        lowp_gemm_s[i + j] = t.lowp_gemm_s[j];
        cast_s[i + j] = t.cast_s[j];
      }
    }
  }
}

}  // namespace

void float8_linear_sweep(const double* m, const double* k, const double* n,
                         std::size_t n_points, const LinearSpec& spec, const Hardware& hw,
                         const Efficiency& eff, int threads, double* bf16_s,
                         double* lowp_gemm_s, double* cast_s) {
  {
    // Recipe/mode checks throw here, on the calling thread, never inside a worker (the
    // eight-shape listing branches on the recipe and mode alone: it throws where this does).
    KernelList probe;
    float8_linear_kernels(spec, eff.torchao_conventions, probe);
  }
  const Rates rates(hw, eff);
  parallel_for(n_points, threads, [&](std::size_t begin, std::size_t end) {
    float8_linear_block_range(m, k, n, begin, end, spec, rates, eff.torchao_conventions, bf16_s,
                              lowp_gemm_s, cast_s);
  });
}

}  // namespace roofline
