#pragma once
#include <array>
#include <cstdint>

#include "roofline/cost.hpp"
#include "roofline/lanes.hpp"
#include "roofline/terms/cast.hpp"

namespace roofline {

/// Low-precision training / inference recipes for a linear layer (torchao's names).
enum class Recipe : std::uint8_t {
  tensorwise,
  rowwise,
  rowwise_with_gw_hp,
  mxfp8_cublas,
  mxfp8_cublas_rceil,
  mxfp8_emulated,
  mxfp8_cutlass,
  mxfp8_32x32_flexible_gemm_layout,
  mxfp8_32x32_weight,
  mxfp4_cutlass,
  mxfp4,              ///< torchao's inference spelling of mxfp4 (training: same as mxfp4_cutlass)
  nvfp4,              ///< nvfp4 with a dynamic per-tensor global scale
  nvfp4_static,       ///< nvfp4 with a calibrated (static) global scale
  nvfp4_no_global_scale,
  blockwise,          ///< DeepSeek-style fp8: 1x128 activation scales, 128x128 weight scales
  tensorwise_te,      ///< Transformer Engine's Float8CurrentScaling as Megatron-Core runs it on
                      ///< sm100 / sm103 (B200, GB200, B300, GB300), whose fp8 GEMMs take any
                      ///< operand layout: amax + one fp8 copy per activation; fp8 weights
  mxfp8_te,           ///< Transformer Engine's MXFP8BlockScaling (Megatron-Core, TE 2.x before
                      ///< GEMM-ready scales): one quantize kernel writes both layouts, and every
                      ///< GEMM swizzles each operand's e8m0 scales into cuBLASLt's layout first
  tensorwise_static,  ///< inference only: fp8 weights and a calibrated (static) per-tensor input
                      ///< scale (TensorRT-LLM's FP8 Q/DQ): one quantize kernel, no amax pass
  delayed_te,         ///< Transformer Engine's DelayedScaling on sm90 (TN-only fp8 GEMMs) as
                      ///< Megatron-Core runs it: one cast-transpose per activation (amax in the
                      ///< kernel, scale from the history); fp8 weight copies cached per step
  delayed_te_uncached, ///< the same with the weight's cast-transpose in every call (TE modules
                       ///< called without is_first_microbatch: llm-foundry's fc_type te)
  blockwise_te,        ///< Transformer Engine's Float8BlockScaling on sm90 as Megatron-Core runs
                       ///< it: one kernel per activation writes both 1x128-scaled fp8 layouts
                       ///< (the second transposed); weight copies cached per step
  tensorwise_te_sm90   ///< Float8CurrentScaling on sm89 / sm90 (TN-only fp8 GEMMs): amax, then
                       ///< one cast-transpose writing both fp8 copies; fp8 weights
};

/// True for Transformer Engine's DelayedScaling recipes (delayed_te, delayed_te_uncached).
bool recipe_is_delayed_te(Recipe r) noexcept;

/// Which operand of the linear a cast prepares.
enum class TensorRole : std::uint8_t { input, weight, grad_output };

/// Whether a kernel belongs to the bf16 baseline, the low-precision GEMMs or the cast overhead.
enum class KernelRole : std::uint8_t { bf16_gemm, lowp_gemm, cast };

/// One kernel of a float8 linear: a static label, its role and its cost.
struct NamedCost {
  const char* name = "";              ///< short label, e.g. "input amax"
  KernelRole role = KernelRole::cast;  ///< what the kernel is for
  Cost cost{};                        ///< its work
};

/// Receives the kernels a formula emits, one at a time (no allocation in sweeps); T is the
/// number type of their costs (double, or Lanes: the same kernel of eight shapes).
template <class T>
class KernelSinkT {
 public:
  virtual ~KernelSinkT() = default;
  /// Takes one kernel.
  virtual void push(const char* name, KernelRole role, const CostT<T>& c) = 0;
};

/// Receives the kernels of one shape.
using KernelSink = KernelSinkT<double>;

/// A fixed-capacity list of kernels, for callers that want the detail.
struct KernelList final : KernelSink {
  std::array<NamedCost, 24> items{};  ///< storage
  int size = 0;                       ///< kernels in use

