// Bindings for grouped GEMMs and row-wise ops (norms, softmax, cross entropy): conversion and
// forwarding only, no formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>

#include "roofline/estimate.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/grouped_gemm.hpp"
#include "roofline/ops/norm.hpp"
#include "roofline/ops/reduce.hpp"
#include "roofline/ops/select.hpp"
#include "roofline/ops/weight_only_gemm.hpp"
#include "roofline/sweep.hpp"
#include "arrays.hpp"

namespace py = pybind11;
using namespace roofline;
using namespace roofline::bindings;

namespace {

GroupedGemmShape formats(DType a, DType b, DType out, GroupedLayout layout, Scaling scaling,
                         bool accumulate) {
  GroupedGemmShape s;
  s.scaling = scaling;
  s.accumulate = accumulate;
  s.a = a;
  s.b = b;
  s.out = out;
  s.layout = layout;
  return s;
}

py::tuple grouped_gemm_sweep_py(const InArray& m_per_group, const InArray& k, const InArray& n,
                                const InArray& groups, DType a, DType b, DType out,
                                const Hardware& hw, const Efficiency& eff, Scaling scaling,
                                bool accumulate) {
  const std::size_t len = equal_length({&m_per_group, &k, &n, &groups});
  const GroupedGemmShape f = formats(a, b, out, GroupedLayout::contiguous, scaling, accumulate);
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    grouped_gemm_sweep(m_per_group.data(), k.data(), n.data(), groups.data(), len, f, rates, o);
  });
}

py::tuple grouped_gemm_counts_sweep_py(const InArray& counts, const InArray& capacity,
                                       const InArray& k, const InArray& n, DType a, DType b,
                                       DType out, GroupedLayout layout, const Hardware& hw,
                                       const Efficiency& eff, Scaling scaling, bool accumulate) {
  const std::size_t len = equal_length({&capacity, &k, &n});
  if (counts.ndim() != 2 || static_cast<std::size_t>(counts.shape(0)) != len) {
    throw std::invalid_argument("internal: counts must be (points, groups)");
  }
  const auto n_groups = static_cast<std::size_t>(counts.shape(1));
  const GroupedGemmShape f = formats(a, b, out, layout, scaling, accumulate);
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    grouped_gemm_counts_sweep(counts.data(), n_groups, capacity.data(), k.data(), n.data(), len,
                              f, rates, o);
  });
}

// The flags of a weight-only GEMM call (formats, weight bits, scale groups, zero points).
WeightOnlyGemmShape weight_only_shape(DType a, DType out, double weight_bits, double group_size,
                                      bool zero_points) {
  WeightOnlyGemmShape f;
  f.a = a;
  f.out = out;
  f.weight_bits = weight_bits;
  f.group_size = group_size;
  f.zero_points = zero_points;
  return f;
}

py::tuple weight_only_gemm_sweep_py(const InArray& m, const InArray& k, const InArray& n, DType a,
                                   DType out, double weight_bits, double group_size,
                                   bool zero_points, WeightOnlyKernel kernel, const Hardware& hw,
                                   const Efficiency& eff) {
  const std::size_t len = equal_length({&m, &k, &n});
  WeightOnlyGemmShape f = weight_only_shape(a, out, weight_bits, group_size, zero_points);
  f.kernel = kernel;
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    weight_only_gemm_sweep(m.data(), k.data(), n.data(), len, f, rates, o);
  });
}

py::tuple weight_only_grouped_sweep_py(const InArray& counts, const InArray& k, const InArray& n,
                                      DType a, DType out, double weight_bits, double group_size,
                                      bool zero_points, const Hardware& hw,
                                      const Efficiency& eff) {
  const std::size_t len = equal_length({&k, &n});
  if (counts.ndim() != 2 || static_cast<std::size_t>(counts.shape(0)) != len) {
    throw std::invalid_argument("internal: counts must be (points, groups)");
  }
  const auto n_groups = static_cast<std::size_t>(counts.shape(1));
  const WeightOnlyGemmShape f = weight_only_shape(a, out, weight_bits, group_size, zero_points);
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    weight_only_grouped_sweep(counts.data(), n_groups, k.data(), n.data(), len, f, rates, o);
  });
}

py::tuple row_op_sweep_py(RowOp op, const InArray& rows, const InArray& cols, DType dtype,
                          bool backward, bool save_stats, const Hardware& hw,
                          const Efficiency& eff, RowBackend backend) {
  const std::size_t len = equal_length({&rows, &cols});
  RowOpShape f;
  f.dtype = dtype;
  f.backward = backward;
  f.save_stats = save_stats;
  f.backend = backend;
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    row_op_sweep(op, rows.data(), cols.data(), len, f, rates, o);
  });
}

