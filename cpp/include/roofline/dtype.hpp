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

/// How a low-precision GEMM's inputs are scaled (the epilogue multiplies the accumulator).
enum class Scaling : std::uint8_t {
  none,        ///< unscaled (bf16, fp32, ...) or block scales carried by the format
  tensorwise,  ///< one fp32 scale per tensor (torch._scaled_mm with scalar scales)
  rowwise,     ///< one fp32 scale per row of A and per column of B
  blockwise,   ///< 1x128 / 128x128 fp32 block scales applied by the kernel's code (DeepGEMM-style)
  microscaled  ///< 1x32 / 1x16 scales applied by the tensor core (sm100 block-scaled MMA: mxfp8,
               ///< mxfp4, nvfp4; cuBLASLt / CUTLASS kernels; set by gemm_cost)
};

/// Bytes of one element's payload, without block scales (fractional for fp4).
constexpr double element_bytes(DType t) noexcept {
  switch (t) {
    case DType::fp64: return 8;
    case DType::fp32: case DType::tf32: case DType::int32: return 4;
    case DType::bf16: case DType::fp16: return 2;
    case DType::fp4_e2m1: case DType::mxfp4: case DType::nvfp4: return 0.5;
    default: return 1;  // fp8 formats, int8
  }
}

/// Elements that share one scale along the reduction dimension (0 for unscaled formats).
constexpr double scale_block_elements(DType t) noexcept {
  switch (t) {
    case DType::mxfp8: case DType::mxfp4: return 32;
    case DType::nvfp4: return 16;
    case DType::fp8_block_1x128: return 128;
    case DType::fp8_block_128x128: return 128.0 * 128.0;
    default: return 0;
  }
}

/// Whether the tensor core applies the format's scales (sm100 block-scaled MMA: mxfp8, mxfp4,
/// nvfp4), as opposed to kernel code promoting partial sums (fp8 1x128 / 128x128 blocks).
constexpr bool is_microscaled(DType t) noexcept {
  return t == DType::mxfp8 || t == DType::mxfp4 || t == DType::nvfp4;
}

/// Bytes of one scale value: 1 for e8m0 / e4m3 scales, 4 for fp32 (0 for unscaled formats).
constexpr double scale_bytes(DType t) noexcept {
  switch (t) {
    case DType::mxfp8: case DType::mxfp4: case DType::nvfp4: return 1;
    case DType::fp8_block_1x128: case DType::fp8_block_128x128: return 4;
    default: return 0;
  }
}

/// Bytes of block scale attributed to each element (0 for unscaled formats).
constexpr double scale_bytes_per_element(DType t) noexcept {
  return scale_block_elements(t) > 0 ? scale_bytes(t) / scale_block_elements(t) : 0.0;
}

/// Total bytes per element: payload plus scale overhead.
constexpr double bytes_per_element(DType t) noexcept {
  return element_bytes(t) + scale_bytes_per_element(t);
}

/// The hardware peak a GEMM with this input format runs at.
constexpr PeakClass peak_class(DType t) noexcept {
  switch (t) {
    case DType::fp64: return PeakClass::fp64;
    case DType::fp32: return PeakClass::fp32;
    case DType::tf32: return PeakClass::tf32;
    case DType::bf16: case DType::fp16: return PeakClass::bf16;
    case DType::int8: case DType::int32: return PeakClass::int8;
    case DType::fp4_e2m1: case DType::mxfp4: case DType::nvfp4: return PeakClass::fp4;
    default: return PeakClass::fp8;
  }
}

}  // namespace roofline
