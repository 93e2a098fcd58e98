#pragma once
#include "roofline/cost.hpp"
#include "roofline/dtype.hpp"
#include "roofline/lanes.hpp"

namespace roofline {

/// Shape of C[batch, m, n] = A[batch, m, k] @ B[batch, k, n] and its formats; T is the
/// number type of the extents (double, or Lanes for eight shapes).
template <class T>
struct GemmShapeT {
  T m = 1;                          ///< rows of A and C
  T k = 1;                          ///< reduction dimension
  T n = 1;                          ///< columns of B and C
  T batch = 1;                      ///< independent GEMMs of this shape in one kernel
  DType a = DType::bf16;            ///< format of A
  DType b = DType::bf16;            ///< format of B
  DType out = DType::bf16;          ///< format of C
  bool b_shared = false;            ///< B is one matrix used by every batch entry (read once)
  Scaling scaling = Scaling::none;  ///< how A and B are scaled (fp8: tensorwise or rowwise)
  bool a_transposed = false;        ///< A is a transposed view stored k x m (leading dim m), as
                                    ///< X^T in a weight gradient dW = X^T dY
  bool accumulate = false;          ///< C is read and added to (beta = 1): a weight gradient
                                    ///< accumulated into an fp32 main_grad
};

/// The shape of one GEMM.
using GemmShape = GemmShapeT<double>;

/// FLOPs 2*batch*m*k*n; reads A and B once (with block scales), writes C once and, with
/// `accumulate`, reads it once too (T = double or Lanes: each lane bit for bit the double cost).
template <class T>
CostT<T> gemm_cost(const GemmShapeT<T>& s, bool torchao_conventions = false) noexcept;

/// gemm_cost() of one shape (instantiated in gemm.cpp).
extern template Cost gemm_cost<double>(const GemmShape&, bool) noexcept;
/// gemm_cost() of eight shapes (instantiated in gemm.cpp).
extern template CostT<Lanes> gemm_cost<Lanes>(const GemmShapeT<Lanes>&, bool) noexcept;

}  // namespace roofline