  /// Appends a kernel (ignored beyond capacity, which no recipe reaches).
  void push(const char* name, KernelRole role, const Cost& c) override;
};

/// True for recipes whose GEMM inputs are fp4 (mxfp4*, nvfp4*).
bool recipe_is_fp4(Recipe r) noexcept;

/// True for MX recipes (block-32 e8m0 scales).
bool recipe_is_mx(Recipe r) noexcept;

/// Appends, for recipe mxfp8_te in inference, the swizzle of the k x n weight's e8m0 scales
/// that Transformer Engine runs before each GEMM (nothing for other recipes or torchao).
template <class T>
void te_weight_scale_swizzle(const T& k, const T& n, Recipe recipe, bool torchao_conventions,
                             KernelSinkT<T>& out);

/// Appends the kernels one rank runs once per optimizer step to refresh its low-precision
/// copy of the linear weights, `elements` of them, after the distributed optimizer's
/// all-gather (both weight dims multiples of 32: whole scale blocks). mxfp8_te (Megatron-Core
/// with fp8_param_gather, whose MXFP8 params need reuse_grad_buf_for_mxfp8_param_ag): each
/// param's copy_ from the gathered bf16 buffer quantizes it to MXFP8 (both layouts, e8m0
/// scales), then zero_ clears that bf16 buffer, shared with the gradients. blockwise_te: TE's
/// first-micro-batch quantize of each weight (one read, both 128x128-scaled fp8 layouts,
/// quantize_transpose_square_blockwise), whether or not the params are fp8. Nothing for other
/// recipes (their optimizer writes each rank's fp8 shard, which is what is gathered).
template <class T>
void param_refresh_kernels(const T& elements, Recipe recipe, KernelSinkT<T>& out,
                           const CastTerms& terms = CastTerms{});

/// Appends the kernels Transformer Engine's split_quantize runs on one expert's rows x cols
/// bf16 input (or output gradient) of a training GroupedLinear: one quantize per expert, both
/// layouts for mxfp8_te (the grouped GEMM call swizzles every expert's scales in one
/// multi-tensor launch, not here); other recipes as training_cast_kernels' activation casts.
template <class T>
void grouped_quantize_kernels(const T& rows, const T& cols, Recipe recipe, KernelSinkT<T>& out,
                              const CastTerms& terms = CastTerms{});

/// Bytes per element the distributed optimizer all-gathers for a linear weight stored in
/// `stored_bytes` per element under `recipe`: bf16 (2) for mxfp8_te (Megatron-Core gathers the
/// bf16 params into the shared gradient buffer, reuse_grad_buf_for_mxfp8_param_ag, and
/// quantizes after: param_refresh_kernels), else the stored bytes (an fp8 shard is gathered).
double gathered_weight_bytes(Recipe recipe, double stored_bytes) noexcept;

/// Appends the cast kernels that turn one bf16 operand of a training linear into its
/// low-precision forms (forward and backward layouts). Throws std::invalid_argument when
/// torchao_conventions is set and torchao has no model for the recipe/role. With real
/// cast terms (and not torchao_conventions), tensorwise / rowwise / rowwise_with_gw_hp emit
/// the kernels torch.compile generates for torchao instead of the idealized list.
/// (T = double or Lanes: each lane's kernels bit for bit those of its shape.)
template <class T>
void training_cast_kernels(const T& dim0, const T& dim1, TensorRole role, Recipe recipe,
                           bool fuse_with_prev, bool torchao_conventions, KernelSinkT<T>& out,
                           const CastTerms& terms = CastTerms{});

/// Appends the cast kernels of an inference linear (the activation only; weights are
/// pre-quantized). Throws std::invalid_argument for recipes torchao does not know when
/// torchao_conventions is set. Real cast terms select the compiled kernels (as above).
/// (T = double or Lanes, as above.)
template <class T>
void inference_cast_kernels(const T& dim0, const T& dim1, Recipe recipe, bool fuse_with_prev,
                            bool torchao_conventions, KernelSinkT<T>& out,
                            const CastTerms& terms = CastTerms{});

/// training_cast_kernels() into a sink of static type Sink (a final class whose push the
/// formulas then call directly: float8_linear_times' RoleTimes, instantiated in cast.cpp).
template <class T, class Sink>
void training_cast_kernels_to(const T& dim0, const T& dim1, TensorRole role, Recipe recipe,
                              bool fuse_with_prev, bool torchao_conventions, Sink& out,
                              const CastTerms& terms);

/// inference_cast_kernels() into a sink of static type Sink (as above).
template <class T, class Sink>
void inference_cast_kernels_to(const T& dim0, const T& dim1, Recipe recipe, bool fuse_with_prev,
                               bool torchao_conventions, Sink& out, const CastTerms& terms);

/// The *_to formulas into base-class sinks (instantiated in cast.cpp).
extern template void training_cast_kernels_to<double, KernelSink>(
    const double&, const double&, TensorRole, Recipe, bool, bool, KernelSink&, const CastTerms&);
extern template void training_cast_kernels_to<Lanes, KernelSinkT<Lanes>>(
    const Lanes&, const Lanes&, TensorRole, Recipe, bool, bool, KernelSinkT<Lanes>&,
    const CastTerms&);
extern template void inference_cast_kernels_to<double, KernelSink>(
    const double&, const double&, Recipe, bool, bool, KernelSink&, const CastTerms&);
extern template void inference_cast_kernels_to<Lanes, KernelSinkT<Lanes>>(
    const Lanes&, const Lanes&, Recipe, bool, bool, KernelSinkT<Lanes>&, const CastTerms&);

/// grouped_quantize_kernels() of one expert (instantiated in cast.cpp).
extern template void grouped_quantize_kernels<double>(const double&, const double&, Recipe,
                                                      KernelSink&, const CastTerms&);

/// param_refresh_kernels() of one weight set (instantiated in cast.cpp).
extern template void param_refresh_kernels<double>(const double&, Recipe, KernelSink&,
                                                   const CastTerms&);

/// training_cast_kernels() of one shape (instantiated in cast.cpp).
extern template void training_cast_kernels<double>(const double&, const double&, TensorRole,
                                                   Recipe, bool, bool, KernelSink&,
                                                   const CastTerms&);
/// training_cast_kernels() of eight shapes (instantiated in cast.cpp).
extern template void training_cast_kernels<Lanes>(const Lanes&, const Lanes&, TensorRole,
                                                  Recipe, bool, bool, KernelSinkT<Lanes>&,
                                                  const CastTerms&);
/// inference_cast_kernels() of one shape (instantiated in cast.cpp).
extern template void inference_cast_kernels<double>(const double&, const double&, Recipe,
                                                    bool, bool, KernelSink&, const CastTerms&);
/// inference_cast_kernels() of eight shapes (instantiated in cast.cpp).
extern template void inference_cast_kernels<Lanes>(const Lanes&, const Lanes&, Recipe, bool,
                                                   bool, KernelSinkT<Lanes>&,
                                                   const CastTerms&);

/// Scale granularity of a standalone bf16 -> float8 cast.
enum class CastGranularity : std::uint8_t {
  tensorwise,  ///< one fp32 scale for the tensor (amax over every element)
  rowwise      ///< one fp32 scale per row (per column when transposed), power-of-two rounded
};

/// Rows up to which Inductor keeps a row in registers (a persistent reduction reads it once);
/// longer rows are reduced in a loop and read again by the cast.
inline constexpr double kPersistentRowElements = 1024.0;

/// Rows longer than this are split by Inductor when there are fewer than 2 x SMs of them
/// (torch/_inductor/ir.py, Reduction.num_splits: inner_reduction_splits): the row amax runs as
/// a partial max over row chunks, a kernel finishing it with the scale, then a pointwise cast.
inline constexpr double kSplitRowElements = 8192.0;

/// Appends the kernels of one compiled bf16 -> e4m3 cast of a rows x cols tensor (amax, scale,
/// cast), as torchao's compiled code runs it. `transpose` writes the column-major copy (and, for
/// rowwise, scales per column). Zero terms give the idealized kernels.
void float8_cast_kernels(double rows, double cols, CastGranularity granularity, bool transpose,
                         const CastTerms& terms, KernelSink& out);

}  // namespace roofline
