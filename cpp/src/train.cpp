#include "roofline/parallel/train.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace roofline {

double optimizer_bytes_per_param(OptimizerKind kind) noexcept {
  switch (kind) {
    case OptimizerKind::adam: return 12.0;      // fp32 master + m + v
    case OptimizerKind::adam_8bit: return 6.0;  // fp32 master + 8-bit m + v
    case OptimizerKind::adam_bf16: return 4.0;  // bf16 m + v
  }
  return 12.0;
}

double fsdp_predivide_factor(double world) noexcept {
  const double w = std::floor(world);
  if (!(w > 1.0) || !std::isfinite(w)) return 1.0;
  double f = 1.0;
  while (std::fmod(w, f) == 0.0 && w / f > f) f *= 2.0;
  return f;
}

double ddp_bucket_count(const double* numel, std::size_t n, double bucket_elements) noexcept {
  double buckets = 0.0, open = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(numel[i] >= 1.0)) continue;
    open += std::floor(numel[i]);
    if (bucket_elements > 0.0 && open >= bucket_elements) {
      buckets += 1.0;
      open = 0.0;
    }
  }
  return buckets + (open > 0.0 ? 1.0 : 0.0);
}

double flat_shard_tensors(const double* numel, const double* unit, std::size_t n,
                          const double* copies, std::size_t units, double world) noexcept {
  std::vector<double> total(units, 0.0);
  double everything = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(std::max(unit[i], 0.0));
    if (numel[i] < 1.0 || !(unit[i] >= 0.0) || u >= units) continue;
    total[u] += std::floor(numel[i]);
    everything += std::max(copies[u], 0.0);
  }
  const double w = std::floor(world);
  if (!(w > 1.0)) return everything;
  // each tensor covers the chunks [first, last] of its flat parameter, weighted by the
  // parameter's copies; the busiest rank is where the weighted ranges pile up most
  std::vector<std::pair<double, double>> events;
  events.reserve(2 * n);
  std::vector<double> offset(units, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(std::max(unit[i], 0.0));
    if (numel[i] < 1.0 || !(unit[i] >= 0.0) || u >= units) continue;
    const double size = std::floor(numel[i]);
    const double chunk = std::ceil(total[u] / w);
    const double c = std::max(copies[u], 0.0);
    events.emplace_back(std::floor(offset[u] / chunk), c);
    events.emplace_back(std::floor((offset[u] + size - 1.0) / chunk) + 1.0, -c);
    offset[u] += size;
  }
  // at one rank, ends (negative) sort before starts
  std::sort(events.begin(), events.end());
  double open = 0.0, most = 0.0;
  for (const auto& e : events) {
    open += e.second;
    most = std::max(most, open);
  }
  return most;
}

double multi_tensor_apply_launches(const double* numel, std::size_t n, int depth) noexcept {
  // ATen MultiTensorApply.cuh: kChunkSize = 65536, depth_to_max_blocks = 320 for every depth.
  constexpr double kChunk = 65536.0;
  constexpr double kMaxBlocks = 320.0;
  constexpr double kMaxTensors[5] = {110.0, 64.0, 48.0, 36.0, 30.0};
  const double max_tensors = kMaxTensors[std::clamp(depth, 1, 5) - 1];
  double launches = 0.0, blocks = 0.0, tensors = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(numel[i] > 0.0)) continue;  // empty tensors are skipped
    const double chunks = std::ceil(numel[i] / kChunk);
    tensors += 1.0;
    double left = chunks;
    while (left > 0.0) {
      // Chunks of this tensor until the CTA table is full.
      const double take = std::min(left, kMaxBlocks - blocks);
      blocks += take;
      left -= take;
      const bool tensors_full = tensors == max_tensors && left == 0.0;
      if (blocks == kMaxBlocks || tensors_full) {
        launches += 1.0;
        blocks = 0.0;
        tensors = left > 0.0 ? 1.0 : 0.0;  // a split tensor opens the next launch
      }
    }
  }
  return launches + (blocks > 0.0 ? 1.0 : 0.0);
}

