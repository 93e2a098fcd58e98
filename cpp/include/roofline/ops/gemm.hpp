#pragma once
#include "roofline/cost.hpp"
#include "roofline/dtype.hpp"

namespace roofline {

/// Shape of C[batch, m, n] = A[batch, m, k] @ B[batch, k, n] and its formats.
struct GemmShape {
  double m = 1;                     ///< rows of A and C
  double k = 1;                     ///< reduction dimension
  double n = 1;                     ///< columns of B and C
  double batch = 1;                 ///< independent GEMMs of this shape in one kernel
  DType a = DType::bf16;            ///< format of A
  DType b = DType::bf16;            ///< format of B
  DType out = DType::bf16;          ///< format of C
  bool b_shared = false;            ///< B is one matrix used by every batch entry (read once)
  Scaling scaling = Scaling::none;  ///< how A and B are scaled (fp8: tensorwise or rowwise)
};

/// FLOPs 2*batch*m*k*n; reads A and B once (with block scales), writes C once.
Cost gemm_cost(const GemmShape& s, bool torchao_conventions = false) noexcept;

}  // namespace roofline
