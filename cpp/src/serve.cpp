#include "roofline/parallel/serve.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// SGLang v0.4's admission constants (python/sglang/global_config.py: init_new_token_ratio,
// base_min_new_token_ratio with schedule_conservativeness 1, new_token_ratio_decay;
// managers/schedule_policy.py: CLIP_MAX_NEW_TOKENS_ESTIMATION, env default 4096).
constexpr double kSglangInitRatio = 0.7;
constexpr double kSglangMinRatio = 0.1;
constexpr double kSglangRatioDecay = 0.001;
constexpr double kSglangClipNewTokens = 4096.0;

struct RunRequest {
  double arrival = 0.0;
  double scored_arrival = 0.0;  // mid-point of the window it landed in (see inflight_run)
  double prefill_left = 0.0;  // prompt (or recomputed) tokens still to prefill
  double ctx = 0.0;           // tokens in its KV cache
  double generated = 0.0;     // output tokens emitted
  double pages = 0.0;         // KV pages held
  double prompt = 0.0;        // its prompt tokens
  double output = 0.0;        // its output tokens
  double first_token = -1.0;
  double last_token = 0.0;
  bool decoding = false;      // past its prefill at the start of the step
  bool chunked = false;       // took prefill tokens in this step
};

// Term i of the additive recurrence frac(0.5 + i * alpha): for an irrational alpha an
// equidistributed sequence in [0, 1), the deterministic stand-in for a uniform draw.
double equidistributed(std::size_t i, double alpha) noexcept {
  double u = 0.5 + static_cast<double>(i) * alpha;
  return u - std::floor(u);
}

// Exponential gap (mean 1) of arrival i >= 1: -ln(1 - u), u the golden-ratio conjugate's
// equidistributed term i.
double poisson_gap(std::size_t i) noexcept {
  return -std::log1p(-equidistributed(i, 0.6180339887498949));
}

// Length of request i when lengths spread uniformly around `mean`: 1 + floor(u * (2 mean - 1)),
// u = equidistributed(i, alpha), an integer uniform on [1, 2 mean - 1] (mean `mean`). `mean`
// is a whole number >= 1.
double spread_length(std::size_t i, double alpha, double mean) noexcept {
  return 1.0 + std::floor(equidistributed(i, alpha) * (2.0 * mean - 1.0));
}

// Median of (value, weight) pairs: the smallest value whose cumulative weight reaches half.
double weighted_median(std::vector<std::pair<double, double>> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  double total = 0.0;
  for (const auto& e : v) total += e.second;
  double acc = 0.0;
  for (const auto& e : v) {
    acc += e.second;
    if (acc >= 0.5 * total) return e.first;
  }
  return v.back().first;
}

}  // namespace

