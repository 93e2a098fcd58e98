#pragma once
#include <array>

#include "roofline/dtype.hpp"

namespace roofline {

/// The numbers of one accelerator the cost model needs, in SI units (0 = unknown).
struct Hardware {
  std::array<double, kPeakClassCount> peak_flops_per_s{};  ///< dense peak per PeakClass
  double mem_bytes_per_s = 0;                               ///< DRAM bandwidth
  double l2_bytes = 0;                                      ///< last-level cache size
  int sms = 0;                                              ///< SMs / CUs
  double clock_hz = 0;                                      ///< boost clock

  /// Dense peak FLOP/s for a class (0 if the database has none).
  double peak(PeakClass c) const noexcept { return peak_flops_per_s[static_cast<int>(c)]; }
};

}  // namespace roofline
