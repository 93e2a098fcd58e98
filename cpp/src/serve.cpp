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

namespace {

// Prefill tokens one step may take when d requests decode.
double prefill_room(double d, double budget, double per_decode, double chunk) noexcept {
  return std::min(budget - d * per_decode, chunk);
}

}  // namespace

InflightState inflight_state(double concurrency, double prompt_tokens, double decode_steps,
                             double token_budget, double tokens_per_decode,
                             double chunk_tokens) noexcept {
  InflightState s{};
  const double n = std::max(concurrency, 0.0);
  const double prompt = std::max(prompt_tokens, 1.0);
  const double per_decode = std::max(tokens_per_decode, 1.0);
  const double chunk = std::max(std::min(chunk_tokens, token_budget), 1.0);
  if (decode_steps <= 0.0) {
    // Prefill only: every step prefills; all n requests are in prefill.
    s.prefill_chunk = chunk;
    s.prefill_seqs = n;
    s.prefill_tokens_per_step = std::min(chunk, n * prompt);
    s.completions_per_step = s.prefill_tokens_per_step / prompt;
    s.prefill_steps = std::ceil(prompt / chunk);
    s.mixed_fraction = 1.0;
    s.prefill_tokens_per_mixed_step = s.prefill_tokens_per_step;
    s.budget_bound = n * prompt > chunk;
    return s;
  }
  // Residual of the concurrency equation; increasing in d.
  auto used = [&](double d) {
    const double room = prefill_room(d, token_budget, per_decode, chunk);
    if (room <= 0.0) return HUGE_VAL;
    return d + d / decode_steps * std::max(1.0, prompt / room);
  };
  // Budget-bound decode count: r * prompt = room(d), i.e.
  // d * prompt / steps = min(B - d * t, chunk).
  const double d_budget = std::min(token_budget * decode_steps / (prompt + decode_steps * per_decode),
                                   chunk * decode_steps / prompt);
  double hi = std::min(n, d_budget);
  double d = hi;
  if (used(hi) > n) {
    double lo = 0.0;
    for (int i = 0; i < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++i) {
      const double mid = 0.5 * (lo + hi);
      (used(mid) > n ? hi : lo) = mid;
    }
    d = lo;
  } else {
    s.budget_bound = true;  // hi = d_budget < n: prefill fills the budget before n is reached
  }
  const double r = d / decode_steps;
  const double room = prefill_room(d, token_budget, per_decode, chunk);
  s.decode_seqs = d;
  s.completions_per_step = r;
  s.prefill_chunk = room;
  s.prefill_steps = std::ceil(prompt / room);
  s.prefill_seqs = r * std::max(1.0, prompt / room);
  s.prefill_tokens_per_step = r * prompt;
  s.mixed_fraction = std::min(1.0, r * s.prefill_steps);
  s.prefill_tokens_per_mixed_step =
      s.mixed_fraction > 0.0 ? s.prefill_tokens_per_step / s.mixed_fraction : 0.0;
  return s;
}

double inflight_tokens_per_s(double completions_per_step, double output_tokens,
                             double decode_step_s, double mixed_step_s,
                             double mixed_fraction) noexcept {
  const double phi = std::clamp(mixed_fraction, 0.0, 1.0);
  const double step = (1.0 - phi) * decode_step_s + phi * mixed_step_s;
  if (step <= 0.0) return 0.0;
  return completions_per_step * output_tokens / step;
}

double dollars_per_million_tokens(double price_per_gpu_hour, double gpus,
                                  double tokens_per_s) noexcept {
  return price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6;
}

double gpu_hours(double tokens, double tokens_per_s, double gpus) noexcept {
  return tokens / tokens_per_s * gpus / 3600.0;
}

}  // namespace roofline
