#include "roofline/ops/float8_linear.hpp"

#include "roofline/ops/gemm.hpp"

namespace roofline {
namespace {

// Formats of the (A, B) operands of the low-precision GEMMs, per GEMM of the linear.
struct LowpFormats {
  DType output_a, output_b;        // input @ weight
  DType grad_input_a, grad_input_b;  // grad_output @ weight^T
  DType grad_weight_a, grad_weight_b;  // input^T @ grad_output
};

LowpFormats lowp_formats(Recipe r) {
  switch (r) {
    case Recipe::tensorwise:
    case Recipe::tensorwise_te:
    case Recipe::tensorwise_te_sm90:
    case Recipe::tensorwise_static:
    case Recipe::delayed_te:
    case Recipe::delayed_te_uncached:
    case Recipe::rowwise:
    case Recipe::rowwise_with_gw_hp:
      return {DType::fp8_e4m3, DType::fp8_e4m3, DType::fp8_e4m3,
              DType::fp8_e4m3, DType::fp8_e4m3, DType::fp8_e4m3};
    case Recipe::mxfp4_cutlass:
    case Recipe::mxfp4:
      return {DType::mxfp4, DType::mxfp4, DType::mxfp4, DType::mxfp4, DType::mxfp4, DType::mxfp4};
    case Recipe::nvfp4:
    case Recipe::nvfp4_static:
    case Recipe::nvfp4_no_global_scale:
      return {DType::nvfp4, DType::nvfp4, DType::nvfp4, DType::nvfp4, DType::nvfp4, DType::nvfp4};
    case Recipe::blockwise:
    case Recipe::blockwise_te:
      return {DType::fp8_block_1x128, DType::fp8_block_128x128, DType::fp8_block_1x128,
              DType::fp8_block_128x128, DType::fp8_block_1x128, DType::fp8_block_1x128};
    default:  // mxfp8 variants
      return {DType::mxfp8, DType::mxfp8, DType::mxfp8, DType::mxfp8, DType::mxfp8, DType::mxfp8};
  }
}

// How torch._scaled_mm scales each fp8 GEMM of a recipe (none for block-scaled formats).
Scaling recipe_scaling(Recipe r) {
  switch (r) {
    case Recipe::tensorwise: case Recipe::tensorwise_te: case Recipe::tensorwise_te_sm90:
    case Recipe::tensorwise_static:
    case Recipe::delayed_te: case Recipe::delayed_te_uncached:
      return Scaling::tensorwise;
    // rowwise_with_gw_hp's grad_input pairs rowwise grad_output scales with a tensorwise weight
    // scale that torchao repeats along the columns: the rowwise kernel runs.
    case Recipe::rowwise: case Recipe::rowwise_with_gw_hp: return Scaling::rowwise;
    default: return Scaling::none;
  }
}

template <class T>
CostT<T> gemm(const T& m, const T& k, const T& n, DType a, DType b, bool torchao,
              Scaling scaling = Scaling::none) {
  GemmShapeT<T> s;
  s.m = m;
  s.k = k;
  s.n = n;
  s.a = a;
  s.b = b;
  s.out = DType::bf16;
  if (!torchao) s.scaling = scaling;  // torchao's roofline has no scaling term
  return gemm_cost(s, torchao);
}

// float8_linear_kernels into a sink of static type Sink (RoleTimes: direct, inlined pushes).
template <class T, class Sink>
ROOFLINE_FLATTEN void linear_kernels_to(const LinearSpecT<T>& s, bool torchao, Sink& out,
                                        const CastTerms& terms) {
  const T m = s.m, k = s.k, n = s.n;
  const Scaling sc = recipe_scaling(s.recipe);
  const LowpFormats f = lowp_formats(s.recipe);
  const DType bf = DType::bf16;
  out.push("output = input @ weight (bf16)", KernelRole::bf16_gemm, gemm(m, k, n, bf, bf, torchao));
  if (s.mode == LinearMode::inference) {
    out.push("output = input @ weight", KernelRole::lowp_gemm,
             gemm(m, k, n, f.output_a, f.output_b, torchao, sc));
    inference_cast_kernels_to(m, k, s.recipe, s.fuse_with_prev, torchao, out, terms);
    te_weight_scale_swizzle(k, n, s.recipe, torchao, static_cast<KernelSinkT<T>&>(out));
    return;
  }
  out.push("grad_input = grad_output @ weight^T (bf16)", KernelRole::bf16_gemm,
           gemm(m, n, k, bf, bf, torchao));
  out.push("grad_weight = input^T @ grad_output (bf16)", KernelRole::bf16_gemm,
           gemm(k, m, n, bf, bf, torchao));

  out.push("output = input @ weight", KernelRole::lowp_gemm,
           gemm(m, k, n, f.output_a, f.output_b, torchao, sc));
  out.push("grad_input = grad_output @ weight^T", KernelRole::lowp_gemm,
           gemm(m, n, k, f.grad_input_a, f.grad_input_b, torchao, sc));
  if (s.recipe == Recipe::rowwise_with_gw_hp) {
    out.push("grad_weight = input^T @ grad_output (bf16, high precision)", KernelRole::lowp_gemm,
             gemm(k, m, n, bf, bf, torchao));
  } else {
    out.push("grad_weight = input^T @ grad_output", KernelRole::lowp_gemm,
             gemm(k, m, n, f.grad_weight_a, f.grad_weight_b, torchao, sc));
  }
  training_cast_kernels_to(m, k, TensorRole::input, s.recipe, s.fuse_with_prev, torchao, out,
                           terms);
  training_cast_kernels_to(k, n, TensorRole::weight, s.recipe, false, torchao, out, terms);
  training_cast_kernels_to(m, n, TensorRole::grad_output, s.recipe, s.fuse_with_prev, torchao,
                           out, terms);
}

}  // namespace

template <class T>
void float8_linear_kernels(const LinearSpecT<T>& s, bool torchao, KernelSinkT<T>& out,
                           const CastTerms& terms) {
  linear_kernels_to(s, torchao, out, terms);  // virtual pushes
}

template void float8_linear_kernels<double>(const LinearSpec&, bool, KernelSink&,
                                            const CastTerms&);
template void float8_linear_kernels<Lanes>(const LinearSpecT<Lanes>&, bool, KernelSinkT<Lanes>&,
                                           const CastTerms&);

namespace {

// float8_linear_times on T = double or Lanes: each kernel's time added to its role's total as
// the formula emits it (per lane the same order, so the same bits).
template <class T>
LinearTimesT<T> times_by_role(const LinearSpecT<T>& s, const Rates& rates, bool torchao,
                              GemmMemo& memo) {
  if (!rates.eff.shape_aware) {  // plain model: only flops, bytes and launches are read
    PlainRoleTimes<T> acc(rates, memo);
    linear_kernels_to(s, torchao, acc, rates.eff.cast);
    return acc.t;
  }
  RoleTimes<T> acc(rates, memo);
  linear_kernels_to(s, torchao, acc, rates.eff.cast);
  return acc.t;
}

}  // namespace

LinearTimes float8_linear_times(const LinearSpec& s, const Rates& rates, bool torchao) {
  GemmMemo memo;
  return times_by_role(s, rates, torchao, memo);
}

LinearTimesT<Lanes> float8_linear_times(const LinearSpecT<Lanes>& s, const Rates& rates,
                                        bool torchao, GemmMemo& memo) {
  return times_by_role(s, rates, torchao, memo);
}

Estimate float8_cast_estimate(double rows, double cols, CastGranularity g, bool transpose,
                              const Rates& rates) {
  // Accumulates each kernel's estimate as the formula emits it.
  struct Sum final : KernelSink {
    const Rates& rates;
    Estimate total{};
    explicit Sum(const Rates& r) : rates(r) {}
    void push(const char*, KernelRole, const Cost& c) override { total += estimate(c, rates); }
  } acc(rates);
  float8_cast_kernels(rows, cols, g, transpose, rates.eff.cast, acc);
  return acc.total;
}

}  // namespace roofline
