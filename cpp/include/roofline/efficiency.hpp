#pragma once

#include "roofline/terms/attention.hpp"
#include "roofline/terms/cast.hpp"
#include "roofline/terms/gemm.hpp"
#include "roofline/terms/host.hpp"
#include "roofline/terms/row_ops.hpp"

namespace roofline {

/// How far below the datasheet a kernel runs: the knobs every preset sets.
struct Efficiency {
  double compute_fraction = 1.0;   ///< achievable fraction of the dense peak FLOP/s
  double memory_fraction = 1.0;    ///< achievable fraction of the DRAM bandwidth
  double kernel_floor_s = 0.0;     ///< minimum time of one kernel (launch / latency floor)
  bool torchao_conventions = false;  ///< count bytes exactly as torchao's roofline_utils does
  bool shape_aware = false;        ///< tile/wave quantization, latency and partial overlap
  double gemm_latency_s = 0.0;     ///< shape-aware: fixed time of a GEMM (launch, prologue, tail)
  double memory_latency_s = 0.0;   ///< shape-aware: fixed time of a streaming kernel
  double overlap_p = 0.0;          ///< shape-aware: p-norm exponent combining compute and memory
  double sm_bytes_per_s = 0.0;     ///< shape-aware: DRAM bandwidth one busy SM can sustain
  double attention_fraction = 0.0;  ///< shape-aware: flash prefill/training rate vs GEMM (0 = 1)
  double decode_fraction = 0.0;     ///< shape-aware: flash decode (split-KV) rate vs GEMM (0 = 1)
  double attention_softmax_flops = 0.0;  ///< shape-aware: exp/softmax cost per score, in FLOPs
  double attention_tile_overhead = 0.0;  ///< shape-aware: fixed cost of a work unit, in KV tiles

  // Implementation-aware terms: what PyTorch actually runs, per area (all zero = idealized).

  GemmTerms gemm{};            ///< cuBLAS and grouped GEMMs

  AttentionTerms attention{};  ///< SDPA backends

  RowOpTerms row_ops{};        ///< norms, softmax, cross-entropy, elementwise per backend

  CastTerms cast{};            ///< torchao's compiled float8 casts

  HostTerms host{};            ///< launch overhead (eager, CUDA graph)

  /// The datasheet roofline: full peaks, no floor.
  static Efficiency peak() noexcept { return {1.0, 1.0, 0.0, false}; }
  /// torchao's constants (78% of peak FLOP/s, 92% of bandwidth, 2 us per kernel) and byte counts.
  static Efficiency torchao() noexcept { return {0.78, 0.92, 2e-6, true}; }
  /// The default model (starts at torchao's constants with exact byte counts).
  static Efficiency default_model() noexcept { return {0.78, 0.92, 2e-6, false}; }
};

}  // namespace roofline
