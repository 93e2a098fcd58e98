#include "roofline/estimate.hpp"

#include <algorithm>

namespace roofline {

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

Rates::Rates(const Hardware& hw, const Efficiency& eff) noexcept
    : s_per_byte(1.0 / (hw.mem_bytes_per_s * eff.memory_fraction)),
      kernel_floor_s(eff.kernel_floor_s) {
  for (int c = 0; c < kPeakClassCount; ++c) {
    const double rate = hw.peak_flops_per_s[static_cast<std::size_t>(c)] * eff.compute_fraction;
    s_per_flop[static_cast<std::size_t>(c)] = rate > 0 ? 1.0 / rate : 0.0;
  }
}

Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept {
  return estimate(cost, Rates(hw, eff));
}

}  // namespace roofline
