#include "roofline/parallel/train.hpp"

#include <algorithm>

namespace roofline {

double optimizer_bytes_per_param(OptimizerKind kind) noexcept {
  switch (kind) {
    case OptimizerKind::adam: return 12.0;      // fp32 master + m + v
    case OptimizerKind::adam_8bit: return 6.0;  // fp32 master + 8-bit m + v
    case OptimizerKind::adam_bf16: return 4.0;  // bf16 m + v
  }
  return 12.0;
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

TrainStep train_step(const TrainStepInputs& in) noexcept {
  TrainStep s;
  const double p = std::max(in.stages, 1.0);
  const double m = std::max(in.microbatches, 1.0);
  const double v = std::max(in.virtual_stages, 1.0);
  const double layers = std::max(in.layers, 1.0);
  // The host time a micro-batch's syncs expose (dropless MoE) runs on this stage like its
  // kernels: it lengthens the micro-batch, so the pipeline bubble too.
  const double host = std::max(in.host_s, 0.0);
  const double per_mb = in.fwd_s + in.bwd_s + in.recompute_s + host;
  s.compute_s = m * per_mb;
  s.host_s = m * host;
  s.bubble_s = (p - 1.0) / v * per_mb;
  s.bubble_fraction = pipeline_bubble_fraction(p, m, v);
  s.p2p_s = p > 1 ? 2.0 * (v * m + p - 1.0) * in.p2p_s : 0.0;
  // ZeRO-3 / FSDP: gather for the forward and again for the backward, reduce-scatter in the
  // backward, every micro-batch.
  const double fsdp_fwd = in.fsdp_gather_s;
  const double fsdp_bwd = in.fsdp_gather_s + in.fsdp_reduce_s;
  const double dp = in.grad_sync_s + in.param_gather_s;
  s.comm_s = m * (fsdp_fwd + fsdp_bwd) + dp;
  if (in.overlap) {
    const double fsdp = std::max(fsdp_fwd - in.fwd_s, 0.0) +
                        std::max(fsdp_bwd - in.bwd_s - in.recompute_s, 0.0) +
                        (fsdp_fwd + in.fsdp_gather_s) / layers;
    const double sync = std::max(in.grad_sync_s - in.bwd_s - in.recompute_s, 0.0) +
                        in.grad_sync_s / layers;
    const double gather = std::max(in.param_gather_s - in.fwd_s, 0.0) +
                          in.param_gather_s / layers;
    s.exposed_comm_s = m * fsdp + sync + gather;
  } else {
    s.exposed_comm_s = s.comm_s;
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
    x.grad_sync_s = r[8];
    x.param_gather_s = r[9];
    x.fsdp_gather_s = r[10];
    x.fsdp_reduce_s = r[11];
    x.optimizer_s = r[12];
    x.overlap = r[13] != 0.0;
    x.host_s = r[14];
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
