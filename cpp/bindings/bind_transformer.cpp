// Bindings for attention and collectives (the transformer building blocks): conversion and
// forwarding only, no formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <stdexcept>
#include <string>

#include "roofline/estimate.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/collective.hpp"
#include "roofline/sweep.hpp"
#include "arrays.hpp"

namespace py = pybind11;
using namespace roofline;
using namespace roofline::bindings;

namespace {

AttentionShape flags(bool shared_kv, bool causal, bool flash, bool backward, DType dtype,
                     AttentionBackend backend) {
  AttentionShape s;
  s.backend = backend;
  s.shared_kv = shared_kv;
  s.causal = causal;
  s.flash = flash;
  s.backward = backward;
  s.dtype = dtype;
  return s;
}

py::tuple attention_sweep_py(const InArray& batch, const InArray& heads, const InArray& kv_heads,
                             const InArray& q_len, const InArray& kv_len, const InArray& head_dim,
                             const InArray& v_head_dim, bool shared_kv, bool causal, bool flash,
                             bool backward, DType dtype, const Hardware& hw,
                             const Efficiency& eff, AttentionBackend backend) {
  const std::size_t len =
      equal_length({&batch, &heads, &kv_heads, &q_len, &kv_len, &head_dim, &v_head_dim});
  const AttentionShape f = flags(shared_kv, causal, flash, backward, dtype, backend);
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    attention_sweep(batch.data(), heads.data(), kv_heads.data(), q_len.data(), kv_len.data(),
                    head_dim.data(), v_head_dim.data(), len, f, rates, o);
  });
}

py::list attention_kernels_py(double batch, double heads, double kv_heads, double q_len,
                              double kv_len, double head_dim, double v_head_dim, bool shared_kv,
                              bool causal, bool flash, bool backward, DType dtype,
                              const Hardware& hw, const Efficiency& eff,
                              AttentionBackend backend) {
  AttentionShape s = flags(shared_kv, causal, flash, backward, dtype, backend);
  s.batch = batch;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = head_dim;
  s.v_head_dim = v_head_dim;
  OpKernels kernels;
  attention_kernels(s, kernels);
  const Rates rates(hw, eff);
  py::list rows;
  for (int i = 0; i < kernels.size; ++i) {
    const OpKernel& k = kernels.items[static_cast<std::size_t>(i)];
    const Estimate e = estimate(k.cost, rates);
    rows.append(kernel_row(k.name, k.cost, e));
  }
  return rows;
}

py::tuple collective_sweep_py(Collective op, CollectiveAlgo algo, const InArray& bytes,
                              const InArray& ranks, double bytes_per_s, double latency_s) {
  const std::size_t len = equal_length({&bytes, &ranks});
  const LinkRates link{bytes_per_s, latency_s};
  return estimate_columns(len, [&](EstimateColumns o) {
    collective_sweep(op, algo, bytes.data(), ranks.data(), len, link, o);
  });
}

}  // namespace

void bind_transformer(py::module_& m) {
  py::enum_<Collective>(m, "Collective")
      .value("all_reduce", Collective::all_reduce)
      .value("all_gather", Collective::all_gather)
      .value("reduce_scatter", Collective::reduce_scatter)
      .value("all_to_all", Collective::all_to_all)
      .value("send_recv", Collective::send_recv);
  py::enum_<CollectiveAlgo>(m, "CollectiveAlgo")
      .value("ring", CollectiveAlgo::ring)
      .value("tree", CollectiveAlgo::tree);

  py::enum_<AttentionBackend>(m, "AttentionBackend")
      .value("standard", AttentionBackend::standard)
      .value("flash", AttentionBackend::flash)
      .value("cudnn", AttentionBackend::cudnn)
      .value("efficient", AttentionBackend::efficient)
      .value("math", AttentionBackend::math);
  m.def("attention_pairs", &attention_pairs, py::arg("q_len"), py::arg("kv_len"),
        py::arg("causal"), "Query-key pairs scored per (sequence, head).");
  m.def("attention_sweep", &attention_sweep_py, py::arg("batch"), py::arg("heads"),
        py::arg("kv_heads"), py::arg("q_len"), py::arg("kv_len"), py::arg("head_dim"),
        py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"), py::arg("flash"),
        py::arg("backward"), py::arg("dtype"), py::arg("hardware"), py::arg("efficiency"),
        py::arg("backend") = AttentionBackend::standard,
        "Attention estimates over equal-length float64 arrays: (time, compute, memory, "
        "overhead, flops, bytes).");
  m.def("attention_kernels", &attention_kernels_py, py::arg("batch"), py::arg("heads"),
        py::arg("kv_heads"), py::arg("q_len"), py::arg("kv_len"), py::arg("head_dim"),
        py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"), py::arg("flash"),
        py::arg("backward"), py::arg("dtype"), py::arg("hardware"), py::arg("efficiency"),
        py::arg("backend") = AttentionBackend::standard,
        "Every kernel of one attention call with its cost and estimate.");
  m.def("collective_sweep", &collective_sweep_py, py::arg("op"), py::arg("algo"),
        py::arg("bytes"), py::arg("ranks"), py::arg("bytes_per_s"), py::arg("latency_s"),
        "Alpha-beta collective estimates over equal-length arrays of buffer bytes and ranks.");
}