double multi_tensor_apply_floor_s(double launches, double chunk_elements, double sms,
                                  double step_s) noexcept {
  // ATen: kBlockSize = 512 threads, kILP = 4 elements per thread per step, kChunkSize = 65536.
  constexpr double kStepElements = 512.0 * 4.0;
  if (!(launches > 0.0) || !(chunk_elements > 0.0) || !(step_s > 0.0)) return 0.0;
  const double steps = std::ceil(std::min(chunk_elements, 65536.0) / kStepElements);
  const double waves = sms > 0.0 ? std::ceil(320.0 / (4.0 * sms)) : 1.0;
  return launches * waves * steps * step_s;
}

double pipeline_bubble_fraction(double stages, double microbatches,
                                double virtual_stages) noexcept {
  if (stages <= 1) return 0.0;
  const double v = std::max(virtual_stages, 1.0);
  return (stages - 1.0) / (v * microbatches + stages - 1.0);
}

double inflight_microbatches(double stages, double microbatches, double virtual_stages) noexcept {
  const double held = std::min(microbatches, std::max(stages, 1.0));
  if (virtual_stages <= 1 || stages <= 1) return held;
  return held * (1.0 + (stages - 1.0) / (stages * virtual_stages));
}

double tp_overlap_exposed_s(double comm_s, double gemm_s, double tp) noexcept {
  const double c = std::max(comm_s, 0.0);
  return std::max(c - std::max(gemm_s, 0.0), 0.0) + c / std::max(tp, 1.0);
}

double offload_exposed_s(double layers, double offloaded, double fwd_layer_s, double bwd_layer_s,
                         double layer_bytes, double host_bytes_per_s) noexcept {
  const double n_layers = std::floor(layers);
  const double k_layers = std::floor(offloaded);
  if (!(n_layers >= 2.0 && n_layers <= 1e6) || !(k_layers >= 1.0) || !(host_bytes_per_s > 0.0) ||
      !std::isfinite(host_bytes_per_s))
    return 0.0;
  const auto n = static_cast<std::size_t>(n_layers);
  const auto k = static_cast<std::size_t>(std::min(k_layers, n_layers - 1.0));
  const std::size_t window = n - k;  // activation sets the GPU may hold at once
  const double f = std::max(fwd_layer_s, 0.0), b = std::max(bwd_layer_s, 0.0);
  const double copy = std::max(layer_bytes, 0.0) / host_bytes_per_s;
  std::vector<double> out_done(k + 1, 0.0), bwd_end(n + 2, 0.0);
  double t = 0.0, stream = 0.0, waited = 0.0;
  const auto wait_for = [&](double ready) {  // compute stalls until `ready`
    if (ready > t) {
      waited += ready - t;
      t = ready;
    }
  };
  for (std::size_t j = 1; j <= n; ++j) {  // forward, layers 1..n
    if (j > window && j - window <= k) wait_for(out_done[j - window]);
    const double start = t;
    t += f;
    if (j <= k) {
      out_done[j] = std::max(std::max(stream, start) + copy, t);
      stream = out_done[j];
    }
  }
  for (std::size_t j = n; j >= 1; --j) {  // backward, layers n..1; copy-ins k..1 in order
    if (j <= k) {
      const double in_done = std::max({stream, bwd_end[j + window], out_done[j]}) + copy;
      stream = in_done;
      wait_for(in_done);
    }
    t += b;
    bwd_end[j] = t;
  }
  return waited;
}

double checkpointed_layers(double layers, double every) noexcept {
  const double n = std::max(std::floor(layers), 0.0);
  if (every <= 1.0) return n;
  return std::floor(n / std::floor(every));
}

double busiest_stage_layers(double layers, double stages) noexcept {
  const double n = std::max(std::floor(layers), 0.0);
  if (stages <= 1.0) return n;
  return std::ceil(n / std::floor(stages));
}

double last_stage_layers(double layers, double stages) noexcept {
  const double n = std::max(std::floor(layers), 0.0);
  if (stages <= 1.0) return n;
  return std::max(n - (std::floor(stages) - 1.0) * busiest_stage_layers(n, stages), 0.0);
}

