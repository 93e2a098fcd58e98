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

/// A kernel sink adding each kernel's time to its role's total (float8_linear_times). Final,
/// with push inline: the formulas instantiated on it (the *_to functions) call it directly.
/// ShapeAware = false (rates of a plain model: "peak", "torchao", custom) prices each kernel
/// with plain_time, so no Cost leaves the formula and the compiler writes only the fields that
/// reads (flops, bytes, kernels: not the ~1.3 kB of a full eight-lane Cost per kernel).
/// The times are those of estimate() / estimate_lane_times(), bit for bit.
template <class T, bool ShapeAware>
struct RoleTimesT final : KernelSinkT<T> {
  const Rates& rates;   ///< hardware x efficiency
  GemmMemo& memo;       ///< GEMM tile tables shared along the sweep
  LinearTimesT<T> t{};  ///< the totals

  RoleTimesT(const Rates& r, GemmMemo& m) noexcept : rates(r), memo(m) {}
  /// Adds the kernel's time to its role.
  void push(const char*, KernelRole role, const CostT<T>& c) override {
    T time;
    if constexpr (ShapeAware) {
      time = rates.eff.shape_aware ? shaped(c) : plain_time(c, rates);
    } else {
      time = plain_time(c, rates);
    }
    switch (role) {
      case KernelRole::bf16_gemm: t.bf16_s += time; break;
      case KernelRole::lowp_gemm: t.lowp_gemm_s += time; break;
      case KernelRole::cast: t.cast_s += time; break;
    }
  }

 private:
  // The shape-aware search stays a call (ROOFLINE_FLATTEN callers inline everything else).
  ROOFLINE_NOINLINE double shaped(const Cost& c) { return estimate(c, rates, memo).time_s; }
  ROOFLINE_NOINLINE Lanes shaped(const CostT<Lanes>& c) {
    return estimate_lane_times(c, rates, memo);
  }
};

/// Sink of any efficiency model.
template <class T>
using RoleTimes = RoleTimesT<T, true>;
/// Sink of a plain (not shape-aware) model.
template <class T>
using PlainRoleTimes = RoleTimesT<T, false>;

extern template void training_cast_kernels_to<double, PlainRoleTimes<double>>(
    const double&, const double&, TensorRole, Recipe, bool, bool, PlainRoleTimes<double>&,
    const CastTerms&);
extern template void training_cast_kernels_to<Lanes, PlainRoleTimes<Lanes>>(
    const Lanes&, const Lanes&, TensorRole, Recipe, bool, bool, PlainRoleTimes<Lanes>&,
    const CastTerms&);
extern template void inference_cast_kernels_to<double, PlainRoleTimes<double>>(
    const double&, const double&, Recipe, bool, bool, PlainRoleTimes<double>&,
    const CastTerms&);
extern template void inference_cast_kernels_to<Lanes, PlainRoleTimes<Lanes>>(
    const Lanes&, const Lanes&, Recipe, bool, bool, PlainRoleTimes<Lanes>&, const CastTerms&);
extern template void training_cast_kernels_to<double, RoleTimes<double>>(
    const double&, const double&, TensorRole, Recipe, bool, bool, RoleTimes<double>&,
    const CastTerms&);
extern template void training_cast_kernels_to<Lanes, RoleTimes<Lanes>>(
    const Lanes&, const Lanes&, TensorRole, Recipe, bool, bool, RoleTimes<Lanes>&,
    const CastTerms&);
extern template void inference_cast_kernels_to<double, RoleTimes<double>>(
    const double&, const double&, Recipe, bool, bool, RoleTimes<double>&, const CastTerms&);
extern template void inference_cast_kernels_to<Lanes, RoleTimes<Lanes>>(
    const Lanes&, const Lanes&, Recipe, bool, bool, RoleTimes<Lanes>&, const CastTerms&);

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