InflightRun inflight_run(std::int64_t num_requests, double arrival_interval_s,
                         double prompt_tokens, double output_tokens, double token_budget,
                         double chunk_tokens, double kv_capacity_pages, double page_tokens,
                         bool reserve, const StepTimeFn& step_s, std::int64_t max_steps,
                         bool mixed_prefill, bool overlap_schedule, bool poisson_arrivals,
                         bool uniform_lengths, const StepTimeFn& launch_s,
                         bool worst_case_admission) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("inflight_run: " + what); };
  if (num_requests < 1) bad("num_requests must be >= 1");
  if (!(arrival_interval_s >= 0.0) || !std::isfinite(arrival_interval_s))
    bad("arrival_interval_s must be a finite number >= 0");
  if (!(prompt_tokens >= 1.0) || !(output_tokens >= 1.0)) bad("prompt and output must be >= 1");
  if (!(token_budget > 1.0)) bad("token_budget must exceed 1");
  if (!(chunk_tokens >= 1.0)) bad("chunk_tokens must be >= 1");
  if (!(page_tokens >= 1.0)) bad("page_tokens must be >= 1");
  if (!step_s) bad("step_s is empty");
  const double I = std::floor(prompt_tokens), O = std::floor(output_tokens);
  const double capacity = std::floor(kv_capacity_pages);
  auto pages = [&](double tokens) { return std::ceil(tokens / page_tokens); };
  const auto n = static_cast<std::size_t>(num_requests);
  std::vector<RunRequest> req(n);
  double at = 0.0, longest = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (poisson_arrivals && i > 0) at += poisson_gap(i) * arrival_interval_s;
    req[i].arrival = poisson_arrivals ? at : static_cast<double>(i) * arrival_interval_s;
    // Lengths uniform around the means, from the R2 sequence's two coordinates (the plastic
    // number's inverse powers, independent of the arrivals' golden-ratio sequence).
    req[i].prompt = uniform_lengths ? spread_length(i, 0.7548776662466927, I) : I;
    req[i].output = uniform_lengths ? spread_length(i, 0.5698402909980532, O) : O;
    req[i].prefill_left = req[i].prompt;
    longest = std::max(longest, req[i].prompt + req[i].output);
  }
  if (pages(longest) > capacity) {
    const auto whole = [](double x) { return std::to_string(std::llround(x)); };
    bad("the longest request (" + whole(longest) + " tokens of prompt and output) needs " +
        whole(pages(longest)) + " KV-cache pages of " + whole(page_tokens) +
        " tokens, more than the " + whole(capacity) + " pages the cache holds");
  }
  std::deque<std::size_t> waiting;
  std::vector<std::size_t> running;  // admission order
  std::vector<std::pair<double, double>> gaps;  // (inter-token gap, tokens with that gap)
  InflightRun out{};
  double t = 0.0, free_pages = capacity, decode_sum = 0.0;
  double sched_t = 0.0;  // when this step's batch is formed: its own start, or the previous
                         // step's start under the overlap scheduler
  double window_lo = 0.0;  // arrivals in (window_lo, seen] join the queue at this batch
  std::size_t arrived = 0, finished = 0;
  std::int64_t steps = 0;
  const double chunk = std::min(chunk_tokens, token_budget);
  // Tokens the last step emitted, handed out (timed) once the scheduler has processed them:
  // at the end of their step, or, with the overlap scheduler and launch_s, once the next step
  // has been launched (request, whether it is a prefill's token).
  const bool held = overlap_schedule && static_cast<bool>(launch_s);
  std::vector<std::pair<std::size_t, bool>> pending;
  bool first_after_idle = true;  // the scheduler forms the next batch at once (no result to wait for)
  // SGLang's admission of ignore_eos requests without a prefix cache (PrefillAdder::
  // add_one_req_ignore_eos, v0.4; see serve.hpp): the scheduler's new_token_ratio (init 0.7,
  // -0.001 per decode step down to 0.1, back to 0.7 when the engine idles) and the tokens
  // promised to this pass's admissions.
  const bool worst = worst_case_admission && !reserve;
  double ratio = kSglangInitRatio, promised = 0.0;
  // Scheduler.batch_is_full: set when a pass stops for lack of tokens, it skips the prefill
  // check until a decode step retires a request (update_running_batch) or the engine idles.
  bool batch_full = false;
  // (tokens left, tokens held) of every running request with tokens left, by tokens left
  // (stable: SGLang sorts its running requests with Python's stable sort).
  using State = std::pair<double, double>;
  const auto by_left = [](const State& a, const State& b) { return a.first < b.first; };
  auto running_states = [&]() {
    std::vector<State> st;
    st.reserve(running.size() + 1);
    for (std::size_t i : running) {
      const double left = req[i].output - req[i].generated;
      if (left > 0.0) st.emplace_back(left, req[i].prompt + req[i].generated);
    }
    std::stable_sort(st.begin(), st.end(), by_left);
    return st;
  };
  // Whether the candidate h still lets every state finish: its prompt taken from the free
  // tokens, the k-th state (by tokens left, the candidate merged in after its equals) must
  // still run (next state's tokens left) x (states from k on) tokens with what the earlier
  // ones free. `st`: the running states, sorted (running_states).
  auto worst_case_fits = [&](const std::vector<State>& st, std::size_t h, double want) {
    const double h_left = req[h].output - req[h].generated;
    const bool with_h = h_left > 0.0;
    const State cand{h_left, req[h].prompt + req[h].generated};
    const std::size_t at = with_h ? static_cast<std::size_t>(
        std::upper_bound(st.begin(), st.end(), cand, by_left) -
        st.begin()) : st.size();
    const std::size_t n = st.size() + (with_h ? 1 : 0);
    auto get = [&](std::size_t k) -> const State& {
      if (!with_h || k < at) return st[k];
      return k == at ? cand : st[k - 1];
    };
    const double rem = (free_pages - want) * page_tokens;
    double freed = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      const double steps_ahead = k + 1 < n ? get(k + 1).first : get(k).first;
      const double bs = static_cast<double>(n - k);
      if (rem + freed - steps_ahead * bs <= 0.0) return false;
      freed += get(k).second;
    }
    return true;
  };
  // PrefillAdder::budget_state after an admission: the free tokens less the running
  // requests' remaining outputs at new_token_ratio and this pass's promised tokens.
  // `before`: the clipped outputs still to come of the requests running before this pass's
  // admissions (the admitted ones count in `promised`), summed once per pass.
  auto budget_left = [&](double before) {
    const double offset = promised + before * ratio;
    const double free_tokens = free_pages * page_tokens;
    return free_tokens > 0.0 && free_tokens - offset > 0.0;
  };
  auto admissible = [&](std::size_t h, const std::vector<State>* st) {
    const double want =
        reserve ? pages(req[h].prompt + req[h].output) : pages(req[h].prefill_left);
    if (want > free_pages) return false;
    return !worst || worst_case_fits(st ? *st : running_states(), h, want);
  };
  auto hand_out = [&](double at) {
    std::vector<std::pair<double, double>> step_gaps;  // few distinct gaps per step
    for (const auto& [i, first] : pending) {
      RunRequest& r = req[i];
      const double g = at - r.last_token;
      if (first && r.first_token < 0.0) {
        r.first_token = at;
      } else {  // a decode token, or a recomputed request's stall
        bool merged = false;
        for (auto& e : step_gaps) {
          if (e.first == g) {
            e.second += 1.0;
            merged = true;
            break;
          }
        }
        if (!merged) step_gaps.emplace_back(g, 1.0);
      }
      r.last_token = at;
    }
    gaps.insert(gaps.end(), step_gaps.begin(), step_gaps.end());
    pending.clear();
  };
  while (finished < n) {
    const double seen = overlap_schedule ? sched_t : t;
    while (arrived < n && req[arrived].arrival <= seen) {
      req[arrived].scored_arrival = 0.5 * (window_lo + seen);
      waiting.push_back(arrived++);
    }
    window_lo = seen;
    if (running.empty() && waiting.empty()) {
      hand_out(t);  // no next step: the last step's tokens go out at its end
      first_after_idle = true;
      ratio = kSglangInitRatio;  // SGLang re-inits new_token_ratio when idle
      batch_full = false;
      if (req[arrived].arrival > t) window_lo = req[arrived].arrival;  // idle: no wait
      t = std::max(t, req[arrived].arrival);
      sched_t = t;  // an idle engine forms the next batch as the request arrives
      continue;
    }
    if (++steps > max_steps) {
      throw std::runtime_error("inflight_run: more than " + std::to_string(max_steps) +
                               " engine steps; use fewer requests");
    }
    // Decoding requests of this step and the pages their new tokens need (grow). Without
    // mixed prefill, a step with prefill work runs it alone and nobody decodes.
    bool prefill_only = false;
    if (!mixed_prefill) {
      for (std::size_t i : running) prefill_only = prefill_only || req[i].prefill_left > 0.0;
      if (!prefill_only && !waiting.empty() && !(worst && batch_full))
        prefill_only = admissible(waiting.front(), nullptr);
    }
    for (std::size_t i : running) req[i].decoding = !prefill_only && req[i].prefill_left <= 0.0;
    if (!reserve) {
      auto need_of = [&](std::size_t i) {
        return req[i].decoding ? std::max(pages(req[i].ctx + 1.0) - req[i].pages, 0.0) : 0.0;
      };
      double need = 0.0;
      for (std::size_t i : running) need += need_of(i);
      while (need > free_pages && running.size() > 1) {
        const std::size_t v = running.back();
        running.pop_back();
        need -= need_of(v);
        free_pages += req[v].pages;
        RunRequest& r = req[v];
        r.pages = 0.0;
        r.prefill_left = r.prompt + r.generated;  // recompute
        r.ctx = 0.0;
        r.decoding = false;
        waiting.push_front(v);
        out.preemptions += 1.0;
      }
      if (need > free_pages) throw std::logic_error("inflight_run: KV pages exhausted");
      for (std::size_t i : running) {
        const double add = need_of(i);
        req[i].pages += add;
        free_pages -= add;
      }
    }
    double d = 0.0, keys = 0.0;
    for (std::size_t i : running) {
      if (req[i].decoding) {
        d += 1.0;
        keys += req[i].ctx + 1.0;
      }
    }
    // Prefill room: running prefills first, then admissions while room and pages allow.
    double room = prefill_only ? chunk : std::min(token_budget - d, chunk), p = 0.0;
    std::vector<std::pair<std::size_t, double>> chunks;
    for (std::size_t i : running) {
      if (room <= 0.0) break;
      if (req[i].decoding || req[i].prefill_left <= 0.0) continue;  // decoding, or waiting
      const double c = std::min(room, req[i].prefill_left);
      chunks.emplace_back(i, c);
      room -= c;
      p += c;
    }
    promised = 0.0;
    // The running states and their clipped outputs, once per pass: admissions only add to
    // them (each merged into the sorted states as it is admitted).
    std::vector<State> states;
    double before = 0.0;
    if (worst) {
      states = running_states();
      for (std::size_t j : running)
        before += std::min(req[j].output - req[j].generated, kSglangClipNewTokens);
    }
    while (room > 0.0 && !waiting.empty() && !(worst && batch_full)) {
      const std::size_t i = waiting.front();
      if (!admissible(i, worst ? &states : nullptr)) {
        batch_full = worst;
        break;
      }
      const double want =
          reserve ? pages(req[i].prompt + req[i].output) : pages(req[i].prefill_left);
      waiting.pop_front();
      free_pages -= want;
      req[i].pages = want;
      running.push_back(i);
      const double c = std::min(room, req[i].prefill_left);
      chunks.emplace_back(i, c);
      room -= c;
      p += c;
      if (worst) {  // a whole prompt promises its output; a truncated chunk nothing yet
        const State st_i{req[i].output - req[i].generated, req[i].prompt + req[i].generated};
        if (st_i.first > 0.0) {
          states.insert(std::upper_bound(states.begin(), states.end(), st_i, by_left), st_i);
        }
        if (c >= req[i].prefill_left) promised += std::min(req[i].output, kSglangClipNewTokens);
        if (!budget_left(before)) {
          batch_full = true;
          break;
        }
      }
    }
    out.peak_running = std::max(out.peak_running, static_cast<double>(running.size()));
    if (d <= 0.0 && p <= 0.0) throw std::logic_error("inflight_run: a step with no work");
    const double dt = step_s(d, p, d > 0.0 ? keys / d : 0.0);
    if (!(dt > 0.0) || !std::isfinite(dt)) {
      throw std::invalid_argument("inflight_run: step_s(" + std::to_string(d) + ", " +
                                  std::to_string(p) + ") returned " + std::to_string(dt) +
                                  " (need a positive finite time)");
    }
    // With the overlap scheduler the scheduler learns that this step has been launched (and
    // hands out the previous step's tokens, and forms the batch after next) once the launch
    // is done: at once for a graph replay, after launch_s host seconds for an eager step.
    double launched = 0.0;
    if (held) {
      launched = launch_s(d, p, d > 0.0 ? keys / d : 0.0);
      if (!(launched >= 0.0) || !std::isfinite(launched)) {
        throw std::invalid_argument("inflight_run: launch_s(" + std::to_string(d) + ", " +
                                    std::to_string(p) + ") returned " +
                                    std::to_string(launched) +
                                    " (need a finite time >= 0)");
      }
      launched = std::min(launched, dt);
    }
    hand_out(t + launched);
    // the batch after next is formed once the previous step's results are processed, i.e.
    // after this step's launch; the first step after an idle spell has no result to wait
    // for, so the next batch is formed as it starts
    sched_t = first_after_idle ? t : t + launched;
    first_after_idle = false;
    t += dt;
    decode_sum += d;
    if (d > 0.0) ratio = std::max(ratio - kSglangRatioDecay, kSglangMinRatio);
    if (p > 0.0) out.mixed_steps += 1.0;
    for (const auto& [i, c] : chunks) {
      req[i].prefill_left -= c;
      req[i].ctx += c;
      req[i].chunked = true;
    }
    // Tokens emitted at the end of the step; retire finished requests.
    std::size_t kept = 0;
    for (std::size_t k = 0; k < running.size(); ++k) {
      const std::size_t i = running[k];
      RunRequest& r = req[i];
      if (r.decoding) {
        pending.emplace_back(i, false);
        r.ctx += 1.0;
        r.generated += 1.0;
      } else if (r.chunked && r.prefill_left <= 0.0) {  // prefill ended in this step: a token
        pending.emplace_back(i, true);  // the first, or a recomputed request's stall
        r.generated += 1.0;
      }
      r.chunked = false;
      if (r.generated >= r.output) {
        free_pages += r.pages;
        r.pages = 0.0;
        ++finished;
      } else {
        running[kept++] = i;
      }
    }
    if (kept < running.size()) batch_full = false;  // the batch shrank
    running.resize(kept);
    if (!held) hand_out(t);
  }
  hand_out(t);
  std::vector<double> ttft(n);
  double e2e = 0.0, tokens = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    tokens += req[i].output;
    ttft[i] = req[i].first_token - req[i].scored_arrival;
    e2e += req[i].last_token - req[i].scored_arrival;
  }
  std::sort(ttft.begin(), ttft.end());
  double sum_ttft = 0.0;
  for (double v : ttft) sum_ttft += v;
  double gap_sum = 0.0, gap_w = 0.0;
  for (const auto& [g, w] : gaps) {
    gap_sum += g * w;
    gap_w += w;
  }
  out.makespan_s = t - req[0].arrival;
  out.output_tokens = tokens;
  out.tokens_per_s = out.output_tokens / out.makespan_s;
  out.ttft_mean_s = sum_ttft / static_cast<double>(n);
  out.ttft_median_s = n % 2 ? ttft[n / 2] : 0.5 * (ttft[n / 2 - 1] + ttft[n / 2]);
  out.itl_mean_s = gap_w > 0.0 ? gap_sum / gap_w : 0.0;
  out.itl_median_s = weighted_median(std::move(gaps));
  out.e2e_mean_s = e2e / static_cast<double>(n);
  out.steps = static_cast<double>(steps);
  out.mean_decode_seqs = steps > 0 ? decode_sum / static_cast<double>(steps) : 0.0;
  return out;
}

double poisson_arrival_s(std::int64_t i, double interval_s) noexcept {
  double at = 0.0;
  for (std::int64_t j = 1; j <= i; ++j) at += poisson_gap(static_cast<std::size_t>(j));
  return at * interval_s;
}

double dollars_per_million_tokens(double price_per_gpu_hour, double gpus,
                                  double tokens_per_s) noexcept {
  return price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6;
}

double gpu_hours(double tokens, double tokens_per_s, double gpus) noexcept {
  return tokens / tokens_per_s * gpus / 3600.0;
}

}  // namespace roofline