TrainMemory train_memory(const TrainMemoryInputs& in) noexcept {
  const double params = in.dense_params + in.expert_params;
  const double dd = std::max(in.dense_dp, 1.0);
  const double ed = std::max(in.expert_dp, 1.0);
  // Parameters left on this GPU once a state is sharded over its data-parallel ranks.
  const double sharded = in.dense_params / dd + in.expert_params / ed;
  TrainMemory m;
  m.weights = in.zero >= 3
                  ? in.dense_weight_bytes / dd + in.expert_weight_bytes / ed + in.gathered_bytes
                  : in.dense_weight_bytes + in.expert_weight_bytes;
  m.gradients = (in.zero >= 2 ? sharded : params) * in.grad_bytes;
  m.optimizer = (in.zero >= 1 ? sharded : params) * in.optimizer_bytes;
  m.activations = in.activation_bytes * in.inflight + in.transient_bytes;
  m.total = m.weights + m.gradients + m.optimizer + m.activations;
  return m;
}

double overlapped_pass_s(const CommUnit* units, std::size_t n, double comm_sm_fraction) noexcept {
  if (n == 0) return 0.0;
  const double keep = 1.0 - std::clamp(comm_sm_fraction, 0.0, 0.9);  // compute rate left
  // link: when the link is next free; gathered: when the next unit to compute has its
  // parameters; done: when the previous unit's compute ended.
  double link = std::max(units[0].gather_s, 0.0);
  double gathered = link;
  double done = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    const double start = std::max(done, gathered);
    if (k + 1 < n) {  // prefetch unit k+1 once unit k-1 is done (two units gathered at once)
      const double g = units[k + 1].gather_s;
      gathered = g > 0 ? std::max(link, done) + g : 0.0;  // a resident unit needs no link
      if (g > 0) link = gathered;
    }
    // the compute runs slower while collectives issued before it (this unit's prefetch of the
    // next, earlier reductions) still hold their SMs
    const double c = std::max(units[k].compute_s, 0.0);
    const double busy = std::max(link - start, 0.0);
    const double run = c <= busy * keep ? c / keep : busy + c - busy * keep;
    const double end = start + run;
    if (units[k].reduce_s > 0) link = std::max(link, end) + units[k].reduce_s;
    done = end;
  }
  return std::max(done, link);
}

double a2a_overlap_exposed_s(double combine_bwd_s, double attn_fwd_s, double dispatch_s,
                             double mlp_s, double combine_fwd_s, double attn_bwd_s,
                             double comm_sm_fraction) noexcept {
  const double f = std::clamp(comm_sm_fraction, 0.0, 0.9);
  const auto phase = [f](double a, double c) {
    a = std::max(a, 0.0);
    return a > 0.0 ? std::max(a - std::max(c, 0.0), f * a) : 0.0;
  };
  return phase(combine_bwd_s, attn_fwd_s) + phase(dispatch_s, mlp_s) +
         phase(combine_fwd_s, attn_bwd_s);
}

double combined_1f1b_pairs(double stages, double microbatches, double virtual_stages) noexcept {
  const double p = std::max(std::floor(stages), 1.0);
  const double m = std::max(std::floor(microbatches), 0.0);
  const double v = std::max(std::floor(virtual_stages), 1.0);
  const double total = v * m;
  const double warmup = std::min(total, 2.0 * (p - 1.0) + (v - 1.0) * p + 1.0);
  return std::max(total - warmup, 0.0);
}

double combined_1f1b_saving_s(double gpu_s, double exposed_host_s, double a2a_hidden_s,
                              double host_issue_s) noexcept {
  const double g = std::max(gpu_s, 0.0);
  const double wall = std::max(g - std::clamp(a2a_hidden_s, 0.0, g), std::max(host_issue_s, 0.0));
  return g + std::max(exposed_host_s, 0.0) - wall;
}

double ring_exposed_s(double send_s, double attention_s, double ranks) noexcept {
  if (ranks <= 1) return 0.0;
  return (ranks - 1.0) * std::max(send_s - attention_s / ranks, 0.0);
}

