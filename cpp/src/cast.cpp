#include "roofline/ops/cast.hpp"

#include "roofline/ops/float8_linear.hpp"

#include <stdexcept>
#include <string>

namespace roofline {
namespace {

constexpr double kBf16 = 2.0;
constexpr double kFp8 = 1.0;
constexpr double kFp4 = 0.5;
constexpr double kFp32 = 4.0;

template <class T>
CostT<T> traffic(const T& read, const T& written) {
  CostT<T> c;
  c.kind = KernelKind::memory;
  c.bytes_read = read;
  c.bytes_written = written;
  return c;
}

// The final reduction of a split tensor amax: it reads the partial maxima (at least two fp32)
// and writes the fp32 amax or scale. Few bytes, but a launch like any other, so it pays the
// streaming latency (a zero-byte cost would price it at 0 s).
template <class T>
CostT<T> amax_stage2_traffic() {
  return traffic<T>(T(2.0 * kFp32), T(kFp32));
}

// Bytes of e8m0/e4m3 scales for a dim0 x dim1 tensor blocked along dim1.
template <class T>
T block_scales(const T& dim0, const T& dim1, double block, bool torchao) {
  return dim0 * (torchao ? floor(dim1 / block) : ceil(dim1 / block));
}

[[noreturn]] void no_torchao_model(const char* what) {
  throw std::invalid_argument(std::string("torchao's roofline has no model for ") + what +
                              "; use efficiency='default' or 'peak' for this recipe");
}

// Element bytes of the low-precision payload a recipe writes.
double payload_bytes(Recipe r) { return recipe_is_fp4(r) ? kFp4 : kFp8; }

// Elements sharing one 1-byte scale (e8m0 / e4m3) in a recipe's casts (0: no block scales).
double scale_block(Recipe r) {
  if (r == Recipe::nvfp4 || r == Recipe::nvfp4_static || r == Recipe::nvfp4_no_global_scale)
    return 16.0;
  if (recipe_is_mx(r)) return 32.0;
  return 0.0;
}

template <class T>
void blockwise_training(const T& d0, const T& d1, TensorRole role, bool fuse, bool torchao,
                        KernelSinkT<T>& out) {
  const T n = d0 * d1;
  // fp32 scales: 1x128 blocks along dim1 (rows) or dim0 (the transposed copy), or 128x128
  // tiles; torchao charges numel / block_size (fractional), we count whole blocks.
  const T rows = torchao ? n / 128.0 : d0 * ceil(d1 / 128.0);
  const T cols = torchao ? n / 128.0 : d1 * ceil(d0 / 128.0);
  const T tiles = torchao ? n / (128.0 * 128.0) : ceil(d0 / 128.0) * ceil(d1 / 128.0);
  auto quant = [&](const char* name, bool fuse_read, const T& scales) {
    const T read = fuse_read ? T(0.0) : kBf16 * n;
    out.push(name, KernelRole::cast, traffic<T>(read, kFp8 * n + kFp32 * scales));
  };
  switch (role) {
    case TensorRole::input:
      quant("input quant 1x128 (lhs)", fuse, rows);
      quant("input quant 1x128 (rhs, for grad_weight)", false, cols);
      break;
    case TensorRole::weight:
      quant("weight quant 128x128 (transposed rhs)", false, tiles);
      quant("weight quant 128x128 (rhs, for grad_input)", false, tiles);
      break;
    case TensorRole::grad_output:
      quant("grad_output quant 1x128 (lhs)", fuse, rows);
      quant("grad_output quant 1x128 (transposed lhs, for grad_weight)", false, cols);
      break;
  }
}


// A streaming kernel whose access pattern reaches `fraction` of the streaming bandwidth.
template <class T>
CostT<T> at(const T& read, const T& written, double fraction) {
  CostT<T> c = traffic<T>(read, written);
  c.bandwidth_fraction = fraction;
  return c;
}

// An MXFP8 quantize (bf16 in; fp8 payload and e8m0 scales of 32-element blocks out): each
// block's amax and scale precede its writes, which on Blackwell holds TE's quantize_mxfp8 and
// torchao's MX casts to mxfp8_quantize_fraction of the streaming bandwidth (CastTerms; 0, and
// torchao's own conventions: the streaming rate).
template <class T>
CostT<T> mxfp8_quantize(const T& read, const T& written, const CastTerms& terms, bool torchao) {
  return at<T>(read, written, torchao ? 0.0 : terms.mxfp8_quantize_fraction);
}

// Transformer Engine's scale swizzle before a block-scaled GEMM (nvte_swizzle_scaling_factors,
// TE 2.x before GEMM-ready scales): one operand's e8m0 scales, `scales` bytes, read in the
// quantizer's row-major layout and written to a fresh buffer in cuBLASLt's 128x4 tiled layout.
template <class T>
void te_scale_swizzle(const char* name, const T& scales, KernelSinkT<T>& out) {
  out.push(name, KernelRole::cast, traffic<T>(scales, scales));
}

// Transformer Engine's DelayedScaling on sm90 (TE 1.x linear.py / layernorm_linear.py;
// TE 0.10 the same kernels): Hopper's fp8 GEMMs are TN-only, so each operand that a GEMM reads
// transposed needs its own transposed fp8 copy. fp8_cast_transpose_fused (cast_transpose.cu)
// reads the bf16 tensor once and writes the row-major and the transposed fp8 copies, scaling
// by the scale the previous steps' amax history gave and recording this call's amax in the
// same kernel (an atomic max per block): no amax pass before the cast. The activation (the
// forward GEMM's input, saved transposed for the wgrad GEMM) and grad_output (TE's
// grad_output_preprocess: fp8_cast_transpose_fused, or its bgrad variant that also reduces
// the bias gradient) each run one; its bf16 read fuses away when the caller says so. The
// weight runs one per call unless is_first_microbatch caches its fp8 copies for the step
// (delayed_te: Megatron-Core passes it, the cast runs once per optimizer step, not per call).
// TE's own CUDA kernels (vectorized loads, transposes through shared-memory tiles): priced at
// the streaming rate, as its other cast kernels on Hopper (CastTerms holds Inductor's rates).
template <class T>
void delayed_te_training(const T& d0, const T& d1, TensorRole role, Recipe r, bool fuse,
                         KernelSinkT<T>& out) {
  const T n = d0 * d1;
  if (role == TensorRole::weight) {
    if (r == Recipe::delayed_te) return;  // cached fp8 copies (is_first_microbatch)
    out.push("weight cast + transpose (fp8_cast_transpose_fused)", KernelRole::cast,
             traffic<T>(T(kBf16 * n), T(2.0 * kFp8 * n)));
    return;
  }
  out.push(role == TensorRole::input ? "input cast + transpose (fp8_cast_transpose_fused)"
                                     : "grad_output cast + transpose (fp8_cast_transpose_fused)",
           KernelRole::cast, traffic<T>(fuse ? T(0.0) : T(kBf16 * n), T(2.0 * kFp8 * n)));
}

// The compiled (Inductor) kernels of torchao's casts, shared by the training, inference and
// standalone cast formulas. Every byte count is the DRAM traffic of that kernel; the terms set
// the fraction of the streaming bandwidth its access pattern reaches.
template <class T>
struct Compiled {
  const CastTerms& t;
  KernelSinkT<T>& out;

