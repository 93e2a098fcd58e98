#pragma once
#include <cstdint>

#include "roofline/estimate.hpp"
#include "roofline/ops/cast.hpp"

namespace roofline {

/// Training runs output, grad_input and grad_weight GEMMs; inference only the output GEMM.
enum class LinearMode : std::uint8_t { training, inference };

/// A linear layer y = x @ w with x of shape m x k and w of shape k x n, and how it runs; T is
/// the number type of the extents (double, or Lanes for eight shapes).
template <class T>
struct LinearSpecT {
  T m = 1;                                ///< tokens (rows of x)
  T k = 1;                                ///< input features
  T n = 1;                                ///< output features
  Recipe recipe = Recipe::tensorwise;     ///< low-precision recipe
  LinearMode mode = LinearMode::training; ///< training (fwd+bwd) or inference (fwd)
  bool fuse_with_prev = false;            ///< the bf16 read of activations fuses into the producer
};

/// One linear layer of one shape.
using LinearSpec = LinearSpecT<double>;

/// All kernels of the linear: bf16 baseline GEMMs, low-precision GEMMs and casts. Real cast
/// terms (efficiency.cast) select the compiled cast kernels; the fp8 GEMMs carry their scaling
/// (tensorwise / rowwise) unless torchao_conventions is set. T = double or Lanes: each lane's
/// kernels are bit for bit those of its shape, in the same order.
template <class T>
void float8_linear_kernels(const LinearSpecT<T>& s, bool torchao_conventions,
                           KernelSinkT<T>& out, const CastTerms& terms = CastTerms{});

/// float8_linear_kernels() of one shape (instantiated in float8_linear.cpp).
extern template void float8_linear_kernels<double>(const LinearSpec&, bool, KernelSink&,
                                                   const CastTerms&);
/// float8_linear_kernels() of eight shapes (instantiated in float8_linear.cpp).
extern template void float8_linear_kernels<Lanes>(const LinearSpecT<Lanes>&, bool,
                                                  KernelSinkT<Lanes>&, const CastTerms&);

/// Times of a linear summed by role (T: double, or Lanes for eight shapes).
template <class T>
struct LinearTimesT {
  T bf16_s = 0;       ///< bf16 GEMMs
  T lowp_gemm_s = 0;  ///< low-precision GEMMs
  T cast_s = 0;       ///< cast overhead kernels
};

/// Times of one linear of one shape.
using LinearTimes = LinearTimesT<double>;

/// Estimates every kernel of the linear (each with its own floor) and sums them by role; the
/// cast terms come from rates.eff.cast.
LinearTimes float8_linear_times(const LinearSpec& s, const Rates& rates, bool torchao_conventions);
/// float8_linear_times() of eight shapes (each lane bit for bit its shape's), the GEMMs sharing
/// tile tables through `memo` (kept across the blocks of a sweep on the same rates).
LinearTimesT<Lanes> float8_linear_times(const LinearSpecT<Lanes>& s, const Rates& rates,
                                        bool torchao_conventions, GemmMemo& memo);

/// Sum of the estimates of a standalone compiled cast's kernels (float8_cast_kernels, with the
/// cast terms of rates.eff): time, its parts, bytes and kernel count.
Estimate float8_cast_estimate(double rows, double cols, CastGranularity granularity,
                              bool transpose, const Rates& rates);

}  // namespace roofline