py::dict row_op_cost_py(RowOp op, double rows, double cols, DType dtype, bool backward,
                        bool save_stats, RowBackend backend) {
  const Cost c = row_op_cost(op, RowOpShape{rows, cols, dtype, backward, save_stats, backend});
  py::dict d;
  d["flops"] = c.flops;
  d["bytes_read"] = c.bytes_read;
  d["bytes_written"] = c.bytes_written;
  d["kernels"] = c.kernels;
  d["reread_bytes"] = c.reread_bytes;
  d["transcendentals"] = c.transcendentals;
  d["issue_lane_ops"] = c.issue_lane_ops;
  return d;
}

py::tuple elementwise_sweep_py(const InArray& numel, const InArray& reads, const InArray& writes,
                               double flops_per_element, DType dtype, const Hardware& hw,
                               const Efficiency& eff, double kernels) {
  const std::size_t len = equal_length({&numel, &reads, &writes});
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    for (std::size_t i = 0; i < len; ++i) {
      ElementwiseShape s;
      s.numel = numel.data()[i];
      s.reads = reads.data()[i];
      s.writes = writes.data()[i];
      s.flops_per_element = flops_per_element;
      s.dtype = dtype;
      s.kernels = kernels;
      const Estimate e = estimate(elementwise_cost(s), rates);
      o.set(i, e);
    }
  });
}

}  // namespace

