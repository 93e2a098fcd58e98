#pragma once
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

/// Time of one kernel: max(compute, memory, kernels x floor), each term at its achievable rate.
Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept;

}  // namespace roofline
