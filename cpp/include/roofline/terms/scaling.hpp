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

/// Bytes/s of one SM at a fraction of its share of the DRAM bandwidth (0 when sms is 0).
double per_sm_bandwidth(double fraction, double mem_bytes_per_s, double sms);

}  // namespace roofline