  // Split amax reduction: blocks of the tensor (or of each column) write partial maxima, then
  // one small kernel reduces them and computes the scale (amax_stage2_traffic).
  void amax(const char* name, const T& n, bool fuse_read) const {
    out.push(name, KernelRole::cast,
             at<T>(fuse_read ? T(0.0) : kBf16 * n, T(0.0), t.amax_fraction));
    out.push("amax reduce (stage 2) + scale", KernelRole::cast, amax_stage2_traffic<T>());
  }
  // Scaled cast with one row-major fp8 output (streams at the full rate).
  void cast(const char* name, const T& n) const {
    out.push(name, KernelRole::cast, traffic<T>(T(kBf16 * n), T(kFp8 * n)));
  }
  // Scaled cast writing a transposed fp8 copy (tiles go through shared memory).
  void cast_t(const char* name, const T& n) const {
    out.push(name, KernelRole::cast, at<T>(T(kBf16 * n), T(kFp8 * n), t.transpose_fraction));
  }
  // One read, row-major and column-major fp8 copies (the copy the backward needs is saved).
  void cast_dual(const char* name, const T& n, bool fuse_read) const {
    out.push(name, KernelRole::cast,
             at<T>(fuse_read ? T(0.0) : kBf16 * n, T(2.0 * kFp8 * n), t.dual_fraction));
  }
  // Rowwise cast along dim 1 of a d0 x d1 tensor, fused with its row amax: a row longer than
  // kPersistentRowElements is reduced in a loop and read again by the cast; fp32 scale per row,
  // rounded down to a power of two. Fewer than 2 x SMs rows longer than kSplitRowElements:
  // Inductor splits the reduction, so the same bytes run as three launches (a partial row
  // amax reading the tensor, the amax's final reduction with the scale, a row-scaled cast
  // reading it again; the reduction moves only the partial maxima and scales). Lanes that do
  // not split get zero-byte pieces (the same times).
  void row(const char* name, const T& d0, const T& d1, bool fuse_read) const {
    const T n = d0 * d1;
    const T passes = select(d1 <= kPersistentRowElements, T(1.0), T(2.0));
    const T reads = fuse_read ? passes - 1.0 : passes;
    const T written = kFp8 * n + kFp32 * d0;
    const auto split = splits(d0, d1);
    if (!any(split)) {
      out.push(name, KernelRole::cast, at<T>(T(reads * kBf16 * n), written, t.row_fraction));
      return;
    }
    const T zero = 0.0;
    out.push("row amax (split reduction: partial max per row chunk)", KernelRole::cast,
             at<T>(T(select(split, reads - 1.0, reads) * kBf16 * n),
                   select(split, zero, written), t.row_fraction));
    // The final reduction reads each row's partial maxima (at least two) and writes its fp32
    // scale: few bytes, but a launch like any other, so it pays the streaming latency.
    out.push("row amax reduce (stage 2) + scale", KernelRole::cast,
             traffic<T>(select(split, T(2.0 * kFp32 * d0), zero),
                        select(split, T(kFp32 * d0), zero)));
    out.push("row-scaled cast (after a split amax)", KernelRole::cast,
             at<T>(select(split, T(kBf16 * n), zero), select(split, written, zero),
                   t.row_fraction));
  }
  // Inductor's split rule for a row reduction of d0 rows of d1 elements (per lane).
  bool splits(double d0, double d1) const {
    return t.sms > 0 && d0 < 2.0 * t.sms && d1 > kSplitRowElements;
  }
  LaneMask splits(const Lanes& d0, const Lanes& d1) const {
    const double rows = t.sms > 0 ? 2.0 * t.sms : 0.0;
    return (d0 < rows) & (d1 > kSplitRowElements);
  }
  // Rowwise cast along dim 0 (one scale per column), written transposed: a split column amax,
  // its final reduction, then a column-scaled cast whose reads stride across rows (at most
  // column_sm_bytes_per_s per SM: its loads in flight, not the HBM, set the rate).
  void column(const char* amax_name, const char* cast_name, const T& d0, const T& d1) const {
    const T n = d0 * d1;
    amax(amax_name, n, false);
    CostT<T> c = at<T>(T(kBf16 * n), T(kFp8 * n + kFp32 * d1), t.column_fraction);
    c.sm_bytes_per_s = t.column_sm_bytes_per_s;
    out.push(cast_name, KernelRole::cast, c);
  }
};

// Training casts as torch.compile generates them for torchao 0.17 (kernel names in
// shared/data/measurements: triton_red_fused_abs_max, triton_poi_fused_..._clone_..._t, ...).
template <class T>
void compiled_training(const T& d0, const T& d1, TensorRole role, Recipe r, bool fuse,
                       const Compiled<T>& k) {
  const T n = d0 * d1;
  const bool weight = role == TensorRole::weight;
  const bool input = role == TensorRole::input;
  switch (r) {
    case Recipe::tensorwise:
      if (weight) {
        k.amax("weight amax (partial max per block)", n, false);
        k.cast("weight cast (fwd layout)", n);
        k.cast_t("weight cast transposed (for grad_input)", n);
      } else {
        k.amax(input ? "input amax (partial max per block)"
                     : "grad_output amax (partial max per block)", n, fuse);
        k.cast_dual(input ? "input cast (row- and column-major)"
                          : "grad_output cast (row- and column-major)", n, false);
      }
      return;
    case Recipe::rowwise:
      k.row(weight ? "weight cast dim0 (row amax + cast)"
            : input ? "input cast dim0 (row amax + cast)"
                    : "grad_output cast dim0 (row amax + cast)",
            d0, d1, fuse && !weight);
      k.column(weight ? "weight column amax (partial)"
               : input ? "input column amax (partial)" : "grad_output column amax (partial)",
               weight ? "weight cast dim1 (column-scaled, transposed)"
               : input ? "input cast dim1 (column-scaled, transposed)"
                       : "grad_output cast dim1 (column-scaled, transposed)",
               d0, d1);
      // The backward graph also fills a one-element tensor of ones (triton_poi_fused_new_ones
      // in the H200 traces of the compiled rowwise step): one fp32 element written, one more
      // launch, which pays the streaming latency like any other.
      if (role == TensorRole::grad_output) {
        k.out.push("ones (one-element kernel of the backward graph)", KernelRole::cast,
                   traffic<T>(T(0.0), T(kFp32)));
      }
      return;
    default:  // rowwise_with_gw_hp
      k.row(weight ? "weight cast dim0 (row amax + cast)"
            : input ? "input cast dim0 (row amax + cast)"
                    : "grad_output cast dim0 (row amax + cast)",
            d0, d1, fuse && !weight);
      if (weight) {
        k.amax("weight amax (tensorwise, for grad_input)", n, false);
        k.cast_t("weight cast transposed (tensorwise, for grad_input)", n);
      }
      return;
  }
}

bool has_compiled_model(Recipe r) {
  return r == Recipe::tensorwise || r == Recipe::rowwise || r == Recipe::rowwise_with_gw_hp;
}

}  // namespace

void KernelList::push(const char* name, KernelRole role, const Cost& c) {
  if (size < static_cast<int>(items.size())) items[static_cast<std::size_t>(size++)] = {name, role, c};
}

bool recipe_is_fp4(Recipe r) noexcept {
  return r == Recipe::mxfp4_cutlass || r == Recipe::mxfp4 || r == Recipe::nvfp4 ||
         r == Recipe::nvfp4_static || r == Recipe::nvfp4_no_global_scale;
}

bool recipe_is_delayed_te(Recipe r) noexcept {
  return r == Recipe::delayed_te || r == Recipe::delayed_te_uncached;
}

bool recipe_is_mx(Recipe r) noexcept {
  switch (r) {
    case Recipe::mxfp8_cublas: case Recipe::mxfp8_cublas_rceil: case Recipe::mxfp8_emulated:
    case Recipe::mxfp8_cutlass: case Recipe::mxfp8_32x32_flexible_gemm_layout:
    case Recipe::mxfp8_32x32_weight: case Recipe::mxfp4_cutlass: case Recipe::mxfp4:
    case Recipe::mxfp8_te:
      return true;
    default:
      return false;
  }
}

template <class T, class Sink>
ROOFLINE_FLATTEN void training_cast_kernels_to(const T& d0, const T& d1, TensorRole role,
                                               Recipe r, bool fuse, bool torchao, Sink& out,
                                               const CastTerms& terms) {
  if (!torchao && terms.real_kernels() && has_compiled_model(r)) {
    compiled_training(d0, d1, role, r, fuse, Compiled<T>{terms, out});
    return;
  }
  const T n = d0 * d1;
  const bool act = role != TensorRole::weight;
  const double lowp = payload_bytes(r);
  // Bytes of 1-byte block scales a cast writes, whole blocks per row: blocked along dim1
  // (the dim0 layout) or along dim0 (the dim1 layout); 0 under torchao's training conventions.
  const double block = scale_block(r);
  const bool scaled = !torchao && block > 0;
  const T scales0 = scaled ? d0 * ceil(d1 / block) : T(0.0);
  const T scales1 = scaled ? d1 * ceil(d0 / block) : T(0.0);
  const T zero = 0.0;
  // A bf16 -> low-precision cast whose bf16 read may fuse into the producer (an MXFP8 one at
  // the rate of mxfp8_quantize).
  const bool mxfp8 = recipe_is_mx(r) && !recipe_is_fp4(r);
  auto cast = [&](const char* name, bool fuse_read, const T& scales) {
    const T read = fuse_read ? zero : T(kBf16 * n);
    out.push(name, KernelRole::cast,
             mxfp8 ? mxfp8_quantize<T>(read, T(lowp * n + scales), terms, torchao)
                   : traffic<T>(read, T(lowp * n + scales)));
  };
  // A split amax: the partial maxima, then their reduction (amax_stage2_traffic).
  auto amax = [&](const char* name, bool fuse_read) {
    out.push(name, KernelRole::cast, traffic<T>(fuse_read ? zero : kBf16 * n, zero));
    out.push("amax reduce (stage 2)", KernelRole::cast, amax_stage2_traffic<T>());
  };

  switch (r) {
    case Recipe::tensorwise:
      amax(role == TensorRole::weight  ? "weight amax"
           : role == TensorRole::input ? "input amax"
                                       : "grad_output amax",
           fuse);
      if (role == TensorRole::weight) {
        cast("weight cast (fwd layout)", false, 0.0);
        cast("weight cast (bwd layout)", false, 0.0);
      } else {
        // One kernel writes both the row-major and the column-major fp8 copies.
        out.push(role == TensorRole::input ? "input cast (row- and column-major)"
                                           : "grad_output cast (row- and column-major)",
                 KernelRole::cast, traffic<T>(kBf16 * n, 2.0 * kFp8 * n));
      }
      return;
    case Recipe::rowwise: {
      const T s0 = torchao ? T(0.0) : kFp32 * d0;  // one fp32 scale per row
      const T s1 = torchao ? T(0.0) : kFp32 * d1;  // one per column, for the transposed copy
      if (role == TensorRole::weight) {
        out.push("weight cast dim0", KernelRole::cast,
                 traffic<T>(fuse ? T(0.0) : kBf16 * n, kFp8 * n + s0));
        out.push("weight transpose (bf16)", KernelRole::cast, traffic<T>(kBf16 * n, kBf16 * n));
        out.push("weight cast dim1", KernelRole::cast, traffic<T>(kBf16 * n, kFp8 * n + s1));
      } else {
        out.push(role == TensorRole::input ? "input cast dim0 + transpose"
                                           : "grad_output cast dim0 + transpose",
                 KernelRole::cast,
                 traffic<T>(fuse ? T(0.0) : kBf16 * n, kFp8 * n + kBf16 * n + s0));
        out.push(role == TensorRole::input ? "input cast dim1" : "grad_output cast dim1",
                 KernelRole::cast, traffic<T>(kBf16 * n, kFp8 * n + s1));
      }
      return;
    }
    case Recipe::rowwise_with_gw_hp: {
      const T s0 = torchao ? T(0.0) : kFp32 * d0;
      if (act) {
        out.push(role == TensorRole::input ? "input cast dim0" : "grad_output cast dim0",
                 KernelRole::cast, traffic<T>(fuse ? T(0.0) : kBf16 * n, kFp8 * n + s0));
      } else {
        out.push("weight cast dim0", KernelRole::cast, traffic<T>(kBf16 * n, kFp8 * n + s0));
        out.push("weight scale reduce to tensorwise", KernelRole::cast, traffic<T>(0.0, 0.0));
        out.push("weight cast dim1 (tensorwise)", KernelRole::cast,
                 traffic<T>(kBf16 * n, kFp8 * n));
      }
      return;
    }
    case Recipe::mxfp8_32x32_flexible_gemm_layout:
      cast("cast to mxfp8 32x32 (one layout serves all GEMMs)", act && fuse, scales0);
      return;
    case Recipe::mxfp8_32x32_weight:
      if (act) {
        cast("cast to mxfp8 dim0", fuse, scales0);
        cast("cast to mxfp8 dim1", false, scales1);
      } else {
        cast("weight cast to mxfp8 32x32", false, scales0);
        out.push("weight mxfp8 dim0 -> dim1 (transpose)", KernelRole::cast,
                 traffic<T>(kFp8 * n + scales0, kFp8 * n + scales1));
      }
      return;
    case Recipe::mxfp8_cutlass:
    case Recipe::mxfp4:
      if (torchao) no_torchao_model(r == Recipe::mxfp4 ? "training recipe 'mxfp4' (torchao "
                                                           "calls it 'mxfp4_cutlass')"
                                                         : "training recipe 'mxfp8_cutlass'");
      [[fallthrough]];
    case Recipe::mxfp8_cublas:
    case Recipe::mxfp8_cublas_rceil:
    case Recipe::mxfp8_emulated:
    case Recipe::mxfp4_cutlass:
      cast("cast dim0", act && fuse, scales0);
      cast("cast dim1", false, scales1);
      return;
    case Recipe::nvfp4:
    case Recipe::nvfp4_static:
    case Recipe::nvfp4_no_global_scale:
      if (torchao) no_torchao_model("nvfp4 training");
      if (r == Recipe::nvfp4) amax("global amax (per-tensor scale)", act && fuse);
      cast("cast to nvfp4 dim0", act && fuse && r != Recipe::nvfp4, scales0);
      cast("cast to nvfp4 dim1", false, scales1);
      return;
    case Recipe::blockwise:
      blockwise_training(d0, d1, role, act && fuse, torchao, out);
      return;
    case Recipe::tensorwise_static:  // a calibrated scale serves inference only
      throw std::invalid_argument("recipe 'tensorwise_static' is an inference recipe "
                                  "(calibrated input scale), not a training one");
    case Recipe::tensorwise_te:
    case Recipe::tensorwise_te_sm90: {
      // Megatron-Bridge's FP8-CS recipe keeps fp8 weights (fp8_param_gather): the optimizer
      // step re-quantizes them, no weight cast runs per call (their per-step transpose on
      // sm90 is not priced per call either). On sm100 one row-major fp8 copy serves both
      // GEMMs that read it (TE's is_non_tn_fp8_gemm_supported: no transpose); on a GPU whose
      // fp8 GEMMs are TN-only (tensorwise_te_sm90; TE 2.9 pytorch/csrc/quantizer.cpp:
      // with_transpose = columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()) one
      // cast-transpose writes the row-major copy and the transposed one.
      const bool sm90 = r == Recipe::tensorwise_te_sm90;
      if (torchao)
        no_torchao_model(sm90 ? "training recipe 'tensorwise_te_sm90' (Transformer Engine)"
                              : "training recipe 'tensorwise_te' (Transformer Engine)");
      if (!act) return;
      // nvte_compute_amax (a read of the bf16 tensor; fused into the norm kernel when the
      // caller says so: TE's FUSED_NORM_AMAX_FP8), the scale from the amax, then the cast.
      const bool in = role == TensorRole::input;
      amax(in ? "input amax" : "grad_output amax", fuse);
      if (sm90)
        out.push(in ? "input cast + transpose (two fp8 copies)"
                    : "grad_output cast + transpose (two fp8 copies)",
                 KernelRole::cast, traffic<T>(kBf16 * n, 2.0 * kFp8 * n));
      else
        out.push(in ? "input cast (one fp8 copy)" : "grad_output cast (one fp8 copy)",
                 KernelRole::cast, traffic<T>(kBf16 * n, kFp8 * n));
      return;
    }
    case Recipe::blockwise_te: {
      if (torchao) no_torchao_model("training recipe 'blockwise_te' (Transformer Engine)");
      // Float8BlockQuantizer (TE 2.9 pytorch/csrc/quantizer.cpp, nvte_quantize_v2 ->
      // quantize_transpose_vector_blockwise): one kernel reads the bf16 tensor and writes the
      // 1x128-scaled fp8 rows and the transposed copy with its own 1x128 scales, fp32 each. TE's
      // norm kernels do not emit it (normalization.cpp: UNFUSED for block quantizers), so the
      // read is never fused. Weights (128x128 blocks): quantized once per step
      // (is_first_microbatch caches the copies; param_refresh_kernels), none per call.
      if (!act) return;
      const T scales = d0 * ceil(d1 / 128.0) + d1 * ceil(d0 / 128.0);
      out.push(role == TensorRole::input ? "input quantize 1x128 (row-wise + transposed)"
                                         : "grad_output quantize 1x128 (row-wise + transposed)",
               KernelRole::cast, traffic<T>(kBf16 * n, 2.0 * kFp8 * n + kFp32 * scales));
      return;
    }
    case Recipe::delayed_te:
    case Recipe::delayed_te_uncached:
      if (torchao) no_torchao_model("training recipe 'delayed_te' (Transformer Engine)");
      delayed_te_training(d0, d1, role, r, fuse, out);
      return;
    case Recipe::mxfp8_te: {
      if (torchao) no_torchao_model("training recipe 'mxfp8_te' (Transformer Engine)");
      // quantize_mxfp8 (cast_mxfp8_2D_kernel with rowwise and columnwise scaling): one read
      // of the bf16 tensor, the 1x32-scaled copy for the GEMM that reduces along dim1 and the
      // 32x1-scaled copy for the GEMM that reduces along dim0, each with its e8m0 scales.
      // TE's norm kernels do not emit MXFP8 (NVTE_NORM_FWD_USE_CUDNN unset): the read is
      // only fused when the caller says so. Megatron-Bridge's MXFP8 recipe keeps MXFP8 weights
      // (fp8_param_gather), quantized once per optimizer step, not per call.
      const char* q = role == TensorRole::input ? "input quantize mxfp8 (row- and column-wise)"
                                                : "grad_output quantize mxfp8 (row- and "
                                                  "column-wise)";
      if (act) {  // fp8 (MXFP8) weights, re-quantized by the optimizer step (fp8_param_gather)
        out.push(q, KernelRole::cast,
                 mxfp8_quantize<T>(fuse ? zero : T(kBf16 * n),
                                   T(2.0 * kFp8 * n + scales0 + scales1), terms, false));
      }
      // Each copy feeds one GEMM, which swizzles its scales first (the weight, k x n: its
      // dim1-blocked scales feed grad_input, its dim0-blocked ones the forward GEMM).
      te_scale_swizzle(role == TensorRole::weight  ? "weight scale swizzle (dgrad GEMM)"
                       : role == TensorRole::input ? "input scale swizzle (fwd GEMM)"
                                                   : "grad_output scale swizzle (dgrad GEMM)",
                       scales0, out);
      te_scale_swizzle(role == TensorRole::weight  ? "weight scale swizzle (fwd GEMM)"
                       : role == TensorRole::input ? "input scale swizzle (wgrad GEMM)"
                                                   : "grad_output scale swizzle (wgrad GEMM)",
                       scales1, out);
      return;
    }
  }
}

template <class T, class Sink>
ROOFLINE_FLATTEN void inference_cast_kernels_to(const T& d0, const T& d1, Recipe r, bool fuse,
                                                bool torchao, Sink& out,
                                                const CastTerms& terms) {
  const T n = d0 * d1;
  if (!torchao && terms.real_kernels() && has_compiled_model(r)) {
    const Compiled<T> k{terms, out};
    if (r == Recipe::tensorwise) {
      k.amax("input amax (partial max per block)", n, fuse);
      k.cast("input cast", n);
    } else {
      k.row("input cast (row amax + cast)", d0, d1, fuse);
    }
    return;
  }
  if (torchao && fuse) no_torchao_model("fused inference casts (fuse_with_prev=True)");
  const T read = fuse ? T(0.0) : kBf16 * n;
  switch (r) {
    case Recipe::tensorwise:
      out.push("input amax", KernelRole::cast, traffic<T>(read, 0.0));
      out.push("input cast", KernelRole::cast, traffic<T>(kBf16 * n, kFp8 * n));
      return;
    case Recipe::rowwise_with_gw_hp:
      if (torchao) no_torchao_model("inference recipe 'rowwise_with_gw_hp'");
      [[fallthrough]];
    case Recipe::rowwise:
      out.push("input cast (rowwise)", KernelRole::cast,
               traffic<T>(read, kFp8 * n + kFp32 * d0));
      return;
    case Recipe::mxfp4_cutlass:
      // torchao's inference overhead only knows the spelling 'mxfp4' (its bug, kept for parity).
      if (torchao) no_torchao_model("inference recipe 'mxfp4_cutlass' (torchao expects 'mxfp4')");
      [[fallthrough]];
    case Recipe::mxfp4:
      out.push("input cast to mxfp4", KernelRole::cast,
               traffic<T>(read, kFp4 * n + kFp8 * block_scales(d0, d1, 32.0, torchao)));
      return;
    case Recipe::nvfp4:
      if (torchao) {
        // torchao sums the amax pass and the cast into a single kernel time.
        out.push("input amax + cast to nvfp4", KernelRole::cast,
                 traffic<T>(2.0 * kBf16 * n, kFp4 * n + kFp8 * block_scales(d0, d1, 16.0, true)));
      } else {
        out.push("input amax", KernelRole::cast, traffic<T>(read, 0.0));
        out.push("input cast to nvfp4", KernelRole::cast,
                 traffic<T>(kBf16 * n, kFp4 * n + kFp8 * block_scales(d0, d1, 16.0, false)));
      }
      return;
    case Recipe::nvfp4_static:
    case Recipe::nvfp4_no_global_scale:
      out.push("input cast to nvfp4", KernelRole::cast,
               traffic<T>(read, kFp4 * n + kFp8 * block_scales(d0, d1, 16.0, torchao)));
      return;
    case Recipe::blockwise:
    case Recipe::blockwise_te:
      if (torchao) no_torchao_model("blockwise inference");
      out.push("input quant 1x128", KernelRole::cast,
               traffic<T>(read, kFp8 * n + kFp32 * block_scales(d0, d1, 128.0, false)));
      return;
    case Recipe::tensorwise_static:
      // A calibrated per-tensor scale: one kernel reads bf16 and writes fp8 (TensorRT's
      // IQuantizeLayer of TensorRT-LLM's FP8Linear); no amax pass, no scale computation.
      if (torchao) no_torchao_model("inference recipe 'tensorwise_static' (TensorRT-LLM)");
      out.push("input quantize (static scale)", KernelRole::cast, traffic<T>(read, kFp8 * n));
      return;
    case Recipe::tensorwise_te:
    case Recipe::tensorwise_te_sm90:
      if (torchao) no_torchao_model("inference recipe 'tensorwise_te' (Transformer Engine)");
      out.push("input amax", KernelRole::cast, traffic<T>(read, 0.0));
      out.push("input cast (one fp8 copy)", KernelRole::cast, traffic<T>(kBf16 * n, kFp8 * n));
      return;
    case Recipe::delayed_te:
    case Recipe::delayed_te_uncached:
      // cast_to_fp8 with the scale of the amax history (the kernel records this call's amax):
      // one read, one row-major fp8 copy, no amax pass.
      if (torchao) no_torchao_model("inference recipe 'delayed_te' (Transformer Engine)");
      out.push("input cast (fp8, amax in the kernel)", KernelRole::cast,
               traffic<T>(read, T(kFp8 * n)));
      return;
    case Recipe::mxfp8_te: {
      if (torchao) no_torchao_model("inference recipe 'mxfp8_te' (Transformer Engine)");
      // rowwise-only quantize_mxfp8, then the swizzle of the input's scales for the GEMM
      // (the weight's swizzle: te_weight_scale_swizzle).
      const T scales = block_scales(d0, d1, 32.0, false);
      out.push("input quantize mxfp8 (rowwise)", KernelRole::cast,
               mxfp8_quantize<T>(read, T(kFp8 * n + kFp8 * scales), terms, false));
      te_scale_swizzle("input scale swizzle (GEMM)", T(kFp8 * scales), out);
      return;
    }
    default:  // every other mxfp8 variant: one cast with e8m0 scales along dim1
      out.push("input cast to mxfp8", KernelRole::cast,
               mxfp8_quantize<T>(read, T(kFp8 * n + kFp8 * block_scales(d0, d1, 32.0, torchao)),
                                 terms, torchao));
      return;
  }
}

template <class T>
void te_weight_scale_swizzle(const T& k, const T& n, Recipe r, bool torchao,
                             KernelSinkT<T>& out) {
  if (r != Recipe::mxfp8_te || torchao) return;
  // F.linear's weight is stored n x k; its 1x32 scales run along k.
  te_scale_swizzle("weight scale swizzle (GEMM)", T(kFp8 * n * ceil(k / 32.0)), out);
}

template void te_weight_scale_swizzle<double>(const double&, const double&, Recipe, bool,
                                              KernelSink&);
template void te_weight_scale_swizzle<Lanes>(const Lanes&, const Lanes&, Recipe, bool,
                                             KernelSinkT<Lanes>&);
template <class T>
void param_refresh_kernels(const T& elements, Recipe r, KernelSinkT<T>& out,
                           const CastTerms& terms) {
  if (r == Recipe::blockwise_te) {
    // Float8BlockScaling's weights (128x128 blocks): TE quantizes each weight in its first
    // micro-batch of the step (Megatron-Core's is_first_microbatch; the later ones reuse the
    // copies): quantize_transpose_square_blockwise reads the bf16 weight once and writes the
    // fp8 rows and the transposed copy, one fp32 scale per 128x128 tile each.
    const T n = elements;
    out.push("weight quantize 128x128 (row-wise + transposed, first micro-batch)",
             KernelRole::cast,
             traffic<T>(T(kBf16 * n), T(2.0 * kFp8 * n + 2.0 * kFp32 * ceil(n / 16384.0))));
    return;
  }
  if (r != Recipe::mxfp8_te) return;
  // Megatron-Core (DistributedDataParallel.start_param_sync / finish_param_sync with
  // reuse_grad_buf_for_mxfp8_param_ag): param.data.copy_(bf16 slice) runs TE's MXFP8
  // quantize on every gathered weight (the param keeps the row- and the column-wise copy,
  // one e8m0 byte per 32 elements each), then bucket.param_data.zero_() clears the bf16
  // slice of the gradient buffer it borrowed.
  const T n = elements;
  const T scales = ceil(n / 32.0);
  out.push("param copy_: bf16 -> MXFP8 (row- and column-wise)", KernelRole::cast,
           mxfp8_quantize<T>(T(kBf16 * n), T(2.0 * kFp8 * n + 2.0 * scales), terms, false));
  out.push("param buffer zero_ (shared with the gradients)", KernelRole::cast,
           traffic<T>(T(0.0), T(kBf16 * n)));
}

template void param_refresh_kernels<double>(const double&, Recipe, KernelSink&,
                                            const CastTerms&);

template <class T>
void grouped_quantize_kernels(const T& rows, const T& cols, Recipe r, KernelSinkT<T>& out,
                              const CastTerms& terms) {
  if (r != Recipe::mxfp8_te) {
    training_cast_kernels_to(rows, cols, TensorRole::input, r, false, false, out, terms);
    return;
  }
  // TE 2.9 split_quantize (pytorch/csrc/extensions/cast.cpp): MXFP8 outputs are allocated in
  // bulk, then quantized one tensor at a time (multi_tensor_quantize_impl has a fused kernel
  // for delayed scaling only): the quantize_mxfp8 of the dense path, per expert.
  const T n = rows * cols;
  const T scales = rows * ceil(cols / 32.0) + cols * ceil(rows / 32.0);
  out.push("expert quantize mxfp8 (row- and column-wise)", KernelRole::cast,
           mxfp8_quantize<T>(T(kBf16 * n), T(2.0 * kFp8 * n + scales), terms, false));
}

template void grouped_quantize_kernels<double>(const double&, const double&, Recipe,
                                               KernelSink&, const CastTerms&);

double gathered_weight_bytes(Recipe r, double stored_bytes) noexcept {
  return r == Recipe::mxfp8_te ? kBf16 : stored_bytes;
}

template <class T>
void training_cast_kernels(const T& d0, const T& d1, TensorRole role, Recipe r, bool fuse,
                           bool torchao, KernelSinkT<T>& out, const CastTerms& terms) {
  training_cast_kernels_to(d0, d1, role, r, fuse, torchao, out, terms);
}

template <class T>
void inference_cast_kernels(const T& d0, const T& d1, Recipe r, bool fuse, bool torchao,
                            KernelSinkT<T>& out, const CastTerms& terms) {
  inference_cast_kernels_to(d0, d1, r, fuse, torchao, out, terms);
}

// The same formulas into any sink (virtual pushes) and into RoleTimes (float8_linear_times:
// its push is final and inline).
template void training_cast_kernels_to<double, KernelSink>(
    const double&, const double&, TensorRole, Recipe, bool, bool, KernelSink&, const CastTerms&);
template void training_cast_kernels_to<Lanes, KernelSinkT<Lanes>>(
    const Lanes&, const Lanes&, TensorRole, Recipe, bool, bool, KernelSinkT<Lanes>&,
    const CastTerms&);
template void inference_cast_kernels_to<double, KernelSink>(
    const double&, const double&, Recipe, bool, bool, KernelSink&, const CastTerms&);
template void inference_cast_kernels_to<Lanes, KernelSinkT<Lanes>>(
    const Lanes&, const Lanes&, Recipe, bool, bool, KernelSinkT<Lanes>&, const CastTerms&);
template void training_cast_kernels_to<double, PlainRoleTimes<double>>(
    const double&, const double&, TensorRole, Recipe, bool, bool, PlainRoleTimes<double>&,
    const CastTerms&);
template void training_cast_kernels_to<Lanes, PlainRoleTimes<Lanes>>(
    const Lanes&, const Lanes&, TensorRole, Recipe, bool, bool, PlainRoleTimes<Lanes>&,
    const CastTerms&);
template void inference_cast_kernels_to<double, PlainRoleTimes<double>>(
    const double&, const double&, Recipe, bool, bool, PlainRoleTimes<double>&,
    const CastTerms&);
template void inference_cast_kernels_to<Lanes, PlainRoleTimes<Lanes>>(
    const Lanes&, const Lanes&, Recipe, bool, bool, PlainRoleTimes<Lanes>&, const CastTerms&);
template void training_cast_kernels_to<double, RoleTimes<double>>(
    const double&, const double&, TensorRole, Recipe, bool, bool, RoleTimes<double>&,
    const CastTerms&);
template void training_cast_kernels_to<Lanes, RoleTimes<Lanes>>(
    const Lanes&, const Lanes&, TensorRole, Recipe, bool, bool, RoleTimes<Lanes>&,
    const CastTerms&);
template void inference_cast_kernels_to<double, RoleTimes<double>>(
    const double&, const double&, Recipe, bool, bool, RoleTimes<double>&, const CastTerms&);
template void inference_cast_kernels_to<Lanes, RoleTimes<Lanes>>(
    const Lanes&, const Lanes&, Recipe, bool, bool, RoleTimes<Lanes>&, const CastTerms&);
template void training_cast_kernels<double>(const double&, const double&, TensorRole, Recipe,
                                            bool, bool, KernelSink&, const CastTerms&);
template void training_cast_kernels<Lanes>(const Lanes&, const Lanes&, TensorRole, Recipe, bool,
                                           bool, KernelSinkT<Lanes>&, const CastTerms&);
template void inference_cast_kernels<double>(const double&, const double&, Recipe, bool, bool,
                                             KernelSink&, const CastTerms&);
template void inference_cast_kernels<Lanes>(const Lanes&, const Lanes&, Recipe, bool, bool,
                                            KernelSinkT<Lanes>&, const CastTerms&);

void float8_cast_kernels(double rows, double cols, CastGranularity g, bool transpose,
                         const CastTerms& terms, KernelSink& out) {
  const double n = rows * cols;
  const Compiled<double> k{terms, out};
  if (g == CastGranularity::tensorwise) {
    k.amax("amax (partial max per block)", n, false);
    if (transpose) {
      k.cast_t("cast (transposed)", n);
    } else {
      k.cast("cast", n);
    }
    return;
  }
  if (!terms.real_kernels()) {  // idealized: one pass, one fp32 scale per row (column)
    out.push(transpose ? "cast rowwise (transposed)" : "cast rowwise", KernelRole::cast,
             traffic(kBf16 * n, kFp8 * n + kFp32 * (transpose ? cols : rows)));
    return;
  }
  if (transpose) {
    k.column("column amax (partial)", "cast (column-scaled, transposed)", rows, cols);
  } else {
    k.row("cast rowwise (row amax + cast)", rows, cols, false);
  }
}

}  // namespace roofline
