#pragma once

namespace roofline {

/// Terms of torchao's float8 cast kernels as torch.compile (Inductor) generates them: the
/// fraction of the streaming bandwidth each access pattern reaches. All zero = the idealized
/// kernel lists (one pass per cast at full streaming bandwidth), as before these terms existed.
struct CastTerms {
  double amax_fraction = 0;      ///< split amax reduction (partial max per block of a tensor or column)
  double transpose_fraction = 0; ///< cast writing one transposed (column-major) fp8 copy
  double dual_fraction = 0;      ///< cast writing row-major and column-major fp8 copies from one read
  double row_fraction = 0;       ///< rowwise cast fused with its row amax (looped rows read twice)
  double column_fraction = 0;    ///< rowwise cast along dim 1: column-scaled, transposed output
  double column_sm_bytes_per_s = 0; ///< that cast's DRAM rate per SM (its strided loads, not the
                                    ///< HBM, bound it: the same on every GPU with as many SMs)
  double mxfp8_quantize_fraction = 0;  ///< MXFP8 quantize (1x32 / 32x1 blocks, e8m0 scales): its
                                       ///< per-block amax and scale before the write (0: full rate)
  double sms = 0;  ///< the GPU's SMs, for Inductor's split-reduction rule (0: never split a row)

  /// True when the real (compiled) kernel lists replace the idealized ones.
  bool real_kernels() const noexcept { return amax_fraction > 0; }
};

}  // namespace roofline
