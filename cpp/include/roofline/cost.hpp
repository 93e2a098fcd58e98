#pragma once
#include "roofline/dtype.hpp"

namespace roofline {

/// Hardware-free work of one kernel (or of `kernels` identical launches): what a formula returns.
struct Cost {
  double flops = 0;                   ///< floating-point operations (a count)
  double bytes_read = 0;              ///< bytes read from DRAM
  double bytes_written = 0;           ///< bytes written to DRAM
  double kernels = 1;                 ///< kernel launches
  PeakClass math = PeakClass::bf16;   ///< which peak the flops run at

  /// Total DRAM traffic in bytes.
  double bytes() const noexcept { return bytes_read + bytes_written; }
};

}  // namespace roofline
