#pragma once
#include <cstdint>

namespace roofline {

/// The peak-throughput class a datatype's math runs at (one column of the hardware table).
enum class PeakClass : std::uint8_t { fp64, fp32, tf32, bf16, fp8, int8, fp4 };

/// Number of PeakClass values.
inline constexpr int kPeakClassCount = 7;

/// Element formats, including block-scaled ones whose scales add bytes per element.
enum class DType : std::uint8_t {
  fp64,
  fp32,
  tf32,
  bf16,
  fp16,
  fp8_e4m3,
  fp8_e5m2,
  int8,
  int32,
  fp4_e2m1,
  mxfp8,             ///< fp8 elements + one e8m0 scale byte per 32 elements
  mxfp4,             ///< fp4 elements + one e8m0 scale byte per 32 elements
  nvfp4,             ///< fp4 elements + one e4m3 scale byte per 16 elements
  fp8_block_1x128,   ///< fp8 elements + one fp32 scale per 1x128 block
  fp8_block_128x128  ///< fp8 elements + one fp32 scale per 128x128 block
};

/// Bytes of one element's payload, without block scales (fractional for fp4).
double element_bytes(DType t) noexcept;

/// Bytes of block scale attributed to each element (0 for unscaled formats).
double scale_bytes_per_element(DType t) noexcept;

/// Elements that share one scale along the reduction dimension (0 for unscaled formats).
double scale_block_elements(DType t) noexcept;

/// Bytes of one scale value (0 for unscaled formats).
double scale_bytes(DType t) noexcept;

/// Total bytes per element: payload plus scale overhead.
double bytes_per_element(DType t) noexcept;

/// The hardware peak a GEMM with this input format runs at.
PeakClass peak_class(DType t) noexcept;

}  // namespace roofline
