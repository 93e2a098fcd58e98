#pragma once
// Serving and cost arithmetic: KV-cache capacity, speculative decoding, chunked prefill,
// dollars per token and GPU-hours. Inputs are per-step times and byte counts from the op
// estimates.

#include <cstdint>
#include <functional>

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

/// Steady state of an in-flight-batching engine (continuous batching with chunked prefill):
/// per engine step, how many requests decode, how many prefill tokens ride along and how often.
struct InflightState {
  double decode_seqs;             ///< d: requests decoding in every step
  double prefill_seqs;            ///< requests in their prefill phase (Little: r * steps each)
  double completions_per_step;    ///< r = d / decode_steps (requests finished per step)
  double prefill_tokens_per_step; ///< r * prompt (mean over all steps)
  double prefill_chunk;           ///< c: prefill tokens one step may take
  double prefill_steps;           ///< steps a prompt spends in prefill: ceil(prompt / c)
  double mixed_fraction;          ///< phi: share of steps that carry prefill tokens
  double prefill_tokens_per_mixed_step;  ///< r * prompt / phi
  bool budget_bound;              ///< true when the token budget, not the concurrency, sets d
};

/// Steady state of `concurrency` requests (each holding its KV cache) of `prompt_tokens` in and
/// `decode_steps` decode steps (output - 1, or less with speculative decoding), with at most
/// `token_budget` tokens per step (each decoding request uses `tokens_per_decode`) and at most
/// `chunk_tokens` prefill tokens per step. Solves d + r * max(1, prompt / c(d)) = concurrency
/// with r = d / decode_steps, c(d) = min(token_budget - d * tokens_per_decode, chunk_tokens),
/// capped where prefill saturates the budget (r * prompt = c(d)).
InflightState inflight_state(double concurrency, double prompt_tokens, double decode_steps,
                             double token_budget, double tokens_per_decode,
                             double chunk_tokens) noexcept;

/// Output tokens per second of that steady state: r * output_tokens per mean step
/// (1 - phi) * decode_step_s + phi * mixed_step_s.
double inflight_tokens_per_s(double completions_per_step, double output_tokens,
                             double decode_step_s, double mixed_step_s,
                             double mixed_fraction) noexcept;

/// Engine step time as a function of (decoding requests, prefill tokens in the step, mean keys
/// a decoding request attends to), in seconds.
using StepTimeFn = std::function<double(double, double, double)>;

/// What a finite run of requests through an in-flight-batching engine measured.
struct InflightRun {
  double makespan_s;      ///< first arrival to last completion
  double output_tokens;   ///< num_requests * output_tokens
  double tokens_per_s;    ///< output_tokens / makespan_s
  double ttft_mean_s;     ///< time to first token (arrival to end of its prefill's last step)
  double ttft_median_s;
  double itl_mean_s;      ///< gap between a request's successive tokens, over all gaps
  double itl_median_s;
  double e2e_mean_s;      ///< arrival to last token, mean over requests
  double steps;           ///< engine steps
  double mixed_steps;     ///< steps that carried prefill tokens
  double peak_running;    ///< most requests admitted at once
  double mean_decode_seqs;  ///< decoding requests per step, mean over steps
  double preemptions;     ///< requests evicted for lack of KV pages (kv_admission "grow")
};

