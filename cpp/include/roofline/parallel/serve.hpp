#pragma once
// Serving and cost arithmetic: KV-cache capacity, speculative decoding, chunked prefill,
// dollars per token and GPU-hours. Inputs are per-step times and byte counts from the op
// estimates.

namespace roofline {

/// Sequences whose KV cache fits: floor((capacity * usable_fraction - used) / kv_per_sequence),
/// 0 when nothing is left.
double kv_capacity_sequences(double capacity_bytes, double usable_fraction, double used_bytes,
                             double kv_bytes_per_sequence) noexcept;

/// Expected tokens one speculative step emits with draft length k and per-token acceptance
/// alpha (independent acceptances): (1 - alpha^(k+1)) / (1 - alpha); k + 1 when alpha = 1.
double speculative_tokens_per_step(double k, double alpha) noexcept;

/// Time per output token of speculative decoding: (k * draft_step_s + verify_step_s) divided
/// by speculative_tokens_per_step(k, alpha).
double speculative_tpot_s(double k, double alpha, double draft_step_s,
                          double verify_step_s) noexcept;

/// Time to first token with chunked prefill: ceil(prompt / chunk) mixed steps of
/// mixed_step_s each (the prompt's chunks ride along with the decode batch).
double chunked_prefill_ttft_s(double prompt_tokens, double chunk_tokens,
                              double mixed_step_s) noexcept;

/// Dollars per million tokens: price_per_gpu_hour * gpus / 3600 / tokens_per_s * 1e6.
double dollars_per_million_tokens(double price_per_gpu_hour, double gpus,
                                  double tokens_per_s) noexcept;

/// GPU-hours to process `tokens` at tokens_per_s on gpus: tokens / tokens_per_s * gpus / 3600.
double gpu_hours(double tokens, double tokens_per_s, double gpus) noexcept;

}  // namespace roofline