double torch_cp_exposed_s(double first_s, double step_s, double kv_s, double dkv_s,
                          double ranks, bool all_gather, bool backward) noexcept {
  if (ranks <= 1) return 0.0;
  const auto over = [](double comm, double window) { return std::max(comm - window, 0.0); };
  const double p = ranks;
  double exposed = over(kv_s, first_s);  // waited before the second call
  if (!backward) return all_gather ? exposed : exposed + (p - 2.0) * over(kv_s, step_s);
  if (all_gather) return exposed + (p - 1.0) * over(dkv_s, step_s) + dkv_s;
  return exposed + (p - 2.0) * over(kv_s + dkv_s, step_s) + over(dkv_s, step_s) + dkv_s;
}

double pipeline_p2p_s(double send_s, double stages, double microbatches, double virtual_stages,
                      double chunk_s, bool overlapped) noexcept {
  const double p = std::max(stages, 1.0);
  if (p <= 1.0) return 0.0;
  const double m = std::max(microbatches, 1.0);
  const double v = std::max(virtual_stages, 1.0);
  const double s = std::max(send_s, 0.0);
  if (!overlapped || v <= 1.0) return 2.0 * (v * m + p - 1.0) * s;
  return 2.0 * (p - 1.0) * s + 2.0 * v * m * std::max(s - std::max(chunk_s, 0.0), 0.0);
}

namespace {

/// The forward units of one stage: embedding, `n` layers, head (gathers as given).
std::vector<CommUnit> forward_units(const TrainStepInputs& in, std::size_t n, double layer_fwd,
                                    bool gather) {
  std::vector<CommUnit> u;
  u.reserve(n + 2);
  u.push_back({gather ? in.embed_gather_s : 0.0, 0.0, 0.0});
  for (std::size_t i = 0; i < n; ++i) u.push_back({gather ? in.layer_gather_s : 0.0, layer_fwd, 0.0});
  u.push_back({gather ? in.head_gather_s : 0.0, in.head_fwd_s, 0.0});
  return u;
}

/// The backward units of one stage, in backward order: head, `n` layers (last first), embedding.
std::vector<CommUnit> backward_units(const TrainStepInputs& in, std::size_t n, double layer_bwd,
                                     bool fsdp, bool reduce) {
  // ZeRO-3 gathers again what the forward freed: every layer but the last (it is backpropagated
  // first) and the embedding; the head stays gathered. Nothing when the forward keeps them.
  const bool regather = fsdp && in.reshard_after_forward;
  std::vector<CommUnit> u;
  u.reserve(n + 2);
  u.push_back({0.0, in.head_bwd_s, reduce ? in.head_reduce_s : 0.0});
  for (std::size_t i = 0; i < n; ++i)
    u.push_back({regather && i > 0 ? in.layer_gather_s : 0.0, layer_bwd,
                 reduce ? in.layer_reduce_s : 0.0});
  u.push_back({regather ? in.embed_gather_s : 0.0, 0.0, reduce ? in.embed_reduce_s : 0.0});
  return u;
}

double unit_comm_s(const std::vector<CommUnit>& u) noexcept {
  double c = 0.0;
  for (const CommUnit& x : u) c += x.gather_s + x.reduce_s;
  return c;
}

double unit_compute_s(const std::vector<CommUnit>& u) noexcept {
  double c = 0.0;
  for (const CommUnit& x : u) c += x.compute_s;
  return c;
}

/// Communication of a pass left exposed: its overlapped wall time minus its compute.
double exposed_s(const std::vector<CommUnit>& u, bool overlap, double sm_fraction) noexcept {
  if (!overlap) return unit_comm_s(u);
  return std::max(overlapped_pass_s(u.data(), u.size(), sm_fraction) - unit_compute_s(u), 0.0);
}

}  // namespace

