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

Estimate estimate(const Cost& cost, const Hardware& hw, const Efficiency& eff) noexcept {
  Estimate e;
  e.flops = cost.flops;
  e.bytes = cost.bytes();
  e.kernels = cost.kernels;
  const double peak = hw.peak(cost.math);
  e.compute_s = cost.flops > 0 ? cost.flops / (peak * eff.compute_fraction) : 0.0;
  e.memory_s = e.bytes > 0 ? e.bytes / (hw.mem_bytes_per_s * eff.memory_fraction) : 0.0;
  const double roof = std::max(e.compute_s, e.memory_s);
  e.time_s = std::max(roof, cost.kernels * eff.kernel_floor_s);
  e.overhead_s = e.time_s - roof;
  return e;
}

}  // namespace roofline
