#pragma once

namespace roofline {

/// Terms of the cuBLAS / CUTLASS GEMMs PyTorch runs (F.linear, torch._scaled_mm,
/// torch._grouped_mm). All zero = the idealized tuned-library model (old behaviour). The
/// terms apply to GEMMs whose inputs are unscaled, tensorwise- or rowwise-scaled; block-scaled
/// formats (fp8 1x128 / 128x128, MX, NVFP4) are DeepGEMM-style kernels, calibrated on their
/// own (calibrate.py step 4), and keep the idealized model.
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
  /// Sustained fraction of the achievable tensor rate under continuous load: the power
  /// limiter lowers the clock of a kernel that keeps the tensor cores busy for long (0 = 1).
  double throttle_fraction = 0.0;
  /// Time constant of that clock drop, in seconds: a kernel whose compute time t is short
  /// against it runs at the full clock, one much longer at throttle_fraction; in between
  /// clock = f + (1 - f) * tau / (tau + t).
  double throttle_time_s = 0.0;
  /// Largest split-K factor of a rowwise-scaled GEMM (its epilogue scales the finished
  /// accumulator; 0 = as unscaled GEMMs, 1 = never split).
  double rowwise_max_splits = 0.0;
  /// Narrowest CTA tile, in columns of C, of the rowwise-scaled kernels (cuBLAS's outer-vector-
  /// scaled nvjet kernels come in 128-column tiles and wider; 0 = every tile of the search).
  double rowwise_min_tile_n = 0.0;
  /// Fraction of the compute and memory rates a GEMM reaches when a leading dimension of its
  /// operands (k or n elements) is not a multiple of 16 bytes: no TMA, narrow vector loads
  /// (0 = 1).
  double unaligned_fraction = 0.0;
  /// Multiplier of the achievable 16/32-bit tensor rate (bf16, fp16, tf32, fp32, fp64) of a
  /// library GEMM, per accelerator: with the terms above in place, the model must still
  /// reproduce the measured best-of-sweep ceiling that set the achievable fraction (0 = 1).
  double compute_scale_16 = 0.0;
  /// The same for the 8-bit and 4-bit classes (fp8, int8, fp4) (0 = 1).
  double compute_scale_8 = 0.0;
  /// Grouped GEMMs (torch._grouped_mm, CUTLASS): fraction of the dense GEMM rate (0 = 1).
  double grouped_compute_fraction = 0.0;
  /// Grouped GEMMs: fixed time of one call, in seconds (0 = latency_s).
  double grouped_latency_s = 0.0;
};

}  // namespace roofline