TrainStep train_step(const TrainStepInputs& in) noexcept {
  TrainStep s;
  const double p = std::max(in.stages, 1.0);
  const double m = std::max(in.microbatches, 1.0);
  const double v = std::max(in.virtual_stages, 1.0);
  const auto n = static_cast<std::size_t>(std::max(std::llround(in.layers), 1LL));
  // The host time a micro-batch's syncs expose (dropless MoE) runs on this stage like its
  // kernels: it lengthens the micro-batch, so the pipeline bubble too.
  const double host = std::max(in.host_s, 0.0);
  const double per_mb = in.fwd_s + in.bwd_s + in.recompute_s + host;
  s.compute_s = m * per_mb;
  s.host_s = m * host;
  s.bubble_s = (p - 1.0) / v * per_mb;
  s.bubble_fraction = pipeline_bubble_fraction(p, m, v);
  s.p2p_s = pipeline_p2p_s(in.p2p_s, p, m, v, in.fwd_s / v, in.overlap);
  // Per-layer compute of each pass (the host time lengthens the forward of the layers).
  const double dn = static_cast<double>(n);
  const double layer_fwd = std::max(in.fwd_s - in.head_fwd_s + host, 0.0) / dn;
  const double layer_bwd = std::max(in.bwd_s - in.head_bwd_s + in.recompute_s, 0.0) / dn;
  const bool fsdp = in.zero >= 3;
  if (fsdp) {  // every micro-batch gathers in its forward and backward, reduces in its backward
    const auto fwd = forward_units(in, n, layer_fwd, true);
    const auto bwd = backward_units(in, n, layer_bwd, true, true);
    s.comm_s = m * (unit_comm_s(fwd) + unit_comm_s(bwd));
    const double f = in.comm_sm_fraction;
    s.exposed_comm_s = m * (exposed_s(fwd, in.overlap, f) + exposed_s(bwd, in.overlap, f));
  } else {  // ZeRO-1/2 gather once after the update; gradients are reduced once per step
    const auto fwd = forward_units(in, n, layer_fwd, in.zero >= 1);
    const auto bwd = backward_units(in, n, layer_bwd, false, true);
    s.comm_s = unit_comm_s(fwd) + unit_comm_s(bwd);
    const double f = in.comm_sm_fraction;
    s.exposed_comm_s = exposed_s(fwd, in.overlap, f) + exposed_s(bwd, in.overlap, f);
  }
  s.optimizer_s = in.optimizer_s;
  s.time_s = s.compute_s + s.bubble_s + s.p2p_s + s.exposed_comm_s + s.optimizer_s;
  return s;
}

void train_memory_sweep(const double* in, std::size_t n, double* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const double* r = in + i * train_memory_fields;
    TrainMemoryInputs x;
    x.dense_params = r[0];
    x.expert_params = r[1];
    x.dense_weight_bytes = r[2];
    x.expert_weight_bytes = r[3];
    x.dense_dp = r[4];
    x.expert_dp = r[5];
    x.grad_bytes = r[6];
    x.optimizer_bytes = r[7];
    x.zero = static_cast<int>(r[8]);
    x.gathered_bytes = r[9];
    x.activation_bytes = r[10];
    x.inflight = r[11];
    x.transient_bytes = r[12];
    const TrainMemory m = train_memory(x);
    double* o = out + i * 5;
    o[0] = m.weights;
    o[1] = m.gradients;
    o[2] = m.optimizer;
    o[3] = m.activations;
    o[4] = m.total;
  }
}

void train_step_sweep(const double* in, std::size_t n, double* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const double* r = in + i * train_step_fields;
    TrainStepInputs x;
    x.fwd_s = r[0];
    x.bwd_s = r[1];
    x.recompute_s = r[2];
    x.p2p_s = r[3];
    x.stages = r[4];
    x.microbatches = r[5];
    x.virtual_stages = r[6];
    x.layers = r[7];
    x.head_fwd_s = r[8];
    x.head_bwd_s = r[9];
    x.layer_gather_s = r[10];
    x.layer_reduce_s = r[11];
    x.embed_gather_s = r[12];
    x.embed_reduce_s = r[13];
    x.head_gather_s = r[14];
    x.head_reduce_s = r[15];
    x.zero = static_cast<int>(r[16]);
    x.reshard_after_forward = r[17] != 0.0;
    x.optimizer_s = r[18];
    x.overlap = r[19] != 0.0;
    x.host_s = r[20];
    x.comm_sm_fraction = r[21];
    const TrainStep s = train_step(x);
    double* o = out + i * 9;
    o[0] = s.time_s;
    o[1] = s.compute_s;
    o[2] = s.bubble_s;
    o[3] = s.p2p_s;
    o[4] = s.exposed_comm_s;
    o[5] = s.comm_s;
    o[6] = s.optimizer_s;
    o[7] = s.bubble_fraction;
    o[8] = s.host_s;
  }
}

}  // namespace roofline