/// Simulates `num_requests` requests of `prompt_tokens` in and `output_tokens` out (all alike)
/// through an in-flight-batching engine, step by step, until all are done. Request i arrives
/// at i * arrival_interval_s (0: all at once). Each step: (1) arrivals join the FIFO queue;
/// (2) with `reserve`, a request holds ceil((I+O)/page) pages from admission, else (grow) its
/// pages follow its context and, when a decode token needs a page none is free for, the most
/// recently admitted request is preempted (pages freed, back to the queue head, recomputes its
/// prompt and generated tokens as prefill: vLLM's recompute preemption); (3) every request
/// past its prefill decodes one token; the room c = min(token_budget - d, chunk_tokens) goes
/// to prompts in admission order: running prefills first, then queued requests admitted while
/// room is left and their pages fit; (4) the step takes step_s(d, p, mean keys) seconds;
/// a request whose prefill ends emits its first token at the end of the step, a decoding one
/// its next; a request with all output_tokens retires and frees its pages. Work per step is
/// O(running requests). Two engine policies: with `mixed_prefill` false (SGLang's default,
/// no --enable-mixed-chunk) a step that has prefill work (a running request mid-prefill, or a
/// queued one whose pages fit) runs the prompt chunks alone, up to c = chunk_tokens, and the
/// decoding requests wait (no token that step); with `overlap_schedule` (SGLang's overlap
/// scheduler) the batch of step k+1 is formed while step k runs, so a request is admitted
/// only in a step whose previous step started at or after its arrival. A token's gap (ITL) is
/// the time since the request's previous token (steps it waited through included). Throws
/// std::invalid_argument on bad input or when a request's ceil((I+O)/page) pages exceed
/// the cache, std::runtime_error past max_steps steps. With `poisson_arrivals`, request 0
/// arrives at 0 and request i a gap -ln(1 - u_i) * arrival_interval_s after request i-1, u_i
/// = frac(0.5 + i * 0.618...) (the golden-ratio sequence: exponential gaps of mean
/// arrival_interval_s, a Poisson process's, without a random generator). TTFT and e2e are
/// expectations over the arrival phase: every arrival that lands in the same window (s, S]
/// between two batch formations (step starts; the previous step's start with the overlap
/// scheduler) joins the queue at S and meets the same engine, so its wait is scored from the
/// window's mid-point (s + S) / 2, exact for an arrival uniform in the window (a Poisson
/// arrival given its window, or fixed arrivals over a random phase); an arrival at an idle
/// engine starts a step at once and is scored from itself. Makespan is from the first arrival.
/// With `uniform_lengths`, request i's prompt and output are 1 + floor(u * (2I - 1)) and
/// 1 + floor(v * (2O - 1)) tokens (I, O the floored means), (u, v) = frac(0.5 + i * (0.7549...,
/// 0.5698...)), the R2 sequence: integers uniform on [1, 2I - 1] and [1, 2O - 1] with means I
/// and O, as bench_serving's random dataset draws them with --random-range-ratio 0; otherwise
/// every request has I and O. TTFT medians are over requests, ITL medians over tokens.
/// With `overlap_schedule` and a `launch_s` (same arguments as step_s: the host seconds the
/// engine's forward thread spends launching the step, 0 for a CUDA-graph replay, at most the
/// step), the scheduler processes step k's results only once step k+1 has been launched
/// (SGLang's event_loop_overlap: resolve_batch_result waits for the next batch's launch_done):
/// step k's tokens are handed out at start(k+1) + launch_s(k+1) (at the end of step k when no
/// step follows), and the batch of step k+2, formed right after, sees the arrivals up to that
/// same instant. Without launch_s every token is handed out at the end of its step.
/// With `worst_case_admission` (and not `reserve`): SGLang v0.4's admission of requests sent
/// with ignore_eos to a server without a prefix cache (managers/schedule_policy.py,
/// PrefillAdder::add_one_req_ignore_eos, taken when `ignore_eos and tree_cache.disable`): a
/// queued request is admitted only if, with its prompt's pages taken, every running request
/// (and it) can still generate all its output: the states (tokens left, tokens held) sorted
/// by tokens left must satisfy free + freed_before_i - left_{i+1} * (n - i) > 0 for each i
/// (left_{i+1} the next state's tokens left, the last state's own), freed_before_i the
/// tokens held by the states before i; and after each admission the pass stops once the free
/// tokens less the running requests' min(tokens left, 4096) x new_token_ratio and the pass's
/// admitted outputs (min(output, 4096), a whole prompt only) are used up (budget_state);
/// a pass stopped either way marks the batch full, and no prompt is admitted again until a
/// step retires a request or the engine idles (Scheduler.batch_is_full). The
/// ratio starts at 0.7, falls by 0.001 per step with decoding requests down to 0.1, and
/// returns to 0.7 when the engine idles (Scheduler.update_running_batch, the idle branch of
/// the event loop). Retraction is not re-modelled: this admission leaves none to do.
InflightRun inflight_run(std::int64_t num_requests, double arrival_interval_s,
                         double prompt_tokens, double output_tokens, double token_budget,
                         double chunk_tokens, double kv_capacity_pages, double page_tokens,
                         bool reserve, const StepTimeFn& step_s, std::int64_t max_steps,
                         bool mixed_prefill = true, bool overlap_schedule = false,
                         bool poisson_arrivals = false, bool uniform_lengths = false,
                         const StepTimeFn& launch_s = {},
                         bool worst_case_admission = false);

/// Arrival time of request i of a Poisson-like stream of mean gap `interval_s` (the gaps of
/// inflight_run's poisson_arrivals): sum over j = 1..i of -ln(1 - frac(0.5 + j * 0.618...))
/// * interval_s; 0 for i = 0.
double poisson_arrival_s(std::int64_t i, double interval_s) noexcept;

/// Dollars per million tokens: price_per_gpu_hour * gpus / 3600 / tokens_per_s * 1e6.
double dollars_per_million_tokens(double price_per_gpu_hour, double gpus,
                                  double tokens_per_s) noexcept;

/// GPU-hours to process `tokens` at tokens_per_s on gpus: tokens / tokens_per_s * gpus / 3600.
double gpu_hours(double tokens, double tokens_per_s, double gpus) noexcept;

}  // namespace roofline
