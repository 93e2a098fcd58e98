#pragma once

// How fitted terms measured on one accelerator carry over to another: formulas of the
// packaged parameters (python/roofline/_params passes the values, the formulas live here).

namespace roofline {

/// Sustained clock fraction of a GEMM under tensor load on an accelerator, from the fraction
/// fitted on the reference GPU: max(0.5, 1 - (1 - fitted) * (bf16 peak / board power) /
/// reference FLOP/s per W); 0 (no clock drop) when any input is <= 0.
double gemm_throttle_fraction(double fitted, double reference_flops_per_w,
                              double bf16_flops_per_s, double tdp_w);

/// FlashAttention-2's mma.sync forward rate as a fraction of an accelerator's GEMM rate (bf16
/// peak x achievable fraction), carried from the reference GPU per SM and clock: fraction_ref *
/// gemm_ref / (sms_ref * clock_ref) * sms * clock / gemm; fraction_ref when a count is 0.
double flash_fraction_per_sm_clock(double ref_fraction, double ref_bf16_flops_per_s,
                                   double ref_bf16_fraction, double ref_sms, double ref_clock_hz,
                                   double bf16_flops_per_s, double bf16_fraction, double sms,
                                   double clock_hz);

/// GPU-side fixed time of a streaming kernel, from the per-call latency fitted on back-to-back
/// calls (do_bench, whose gap between launches is host time): min(per_call_latency_s,
/// kernel_gap_s + small_kernel_ramp_s), so that a kernel moving no data occupies the GPU for
/// kernel_gap_s (the minimum GPU time of a kernel run back to back, measured on graph chains).
/// per_call_latency_s when kernel_gap_s <= 0 (no host terms).
double gpu_streaming_latency_s(double per_call_latency_s, double kernel_gap_s,
                               double small_kernel_ramp_s);

/// Bytes/s of one SM at a fraction of its share of the DRAM bandwidth (0 when sms is 0).
double per_sm_bandwidth(double fraction, double mem_bytes_per_s, double sms);

}  // namespace roofline
