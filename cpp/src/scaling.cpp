// Formulas that carry fitted terms from the reference accelerator to another one.
#include "roofline/terms/scaling.hpp"

#include <algorithm>

namespace roofline {

double gpu_streaming_latency_s(double per_call_latency_s, double kernel_gap_s,
                               double small_kernel_ramp_s) {
  if (kernel_gap_s <= 0) return per_call_latency_s;
  // A kernel too small to fill the DRAM pipeline saves the ramp: it then costs the gap alone.
  return std::min(per_call_latency_s, kernel_gap_s + std::max(0.0, small_kernel_ramp_s));
}

double gemm_throttle_fraction(double fitted, double reference_flops_per_w,
                              double bf16_flops_per_s, double tdp_w) {
  if (fitted <= 0 || reference_flops_per_w <= 0 || bf16_flops_per_s <= 0 || tdp_w <= 0) {
    return 0.0;
  }
  // A GPU that packs more tensor throughput per watt drops its clock further under load.
  return std::max(0.5, 1.0 - (1.0 - fitted) * (bf16_flops_per_s / tdp_w) / reference_flops_per_w);
}

double flash_fraction_per_sm_clock(double ref_fraction, double ref_bf16_flops_per_s,
                                   double ref_bf16_fraction, double ref_sms, double ref_clock_hz,
                                   double bf16_flops_per_s, double bf16_fraction, double sms,
                                   double clock_hz) {
  const double ref_gemm_flops_per_s = ref_bf16_flops_per_s * ref_bf16_fraction;
  const double gemm_flops_per_s = bf16_flops_per_s * bf16_fraction;
  if (!(sms != 0 && clock_hz != 0 && ref_sms != 0 && ref_clock_hz != 0 &&
        gemm_flops_per_s > 0)) {
    return ref_fraction;
  }
  // The legacy mma.sync path has its own throughput per SM and clock, which the reference
  // measures; the GPU's own GEMM rate (its native MMA path) is what it is a fraction of.
  const double per_sm_hz = ref_fraction * ref_gemm_flops_per_s / (ref_sms * ref_clock_hz);
  return per_sm_hz * sms * clock_hz / gemm_flops_per_s;
}

double per_sm_bandwidth(double fraction, double mem_bytes_per_s, double sms) {
  return sms != 0 ? fraction * mem_bytes_per_s / sms : 0.0;
}

}  // namespace roofline
