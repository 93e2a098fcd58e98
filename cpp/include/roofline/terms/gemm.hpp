#pragma once

namespace roofline {

/// Terms of the cuBLAS / CUTLASS GEMMs PyTorch runs (F.linear, torch._scaled_mm,
/// torch._grouped_mm). All zero = the idealized tuned-library model (old behaviour). They apply
/// to GEMMs whose inputs are unscaled, tensorwise- or rowwise-scaled; block-scaled formats
/// (fp8 1x128 / 128x128, MX, NVFP4) are DeepGEMM-style kernels and keep the idealized model.
struct GemmTerms {
  /// Fixed time of one library GEMM call, in seconds: kernel launch, prologue (first tile
  /// loads), epilogue and the gap between back-to-back launches that per-call timing
  /// (do_bench) sees. Replaces Efficiency::gemm_latency_s when > 0. A host/driver property.
  double latency_s = 0.0;
  /// Extra fixed time of a rowwise-scaled epilogue, in seconds (each CTA loads its m + n fp32
  /// scales before it can scale the accumulator).
  double rowwise_latency_s = 0.0;
  /// Fraction of the streaming bandwidth (Efficiency::memory_fraction) that GEMM operand
  /// traffic reaches (0 = 1). Skinny GEMMs stream the weight through a K loop whose pipeline
  /// keeps fewer bytes in flight per SM than a pure streaming kernel.
  double memory_fraction = 0.0;
  /// Time for DRAM traffic to ramp up to the full rate, in seconds: a memory-bound kernel's
  /// CTAs each wait one pipeline fill (stages x DRAM latency) before the stream is steady.
  /// Charged as ramp_s x (memory share of the kernel time), 0 = none.
  double ramp_s = 0.0;
  /// Fraction of the achievable tensor rate that the library's heuristic tiles sustain at
  /// typical (not best-of-sweep) shapes (0 = 1).
  double compute_fraction = 0.0;
  /// Grouped GEMMs (torch._grouped_mm, CUTLASS): fraction of the dense GEMM rate (0 = 1).
  double grouped_compute_fraction = 0.0;
  /// Grouped GEMMs: fixed time of one call, in seconds (0 = latency_s).
  double grouped_latency_s = 0.0;
};

}  // namespace roofline
