#include "roofline/estimate.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {
namespace {

// A CTA tile of a GEMM: rows and columns of C it computes.
struct Tile {
  double m, n;
};

// Tiles a tuned library (cuBLAS / CUTLASS / DeepGEMM) chooses from on current GPUs.
constexpr std::array<Tile, 12> kTiles{{
    {64, 64}, {64, 128}, {64, 192}, {64, 256},
    {128, 64}, {128, 128}, {128, 192}, {128, 256},
    {256, 64}, {256, 128}, {256, 192}, {256, 256},
}};

// Operand reuse of a tile (FLOPs per byte loaded, up to a constant): m*n / (m + n). Tiles at
// or above that of 128x128 keep the tensor cores fed; smaller ones run proportionally slower.
constexpr double kFullReuse = 128.0 * 128.0 / 256.0;

// Utilisation of stream-K schedules, which split the K loop of the last wave's tiles across
// all SMs instead of leaving SMs idle (a fix-up pass costs a few percent).
constexpr double kStreamKUtilisation = 0.92;

// Split-K factors a library may use when tiles leave SMs idle (each slice writes fp32 partial
// sums that a reduction reads back, so large factors only pay off for long K).
constexpr std::array<double, 5> kSplits{1, 2, 4, 8, 16};

double combine(double a, double b, double p) {
  if (p <= 0.0) return std::max(a, b);
  const double hi = std::max(a, b);
  if (hi <= 0.0) return 0.0;
  const double x = a / hi, y = b / hi;
  if (p == 4.0) return hi * std::sqrt(std::sqrt(x * x * x * x + y * y * y * y));  // fast path
  return hi * std::pow(std::pow(x, p) + std::pow(y, p), 1.0 / p);
}

Estimate plain(const Cost& cost, const Rates& r, Estimate e) {
  e.compute_s = cost.flops * r.s_per_flop[static_cast<std::size_t>(cost.math)];
  e.memory_s = e.bytes * r.s_per_byte;
  const double roof = std::max(e.compute_s, e.memory_s);
  e.time_s = std::max(roof, cost.kernels * r.kernel_floor_s);
  e.overhead_s = e.time_s - roof;
  return e;
}

// DRAM time when only `busy` SMs issue loads.
double memory_time(double bytes, double busy, const Rates& r) {
  double s_per_byte = r.s_per_byte;
  if (r.s_per_byte_per_sm > 0 && busy > 0) {
    s_per_byte = std::max(s_per_byte, r.s_per_byte_per_sm / busy);
  }
  return bytes * s_per_byte;
}

Estimate shaped_gemm(const Cost& c, const Rates& r, Estimate e) {
  const double s_per_flop = r.s_per_flop[static_cast<std::size_t>(c.math)];
  const double sms = r.sms;
  double best_time = INFINITY, best_compute = 0, best_memory = 0;
  // The best (tile, split-K) configuration, as a tuned library would pick it. Each
  // configuration's time is non-decreasing in m, n, k and batch, so their minimum is too.
  for (const Tile& t : kTiles) {
    const double tiles_m = std::ceil(c.m / t.m);
    const double tiles_n = std::ceil(c.n / t.n);
    const double tiles = c.batch * tiles_m * tiles_n;
    const double reuse = std::min(1.0, t.m * t.n / (t.m + t.n) / kFullReuse);
    const double padded_flops = 2.0 * c.batch * tiles_m * t.m * tiles_n * t.n * c.k;
    for (const double splits : kSplits) {
      // Split-K fills SMs that the tiles leave idle; never worth it with a full wave.
      if (splits > 1.0 && tiles >= sms) break;
      const double units = tiles * splits;
      const double waves = std::ceil(units / sms);
      double utilisation = units / (waves * sms);
      if (units > sms) utilisation = std::max(utilisation, kStreamKUtilisation);
      const double compute = padded_flops * s_per_flop / (utilisation * reuse);
      const double partials = splits > 1.0 ? 2.0 * 4.0 * c.batch * c.m * c.n * splits : 0.0;
      // Compute and DRAM traffic overlap imperfectly: a p-norm is max-like when one term
      // dominates and sum-like when both saturate (short-K GEMMs writing a large C show it).
      const double memory = memory_time(e.bytes + partials, std::min(units, sms), r);
      const double time = combine(compute, memory, r.eff.overlap_p);
      if (time < best_time) {
        best_time = time;
        best_compute = compute;
        best_memory = memory;
      }
    }
  }
  e.compute_s = best_compute;
  e.memory_s = best_memory;
  e.time_s = std::max(best_time + c.kernels * r.eff.gemm_latency_s, c.kernels * r.kernel_floor_s);
  e.overhead_s = e.time_s - std::max(e.compute_s, e.memory_s);
  return e;
}

Estimate shaped_memory(const Cost& c, const Rates& r, Estimate e) {
  e.compute_s = c.flops * r.s_per_flop[static_cast<std::size_t>(c.math)];
  e.memory_s = e.bytes * r.s_per_byte;
  const double roof = std::max(e.compute_s, e.memory_s);
  const double latency = e.bytes > 0 ? c.kernels * r.eff.memory_latency_s : 0.0;
  e.time_s = std::max(roof + latency, c.kernels * r.kernel_floor_s);
  e.overhead_s = e.time_s - roof;
  return e;
}

}  // namespace

Estimate& Estimate::operator+=(const Estimate& o) noexcept {
  time_s += o.time_s;
  compute_s += o.compute_s;
  memory_s += o.memory_s;
  overhead_s += o.overhead_s;
  flops += o.flops;
  bytes += o.bytes;
  kernels += o.kernels;
  return *this;
}

Rates::Rates(const Hardware& hw, const Efficiency& e) noexcept
    : s_per_byte(1.0 / (hw.mem_bytes_per_s * e.memory_fraction)),
      kernel_floor_s(e.kernel_floor_s),
      sms(hw.sms),
      s_per_byte_per_sm(e.sm_bytes_per_s > 0 ? 1.0 / e.sm_bytes_per_s : 0.0),
      eff(e) {
  for (int c = 0; c < kPeakClassCount; ++c) {
    const double rate = hw.peak_flops_per_s[static_cast<std::size_t>(c)] * e.compute_fraction;
    s_per_flop[static_cast<std::size_t>(c)] = rate > 0 ? 1.0 / rate : 0.0;
  }
}

Estimate estimate(const Cost& cost, const Rates& rates) noexcept {
  Estimate e;
  e.flops = cost.flops;
  e.bytes = cost.bytes();
  e.kernels = cost.kernels;
  if (rates.eff.shape_aware) {
    if (cost.kind == KernelKind::gemm && rates.sms > 0) return shaped_gemm(cost, rates, e);
    if (cost.kind == KernelKind::memory) return shaped_memory(cost, rates, e);
  }
  return plain(cost, rates, e);
}

Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept {
  return estimate(cost, Rates(hw, eff));
}

}  // namespace roofline
