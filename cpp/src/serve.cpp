#include "roofline/parallel/serve.hpp"

#include <algorithm>
#include <cmath>

namespace roofline {

double kv_capacity_sequences(double capacity_bytes, double usable_fraction, double used_bytes,
                             double kv_bytes_per_sequence) noexcept {
  const double free_bytes = capacity_bytes * usable_fraction - used_bytes;
  if (free_bytes <= 0 || kv_bytes_per_sequence <= 0) return 0.0;
  return std::floor(free_bytes / kv_bytes_per_sequence);
}

double speculative_tokens_per_step(double k, double alpha) noexcept {
  if (alpha >= 1.0) return k + 1.0;
  return (1.0 - std::pow(alpha, k + 1.0)) / (1.0 - alpha);
}

double speculative_tpot_s(double k, double alpha, double draft_step_s,
                          double verify_step_s) noexcept {
  return (k * draft_step_s + verify_step_s) / speculative_tokens_per_step(k, alpha);
}

double chunked_prefill_ttft_s(double prompt_tokens, double chunk_tokens,
                              double mixed_step_s) noexcept {
  return std::ceil(prompt_tokens / std::max(chunk_tokens, 1.0)) * mixed_step_s;
}

double dollars_per_million_tokens(double price_per_gpu_hour, double gpus,
                                  double tokens_per_s) noexcept {
  return price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6;
}

double gpu_hours(double tokens, double tokens_per_s, double gpus) noexcept {
  return tokens / tokens_per_s * gpus / 3600.0;
}

}  // namespace roofline
