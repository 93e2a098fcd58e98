#pragma once
#include <array>

#include "roofline/cost.hpp"
#include "roofline/efficiency.hpp"
#include "roofline/hardware.hpp"

namespace roofline {

/// Time of a cost on a hardware, with its parts; sums of estimates are estimates.
struct Estimate {
  double time_s = 0;      ///< predicted time
  double compute_s = 0;   ///< flops / achievable FLOP/s
  double memory_s = 0;    ///< bytes / achievable bytes/s
  double overhead_s = 0;  ///< time above max(compute_s, memory_s): the launch floor
  double flops = 0;       ///< floating-point operations
  double bytes = 0;       ///< DRAM bytes read + written
  double kernels = 0;     ///< kernel launches

  /// Adds another estimate field by field (sequential kernels).
  Estimate& operator+=(const Estimate& o) noexcept;
};

/// Achievable rates of a hardware under an efficiency model, as reciprocals (computed once).
struct Rates {
  std::array<double, kPeakClassCount> s_per_flop{};  ///< 1 / (peak * compute_fraction) per class
  double s_per_byte = 0;                              ///< 1 / (bandwidth * memory_fraction)
  double kernel_floor_s = 0;                          ///< minimum time of one kernel

  /// Rates of `hw` under `eff`.
  Rates(const Hardware& hw, const Efficiency& eff) noexcept;
};

/// Time of one kernel: max(compute, memory, kernels x floor), each term at its achievable rate.
/// (Inline: sweeps call it once per kernel per shape.)
inline Estimate estimate(const Cost& cost, const Rates& rates) noexcept {
  Estimate e;
  e.flops = cost.flops;
  e.bytes = cost.bytes();
  e.kernels = cost.kernels;
  e.compute_s = cost.flops * rates.s_per_flop[static_cast<std::size_t>(cost.math)];
  e.memory_s = e.bytes * rates.s_per_byte;
  const double roof = e.compute_s > e.memory_s ? e.compute_s : e.memory_s;
  const double floor_s = cost.kernels * rates.kernel_floor_s;
  e.time_s = roof > floor_s ? roof : floor_s;
  e.overhead_s = e.time_s - roof;
  return e;
}

/// Same as estimate(cost, Rates(hw, eff)).
Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept;

}  // namespace roofline
