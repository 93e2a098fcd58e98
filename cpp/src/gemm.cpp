#include "roofline/ops/gemm.hpp"


namespace roofline {
namespace {

// Scale bytes of an operand with `rows` rows and the reduction dim `red`, blocked along `red`.
template <class T>
T operand_scale_bytes(const T& rows, const T& red, DType t) {
  const double block = scale_block_elements(t);
  if (block <= 0) return 0.0;
  if (t == DType::fp8_block_128x128) {
    return ceil(rows / 128.0) * ceil(red / 128.0) * scale_bytes(t);
  }
  return rows * ceil(red / block) * scale_bytes(t);
}

}  // namespace

template <class T>
CostT<T> gemm_cost(const GemmShapeT<T>& s, bool torchao_conventions) noexcept {
  CostT<T> c;
  c.kind = KernelKind::gemm;
  c.m = s.m;
  c.n = s.n;
  c.k = s.k;
  c.batch = s.batch;
  c.a_transposed = s.a_transposed;
  // Block-scaled formats carry their scales: 1x32 / 1x16 microscaling runs on the tensor
  // core's block-scaled MMA (cuBLASLt, as per-tensor fp8 does); 1x128 / 128x128 fp32 block
  // scales are applied in the kernel's own code (DeepGEMM-style kernels, not cuBLAS).
  c.scaling = s.scaling;
  if (s.scaling == Scaling::none && scale_block_elements(s.a) > 0) {
    c.scaling = is_microscaled(s.a) ? Scaling::microscaled : Scaling::blockwise;
  }
  c.math = peak_class(s.a);
  c.flops = 2.0 * s.batch * s.m * s.k * s.n;
  const T a_elems = s.m * s.k;
  const T b_elems = s.k * s.n;
  const T b_copies = s.b_shared ? T(1.0) : s.batch;
  T scale = 0.0;
  if (torchao_conventions) {
    // torchao: scale reads = floor((M*K + K*N) / block), charged at the element's own size;
    // fp8 blockwise GEMMs ignore their scales.
    const double block = scale_block_elements(s.a);
    const bool mx_like = s.a == DType::mxfp8 || s.a == DType::mxfp4 || s.a == DType::nvfp4;
    c.bytes_read = s.batch * a_elems * element_bytes(s.a) + b_copies * b_elems * element_bytes(s.b);
    if (mx_like) {  // (adding 0 bytes otherwise is adding nothing: skipped, the same bits)
      scale = floor((a_elems + b_elems) / block) * element_bytes(s.a);
      c.bytes_read += s.batch * scale;
    }
  } else {
    c.bytes_read = s.batch * (a_elems * element_bytes(s.a) + operand_scale_bytes(s.m, s.k, s.a)) +
                   b_copies * (b_elems * element_bytes(s.b) + operand_scale_bytes(s.n, s.k, s.b));
    // Rowwise scaling reads one fp32 scale per row of A and per column of B (torchao's
    // convention above ignores them).
    if (s.scaling == Scaling::rowwise) c.bytes_read += 4.0 * (s.batch * s.m + b_copies * s.n);
  }
  c.bytes_written = s.batch * s.m * s.n * element_bytes(s.out);
  // beta = 1: the kernel's epilogue reads the C it adds to (a main_grad in fp32)
  if (s.accumulate) c.bytes_read += c.bytes_written;
  return c;
}

template Cost gemm_cost<double>(const GemmShape&, bool) noexcept;
template CostT<Lanes> gemm_cost<Lanes>(const GemmShapeT<Lanes>&, bool) noexcept;

}  // namespace roofline