void bind_ops(py::module_& m) {
  py::enum_<GroupedLayout>(m, "GroupedLayout")
      .value("contiguous", GroupedLayout::contiguous)
      .value("masked", GroupedLayout::masked)
      .value("looped", GroupedLayout::looped)
      .value("looped_wgrad", GroupedLayout::looped_wgrad)
      .value("fused_moe", GroupedLayout::fused_moe);
  py::enum_<WeightOnlyKernel>(m, "WeightOnlyKernel")
      .value("marlin", WeightOnlyKernel::marlin)
      .value("machete", WeightOnlyKernel::machete);
  py::enum_<RowOp>(m, "RowOp")
      .value("rmsnorm", RowOp::rmsnorm)
      .value("layernorm", RowOp::layernorm)
      .value("softmax", RowOp::softmax)
      .value("cross_entropy", RowOp::cross_entropy)
      .value("log_softmax", RowOp::log_softmax);
  py::enum_<RowBackend>(m, "RowBackend")
      .value("fused", RowBackend::fused)
      .value("eager", RowBackend::eager)
      .value("compiled", RowBackend::compiled);

  m.def("grouped_gemm_sweep", &grouped_gemm_sweep_py, py::arg("m_per_group"), py::arg("k"),
        py::arg("n"), py::arg("groups"), py::arg("a"), py::arg("b"), py::arg("out"),
        py::arg("hardware"), py::arg("efficiency"), py::arg("scaling") = Scaling::none,
        py::arg("accumulate") = false,
        "Uniform grouped GEMM estimates over equal-length arrays: (time, compute, memory, "
        "overhead, flops, bytes); accumulate: each C is read and added to (beta = 1).");
  m.def("grouped_gemm_counts_sweep", &grouped_gemm_counts_sweep_py, py::arg("counts"),
        py::arg("capacity"), py::arg("k"), py::arg("n"), py::arg("a"), py::arg("b"),
        py::arg("out"), py::arg("layout"), py::arg("hardware"), py::arg("efficiency"),
        py::arg("scaling") = Scaling::none, py::arg("accumulate") = false,
        "Grouped GEMM estimates with per-group row counts (points x groups); accumulate: each "
        "C_g is read and added to (beta = 1).");
  m.def("weight_only_gemm_sweep", &weight_only_gemm_sweep_py, py::arg("m"), py::arg("k"),
        py::arg("n"), py::arg("a"), py::arg("out"), py::arg("weight_bits"),
        py::arg("group_size"), py::arg("zero_points"), py::arg("kernel"), py::arg("hardware"),
        py::arg("efficiency"),
        "Weight-only quantized GEMM (Marlin) estimates over equal-length arrays: (time, "
        "compute, memory, overhead, flops, bytes).");
  m.def("weight_only_grouped_sweep", &weight_only_grouped_sweep_py, py::arg("counts"),
        py::arg("k"), py::arg("n"), py::arg("a"), py::arg("out"), py::arg("weight_bits"),
        py::arg("group_size"), py::arg("zero_points"), py::arg("hardware"),
        py::arg("efficiency"),
        "Grouped (MoE) weight-only GEMM (fused Marlin MoE) estimates with per-expert row "
        "counts (points x groups).");
  m.def("row_op_sweep", &row_op_sweep_py, py::arg("op"), py::arg("rows"), py::arg("cols"),
        py::arg("dtype"), py::arg("backward"), py::arg("save_stats"), py::arg("hardware"),
        py::arg("efficiency"), py::arg("backend") = RowBackend::fused,
        "Row-wise op (norm, softmax, cross entropy) estimates over equal-length arrays.");
  m.def("row_op_cost", &row_op_cost_py, py::arg("op"), py::arg("rows"), py::arg("cols"),
        py::arg("dtype"), py::arg("backward"), py::arg("save_stats"),
        py::arg("backend") = RowBackend::fused,
        "FLOPs, bytes read and written, kernels, re-read bytes and transcendentals of one "
        "row-wise op.");
  m.def("elementwise_sweep", &elementwise_sweep_py, py::arg("numel"), py::arg("reads"),
        py::arg("writes"), py::arg("flops_per_element"), py::arg("dtype"), py::arg("hardware"),
        py::arg("efficiency"), py::arg("kernels") = 1.0,
        "Elementwise kernel estimates over equal-length arrays (numel, reads, writes; a chain "
        "of `kernels` launched back to back moving those totals).");
  m.def("masked_attention_chain_s", &masked_attention_chain_s, py::arg("tiles"), py::arg("sms"),
        py::arg("kv_blocks"), py::arg("round_trips_per_block"), py::arg("round_trips_per_tile"),
        py::arg("step_s"),
        "Latency chain of an attention forward waiting on each KV block's loads in turn: "
        "ceil(tiles / sms) x (kv_blocks x round_trips_per_block + round_trips_per_tile) x "
        "step_s.");
  m.def("full_reduce_threads", &full_reduce_threads, py::arg("numel"), py::arg("vec"),
        "Threads of aten's reduce_kernel for a full reduction: last_pow2(numel / vec), at "
        "most 512.");
  m.def("full_reduce_blocks", &full_reduce_blocks, py::arg("numel"), py::arg("vec"),
        py::arg("sms"),
        "Blocks (ctas_per_output) of aten's full reduction: max(ceil(v / 256), min(sms x "
        "2048 / threads, ceil(v / 16))) once v = ceil(numel / threads) >= 256, else 1.");
  m.def("full_reduce_loads", &full_reduce_loads, py::arg("numel"), py::arg("vec"),
        py::arg("sms"), "Vector loads each thread of aten's full reduction issues in turn.");
  m.def("full_reduce_chain_s", &full_reduce_chain_s, py::arg("numel"), py::arg("vec"),
        py::arg("bytes_s"), py::arg("sms"),
        "Latency chain of aten's full reduction beyond its launch: max(loads, bytes_s + 1 "
        "round trip) plus 3 round trips of the global tail with several blocks.");
  m.def("topk_multiblock", &topk_multiblock, py::arg("slices"), py::arg("slice_len"),
        "Whether aten runs the multi-block top-k (PyTorch's should_use_multiblock heuristic).");
  m.def("topk_block_warps", &topk_block_warps, py::arg("slice_len"),
        "Warps per block of aten's single-block top-k: min(roundup(slice_len, 32), 1024) / 32.");
  m.def("topk_select_s", &topk_select_s, py::arg("slices"), py::arg("slice_len"),
        py::arg("radix_bits"), py::arg("sms"), py::arg("clock_hz"),
        "Busy time of aten's single-block top-k radix select (sbtopk::gatherTopK): max(issue, "
        "one block's latency) over radix_bits / 2 + 1 barrier-synchronized steps per slice.");
  m.def("topk_bitonic_sort_s", &topk_bitonic_sort_s, py::arg("slices"), py::arg("sms"),
        py::arg("clock_hz"),
        "Busy time of aten's in-place bitonic sort of k <= 32 top-k values per slice "
        "(16 slices per 256-thread block, 15 stages).");
  m.def("topk_multiblock_passes", &topk_multiblock_passes, py::arg("itemsize"),
        "Radix passes of aten's multi-block top-k: one per 8-bit digit (itemsize).");
  m.def("topk_multiblock_items_per_thread", &topk_multiblock_items_per_thread,
        py::arg("slices"), py::arg("slice_len"), py::arg("sms"),
        "Items per thread of aten's multi-block top-k: clamp(ceil(slices x slice_len / "
        "(sms x 6 x 256)), 4, 64).");
  m.def("topk_multiblock_blocks_per_slice", &topk_multiblock_blocks_per_slice,
        py::arg("slices"), py::arg("slice_len"), py::arg("sms"),
        "Blocks per slice of aten's multi-block top-k: ceil(slice_len / (items x 256)).");
  m.def("topk_multiblock_launches", &topk_multiblock_launches, py::arg("itemsize"),
        "Kernels one multi-block top-k launches: 9 + 3 x passes.");
  m.def("topk_multiblock_s", &topk_multiblock_s, py::arg("slices"), py::arg("slice_len"),
        py::arg("itemsize"), py::arg("sms"), py::arg("clock_hz"),
        "Busy time of aten's multi-block top-k kernels beyond their launches: per pass digit "
        "counts, digit cumsum and within-k counts, then the gather, each waves x (base + round "
        "trips + block scans) of 6 blocks per SM.");
  m.def("block_radix_sort_threads", &block_radix_sort_threads, py::arg("slice_len"),
        "Threads per block of aten's in-place radix sort of a slice (32 items each: 4096 keys "
        "-> 128, 2048 -> 64, 256-1024 -> 32; 32 threads of 4 items up to 128).");
  m.def("block_radix_sort_items", &block_radix_sort_items, py::arg("slice_len"),
        "Items per thread of aten's in-place radix sort: 32 (4 up to 128 keys).");
  m.def("block_radix_sort_s", &block_radix_sort_s, py::arg("slices"), py::arg("slice_len"),
        py::arg("key_bytes"), py::arg("value_bytes"), py::arg("sms"), py::arg("clock_hz"),
        "Busy time of aten's radixSortKVInPlace (cub BlockRadixSort, 4-bit passes over every "
        "key bit): per pass the items' shared-memory counter chain, one barrier step and the "
        "key/value exchange, ceil(slices / sms) waves.");
  m.def("radix_sort_lookback_s", &radix_sort_lookback_s, py::arg("passes"),
        "Look-back chain time of cub's onesweep passes beyond launch and bytes: passes x "
        "kOnesweepLookbackS.");
  m.def("radix_sort_passes", &radix_sort_passes, py::arg("key_bits"),
        "Passes of cub's onesweep radix sort: ceil(key_bits / 8).");
  m.def("radix_sort_launches", &radix_sort_launches, py::arg("passes"),
        "Kernels torch's one-segment stable sort launches through cub: 2 x passes + 6.");
  m.def("radix_sort_bytes", &radix_sort_bytes, py::arg("n"), py::arg("key_bytes"),
        "DRAM bytes of a one-segment cub radix sort of n keys with int64 indices: the "
        "histogram's read plus, per pass, keys and values read and written.");
  m.def("index_gather_chain_s", &index_gather_chain_s, py::arg("grid"), py::arg("block"),
        py::arg("elements"), py::arg("index_tensors"), py::arg("sms"),
        "Latency chain of aten's index_elementwise_kernel: waves x min(4, items per thread) x "
        "(index tensors + 1) dependent global loads of kBlockRoundTripS.");
  m.def("index_gather_outputs", &index_gather_outputs, py::arg("grid"), py::arg("block"),
        "Outputs a launch of aten's index_elementwise_kernel covers at most: grid x block x 4.");
  m.def("scatter_chain_s", &scatter_chain_s, py::arg("n"), py::arg("sms"),
        "Latency chain of aten's scatter_ of n index elements: waves x min(8, items per "
        "thread) dependent index loads of kBlockRoundTripS (128-thread blocks of 8 items).");
  m.def("index_put_launches", &index_put_launches, py::arg("n"), py::arg("passes"),
        "Kernels of aten's accumulating index_put: cub's radix sort of the n indices (1 "
        "single-tile kernel up to 2304 keys, else 2 x passes + 4) and indexing_backward_kernel.");
  m.def("index_put_accumulate_chain_s", &index_put_accumulate_chain_s, py::arg("n"),
        py::arg("unique_rows"), py::arg("slice"), py::arg("sms"), py::arg("step_s"),
        "Time of aten's indexing_backward_kernel: ceil(chains / (sms x 16 x clamp(4 / dups, 1, "
        "4))) x dups x step_s, chains = unique_rows x ceil(slice / 128), dups = n / unique_rows.");
  m.def("nonzero_launches", &nonzero_launches, py::arg("numel"), py::arg("ndim"),
        "Kernels torch.nonzero launches on CUDA: cub's count (1 kernel up to 4096 items, else "
        "2), cub's select (2) and write_indices when ndim > 1 (1); 0 when empty.");
  m.def("nll_loss_threads", &nll_loss_threads, py::arg("rows"),
        "Threads of aten's one-block nll_loss kernels: clamp(2^round(log2(rows / 16)), 32, "
        "1024).");
  m.def("nll_loss_chain_s", &nll_loss_chain_s, py::arg("rows"), py::arg("round_trips"),
        py::arg("step_s"),
        "Time of aten's one-block nll_loss kernel: ceil(rows / nll_loss_threads(rows)) x "
        "round_trips x step_s.");
  m.def("aten_loop_floor_s",
        [](double numel, double sms, double step_s, double threads_per_sm) {
          return aten_loop_floor_s(numel, sms, threads_per_sm, step_s);
        },
        py::arg("numel"), py::arg("sms"), py::arg("step_s"),
        py::arg("threads_per_sm") = kAtenLoopThreadsPerSm,
        "Time floor of aten's non-vectorized elementwise kernel: ceil(numel / (sms x "
        "threads_per_sm)) dependent load -> store steps of step_s.");
}
