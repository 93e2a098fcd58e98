// Bindings for the training / serving / cost arithmetic of the planner: conversion and
// forwarding only, no formulas.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <vector>

#include "roofline/parallel/serve.hpp"
#include "roofline/parallel/train.hpp"

namespace py = pybind11;
using namespace roofline;

namespace {

using Rows = py::array_t<double, py::array::c_style | py::array::forcecast>;

template <class Fn>
py::array_t<double> sweep(const Rows& in, std::size_t fields, std::size_t outputs, Fn&& run) {
  if (in.ndim() != 2 || static_cast<std::size_t>(in.shape(1)) != fields) {
    throw std::invalid_argument("internal: packed sweep input has the wrong shape");
  }
  const auto n = static_cast<std::size_t>(in.shape(0));
  py::array_t<double> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(outputs)});
  double* o = out.mutable_data();
  const double* i = in.data();
  {
    py::gil_scoped_release release;
    run(i, n, o);
  }
  return out;
}

}  // namespace

/// Registers the training, serving and cost arithmetic (cpp/bindings/bind_plan.cpp).
void bind_plan(py::module_& m) {
  py::enum_<OptimizerKind>(m, "OptimizerKind")
      .value("adam", OptimizerKind::adam)
      .value("adam_8bit", OptimizerKind::adam_8bit)
      .value("adam_bf16", OptimizerKind::adam_bf16);
  m.def("optimizer_bytes_per_param", &optimizer_bytes_per_param, py::arg("kind"),
        "Optimizer state bytes per parameter.");
  m.def("multi_tensor_apply_launches",
        [](const py::array_t<double, py::array::c_style | py::array::forcecast>& numel,
           int depth) {
          if (numel.ndim() != 1) throw std::invalid_argument("numel must be one-dimensional");
          return multi_tensor_apply_launches(numel.data(), static_cast<std::size_t>(numel.size()),
                                             depth);
        }, py::arg("numel"), py::arg("depth"),
        "Kernels one torch _foreach_ / fused-optimizer call launches (multi_tensor_apply).");
  m.def("fsdp_predivide_factor", py::vectorize(&fsdp_predivide_factor), py::arg("world"),
        "FSDP1's gradient pre-divide factor for `world` ranks (a power of two, 1 for one rank).");
  m.def("flat_shard_tensors",
        [](const Rows& numel, const Rows& unit, const Rows& copies, double world) {
          if (numel.ndim() != 1 || unit.ndim() != 1 || copies.ndim() != 1 ||
              numel.size() != unit.size()) {
            throw std::invalid_argument(
                "numel and unit must be one-dimensional and of one length, copies "
                "one-dimensional");
          }
          return flat_shard_tensors(numel.data(), unit.data(),
                                    static_cast<std::size_t>(numel.size()), copies.data(),
                                    static_cast<std::size_t>(copies.size()), world);
        }, py::arg("numel"), py::arg("unit"), py::arg("copies"), py::arg("world"),
        "Most original tensors one rank's shards of FSDP1 FlatParameters overlap (copies "
        "per flat parameter).");
  m.def("ddp_bucket_count",
        [](const Rows& numel, double bucket_elements) {
          if (numel.ndim() != 1) throw std::invalid_argument("numel must be one-dimensional");
          return ddp_bucket_count(numel.data(), static_cast<std::size_t>(numel.size()),
                                  bucket_elements);
        }, py::arg("numel"), py::arg("bucket_elements"),
        "Gradient buckets Megatron-Core's DDP builds over tensors walked in the given order.");
  m.def("multi_tensor_apply_floor_s", &multi_tensor_apply_floor_s, py::arg("launches"),
        py::arg("chunk_elements"), py::arg("sms"), py::arg("step_s"),
        "Round-trip floor of multi_tensor_apply launches: launches x waves x steps x step_s.");
  m.def("pipeline_bubble_fraction", py::vectorize(&pipeline_bubble_fraction), py::arg("stages"),
        py::arg("microbatches"), py::arg("virtual_stages"),
        "(p-1)/(v*m+p-1), 0 for one stage.");
  m.def("inflight_microbatches", py::vectorize(&inflight_microbatches), py::arg("stages"),
        py::arg("microbatches"), py::arg("virtual_stages"),
        "Micro-batches of activations the first stage holds at once.");
  m.def("offload_exposed_s", py::vectorize(&offload_exposed_s), py::arg("layers"),
        py::arg("offloaded"), py::arg("fwd_layer_s"), py::arg("bwd_layer_s"),
        py::arg("layer_bytes"), py::arg("host_bytes_per_s"),
        "Seconds a micro-batch waits on Transformer Engine's activation offloading.");
  m.def("tp_overlap_exposed_s", py::vectorize(&tp_overlap_exposed_s), py::arg("comm_s"),
        py::arg("gemm_s"), py::arg("tp"),
        "Exposed TP collective pipelined with its GEMMs: max(comm - gemm, 0) + comm/tp.");
  m.def("checkpointed_layers", py::vectorize(&checkpointed_layers), py::arg("layers"),
        py::arg("every"),
        "Blocks wrapped by selective layer checkpointing every `every`-th: floor(layers/every).");
  m.def("busiest_stage_layers", py::vectorize(&busiest_stage_layers), py::arg("layers"),
        py::arg("stages"),
        "Layers on the busiest pipeline stage (whole layers per stage): ceil(layers/stages).");
  m.def("last_stage_layers", py::vectorize(&last_stage_layers), py::arg("layers"),
        py::arg("stages"),
        "Layers left to the last pipeline stage: max(layers - (stages-1) ceil(layers/stages), 0).");
  m.def("overlapped_pass_s", [](const Rows& gather, const Rows& compute, const Rows& reduce,
                                double comm_sm_fraction) {
    if (gather.ndim() != 1 || compute.ndim() != 1 || reduce.ndim() != 1 ||
        gather.shape(0) != compute.shape(0) || gather.shape(0) != reduce.shape(0)) {
      throw std::invalid_argument("overlapped_pass_s: gather, compute and reduce must be 1-D "
                                  "arrays of one length");
    }
    std::vector<CommUnit> u(static_cast<std::size_t>(gather.shape(0)));
    for (std::size_t k = 0; k < u.size(); ++k) {
      u[k] = {gather.data()[k], compute.data()[k], reduce.data()[k]};
    }
    return overlapped_pass_s(u.data(), u.size(), comm_sm_fraction);
  }, py::arg("gather"), py::arg("compute"), py::arg("reduce"), py::arg("comm_sm_fraction") = 0.0,
     "Wall time of units on one compute stream and one link, one unit prefetched.");
  m.def("a2a_overlap_exposed_s", py::vectorize(&a2a_overlap_exposed_s),
        py::arg("combine_bwd_s"), py::arg("attn_fwd_s"), py::arg("dispatch_s"), py::arg("mlp_s"),
        py::arg("combine_fwd_s"), py::arg("attn_bwd_s"), py::arg("comm_sm_fraction"),
        "Exposed all-to-all of one MoE layer pair in Megatron-Core's combined 1F1B: the sum over "
        "its three phases of max(a - c, f a).");
  m.def("combined_1f1b_pairs", py::vectorize(&combined_1f1b_pairs), py::arg("stages"),
        py::arg("microbatches"), py::arg("virtual_stages"),
        "Overlapped forward/backward chunk pairs of the first stage per step in Megatron-Core's "
        "combined 1F1B: v m - min(v m, 2 (p-1) + (v-1) p + 1).");
  m.def("combined_1f1b_saving_s", py::vectorize(&combined_1f1b_saving_s), py::arg("gpu_s"),
        py::arg("exposed_host_s"), py::arg("a2a_hidden_s"), py::arg("host_issue_s"),
        "What one overlapped layer pair of Megatron-Core's combined 1F1B saves against the plain "
        "schedule's layer: g + e - max(g - a, h).");
  m.def("ring_exposed_s", py::vectorize(&ring_exposed_s), py::arg("send_s"),
        py::arg("attention_s"), py::arg("ranks"),
        "Exposed KV exchange of ring context parallelism: (cp-1)*max(send - attention/cp, 0).");
  m.def("torch_cp_exposed_s", py::vectorize(&torch_cp_exposed_s), py::arg("first_s"),
        py::arg("step_s"), py::arg("kv_s"), py::arg("dkv_s"), py::arg("ranks"),
        py::arg("all_gather"), py::arg("backward"),
        "Exposed K/V (and dK/dV) rotation of one pass of torch's ring SDPA per layer.");
  m.def("pipeline_p2p_s", py::vectorize(&pipeline_p2p_s), py::arg("send_s"), py::arg("stages"),
        py::arg("microbatches"), py::arg("virtual_stages"), py::arg("chunk_s"),
        py::arg("overlapped"),
        "Exposed pipeline sends per step: 2(vm+p-1) sends blocking; 2(p-1) sends plus "
        "2vm*max(send - chunk, 0) overlapped (interleaved, v > 1).");
  m.def("train_memory_fields", [] { return train_memory_fields; });
  m.def("train_step_fields", [] { return train_step_fields; });
  m.def("train_memory_sweep", [](const Rows& in) {
    return sweep(in, train_memory_fields, 5, train_memory_sweep);
  }, py::arg("rows"), "Training memory per packed row: weights, gradients, optimizer, "
     "activations, total (bytes).");
  m.def("train_step_sweep", [](const Rows& in) {
    return sweep(in, train_step_fields, 9, train_step_sweep);
  }, py::arg("rows"), "Training step per packed row: time, compute, bubble, p2p, exposed "
     "comm, comm, optimizer (s), bubble fraction.");
  m.def("kv_capacity_sequences", py::vectorize(&kv_capacity_sequences),
        py::arg("capacity_bytes"), py::arg("usable_fraction"), py::arg("used_bytes"),
        py::arg("kv_bytes_per_sequence"), "Sequences whose KV cache fits.");
  m.def("speculative_tokens_per_step", py::vectorize(&speculative_tokens_per_step),
        py::arg("k"), py::arg("alpha"), "Expected tokens per speculative step.");
  m.def("speculative_tpot_s", py::vectorize(&speculative_tpot_s), py::arg("k"),
        py::arg("alpha"), py::arg("draft_step_s"), py::arg("verify_step_s"),
        "Time per output token with speculative decoding.");
  m.def("chunked_prefill_ttft_s", py::vectorize(&chunked_prefill_ttft_s),
        py::arg("prompt_tokens"), py::arg("chunk_tokens"), py::arg("mixed_step_s"),
        "Time to first token with chunked prefill.");
  m.def("inflight_state", [](double concurrency, double prompt_tokens, double decode_steps,
                             double token_budget, double tokens_per_decode,
                             double chunk_tokens) {
    const InflightState s = inflight_state(concurrency, prompt_tokens, decode_steps,
                                           token_budget, tokens_per_decode, chunk_tokens);
    py::dict out;
    out["decode_seqs"] = s.decode_seqs;
    out["prefill_seqs"] = s.prefill_seqs;
    out["completions_per_step"] = s.completions_per_step;
    out["prefill_tokens_per_step"] = s.prefill_tokens_per_step;
    out["prefill_chunk"] = s.prefill_chunk;
    out["prefill_steps"] = s.prefill_steps;
    out["mixed_fraction"] = s.mixed_fraction;
    out["prefill_tokens_per_mixed_step"] = s.prefill_tokens_per_mixed_step;
    out["budget_bound"] = s.budget_bound;
    return out;
  }, py::arg("concurrency"), py::arg("prompt_tokens"), py::arg("decode_steps"),
     py::arg("token_budget"), py::arg("tokens_per_decode"), py::arg("chunk_tokens"),
     "Steady state of continuous batching with chunked prefill (a dict of per-step terms).");
  m.def("inflight_tokens_per_s", py::vectorize(&inflight_tokens_per_s),
        py::arg("completions_per_step"), py::arg("output_tokens"), py::arg("decode_step_s"),
        py::arg("mixed_step_s"), py::arg("mixed_fraction"),
        "Output tokens/s of the in-flight steady state.");
  m.def("inflight_run", [](std::int64_t num_requests, double arrival_interval_s,
                           double prompt_tokens, double output_tokens, double token_budget,
                           double chunk_tokens, double kv_capacity_pages, double page_tokens,
                           bool reserve, const StepTimeFn& step_s, std::int64_t max_steps,
                           bool mixed_prefill, bool overlap_schedule, bool poisson_arrivals,
                           bool uniform_lengths, const py::object& launch_s,
                           bool worst_case_admission) {
    const InflightRun r = inflight_run(num_requests, arrival_interval_s, prompt_tokens,
                                       output_tokens, token_budget, chunk_tokens,
                                       kv_capacity_pages, page_tokens, reserve, step_s,
                                       max_steps, mixed_prefill, overlap_schedule,
                                       poisson_arrivals, uniform_lengths,
                                       launch_s.is_none() ? StepTimeFn{}
                                                          : launch_s.cast<StepTimeFn>(),
                                       worst_case_admission);
    py::dict out;
    out["makespan_s"] = r.makespan_s;
    out["output_tokens"] = r.output_tokens;
    out["tokens_per_s"] = r.tokens_per_s;
    out["ttft_mean_s"] = r.ttft_mean_s;
    out["ttft_median_s"] = r.ttft_median_s;
    out["itl_mean_s"] = r.itl_mean_s;
    out["itl_median_s"] = r.itl_median_s;
    out["e2e_mean_s"] = r.e2e_mean_s;
    out["steps"] = r.steps;
    out["mixed_steps"] = r.mixed_steps;
    out["peak_running"] = r.peak_running;
    out["mean_decode_seqs"] = r.mean_decode_seqs;
    out["preemptions"] = r.preemptions;
    return out;
  }, py::arg("num_requests"), py::arg("arrival_interval_s"), py::arg("prompt_tokens"),
     py::arg("output_tokens"), py::arg("token_budget"), py::arg("chunk_tokens"),
     py::arg("kv_capacity_pages"), py::arg("page_tokens"), py::arg("reserve"),
     py::arg("step_s"), py::arg("max_steps"), py::arg("mixed_prefill") = true,
     py::arg("overlap_schedule") = false, py::arg("poisson_arrivals") = false,
     py::arg("uniform_lengths") = false, py::arg("launch_s") = py::none(),
     py::arg("worst_case_admission") = false,
     "Finite run of requests through an in-flight-batching engine, step by step (a dict).");
  m.def("poisson_arrival_s", &poisson_arrival_s, py::arg("i"), py::arg("interval_s"),
        "Arrival time of request i of inflight_run's Poisson-like stream.");
  m.def("dollars_per_million_tokens", py::vectorize(&dollars_per_million_tokens),
        py::arg("price_per_gpu_hour"), py::arg("gpus"), py::arg("tokens_per_s"),
        "Dollars per million tokens.");
  m.def("gpu_hours", py::vectorize(&gpu_hours), py::arg("tokens"), py::arg("tokens_per_s"),
        py::arg("gpus"), "GPU-hours to process tokens.");
}
