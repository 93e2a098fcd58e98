#include "roofline/dtype.hpp"

namespace roofline {

double element_bytes(DType t) noexcept {
  switch (t) {
    case DType::fp64: return 8;
    case DType::fp32: case DType::tf32: case DType::int32: return 4;
    case DType::bf16: case DType::fp16: return 2;
    case DType::fp8_e4m3: case DType::fp8_e5m2: case DType::int8: case DType::mxfp8:
    case DType::fp8_block_1x128: case DType::fp8_block_128x128: return 1;
    case DType::fp4_e2m1: case DType::mxfp4: case DType::nvfp4: return 0.5;
  }
  return 0;
}

double scale_block_elements(DType t) noexcept {
  switch (t) {
    case DType::mxfp8: case DType::mxfp4: return 32;
    case DType::nvfp4: return 16;
    case DType::fp8_block_1x128: return 128;
    case DType::fp8_block_128x128: return 128.0 * 128.0;
    default: return 0;
  }
}

double scale_bytes(DType t) noexcept {
  switch (t) {
    case DType::mxfp8: case DType::mxfp4: case DType::nvfp4: return 1;  // e8m0 / e4m3
    case DType::fp8_block_1x128: case DType::fp8_block_128x128: return 4;  // fp32
    default: return 0;
  }
}

double scale_bytes_per_element(DType t) noexcept {
  const double block = scale_block_elements(t);
  return block > 0 ? scale_bytes(t) / block : 0.0;
}

double bytes_per_element(DType t) noexcept {
  return element_bytes(t) + scale_bytes_per_element(t);
}

PeakClass peak_class(DType t) noexcept {
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
