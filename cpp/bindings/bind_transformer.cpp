// Bindings for attention and collectives (the transformer building blocks): conversion and
// forwarding only, no formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
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
                     AttentionBackend backend, bool dropout = false) {
  AttentionShape s;
  s.dropout = dropout;
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
                             const Efficiency& eff, AttentionBackend backend, bool dropout,
                             double page_tokens) {
  const std::size_t len =
      equal_length({&batch, &heads, &kv_heads, &q_len, &kv_len, &head_dim, &v_head_dim});
  AttentionShape f = flags(shared_kv, causal, flash, backward, dtype, backend, dropout);
  f.page_tokens = page_tokens;
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
                              AttentionBackend backend, bool dropout, double page_tokens) {
  AttentionShape s = with_dims(flags(shared_kv, causal, flash, backward, dtype, backend, dropout),
                               batch, heads, kv_heads, q_len, kv_len, head_dim, v_head_dim);
  s.page_tokens = page_tokens;
  OpKernels kernels;
  attention_kernels(s, kernels);
  const Rates rates(hw, eff);
  py::list rows;
  for (int i = 0; i < kernels.size; ++i) {
    const OpKernel& k = kernels.items[static_cast<std::size_t>(i)];
    const Estimate e = estimate(k.cost, rates);
    py::dict row = kernel_row(k.name, k.cost, e);
    row["launches"] = k.cost.kernels;  // an entry may stand for several launches of one kind
    rows.append(row);
  }
  return rows;
}


// Attention calls of one format on one hardware and efficiency (Rates computed once): called
// with the sizes and flags it gives one call as floats, backend "auto" (the least over its
// candidates) when `automatic`, else `backend`; the seventh value is the backend code that ran.
class AttentionOne {
 public:
  AttentionOne(const Hardware& hw, const Efficiency& eff, DType dtype, SdpaArch arch)
      : rates_(hw, eff), dtype_(dtype), arch_(arch) {}

  py::tuple operator()(double batch, double heads, double kv_heads, double q_len, double kv_len,
                       double head_dim, double v_head_dim, bool shared_kv, bool causal,
                       bool flash, bool backward, AttentionBackend backend,
                       bool automatic, double page_tokens) const {
    AttentionShape s =
        with_dims(flags(shared_kv, causal, flash, backward, dtype_, backend), batch, heads,
                  kv_heads, q_len, kv_len, head_dim, v_head_dim);
    s.page_tokens = page_tokens;
    AttentionBackend ran = backend;
    const Estimate e = automatic ? attention_auto_estimate(s, arch_, rates_, ran)
                                 : attention_estimate(s, rates_);
    return py::make_tuple(e.time_s, e.compute_s, e.memory_s, e.overhead_s, e.flops, e.bytes,
                          static_cast<int>(ran));
  }

 private:
  Rates rates_;
  DType dtype_;
  SdpaArch arch_;
};

py::tuple attention_auto_sweep_py(const InArray& batch, const InArray& heads,
                                  const InArray& kv_heads, const InArray& q_len,
                                  const InArray& kv_len, const InArray& head_dim,
                                  const InArray& v_head_dim, bool shared_kv, bool causal,
                                  bool flash, bool backward, DType dtype, const Hardware& hw,
                                  const Efficiency& eff, SdpaArch arch, int threads,
                                  bool dropout) {
  const std::size_t len =
      equal_length({&batch, &heads, &kv_heads, &q_len, &kv_len, &head_dim, &v_head_dim});
  const AttentionShape f =
      flags(shared_kv, causal, flash, backward, dtype, AttentionBackend::standard, dropout);
  const Rates rates(hw, eff);
  py::array_t<std::uint8_t> winner(static_cast<py::ssize_t>(len));
  std::uint8_t* w = winner.mutable_data();
  py::tuple cols = estimate_columns(len, [&](EstimateColumns o) {
    attention_auto_sweep(batch.data(), heads.data(), kv_heads.data(), q_len.data(),
                         kv_len.data(), head_dim.data(), v_head_dim.data(), len, f, arch, rates,
                         threads, o, w);
  });
  return py::make_tuple(cols, winner);
}

py::array_t<std::uint8_t> sdpa_backend_sweep_py(const InArray& q_len, const InArray& kv_len,
                                                const InArray& head_dim,
                                                const InArray& v_head_dim, bool shared_kv,
                                                bool causal, bool backward, DType dtype,
                                                SdpaArch arch) {
  const std::size_t len = equal_length({&q_len, &kv_len, &head_dim, &v_head_dim});
  AttentionShape s = flags(shared_kv, causal, true, backward, dtype, AttentionBackend::standard);
  py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(len));
  std::uint8_t* o = out.mutable_data();
  for (std::size_t i = 0; i < len; ++i) {
    s.q_len = q_len.data()[i];
    s.kv_len = kv_len.data()[i];
    s.head_dim = head_dim.data()[i];
    s.v_head_dim = v_head_dim.data()[i];
    o[i] = static_cast<std::uint8_t>(sdpa_backend(s, arch));
  }
  return out;
}

py::tuple collective_sweep_py(Collective op, CollectiveAlgo algo, const InArray& bytes,
                              const InArray& ranks, double bytes_per_s, double latency_s) {
  const std::size_t len = equal_length({&bytes, &ranks});
  const LinkRates link{bytes_per_s, latency_s};
  return estimate_columns(len, [&](EstimateColumns o) {
    collective_sweep(op, algo, bytes.data(), ranks.data(), len, link, o);
  });
}

py::tuple spanning_all_to_all_sweep_py(const InArray& bytes, const InArray& ranks,
                                       const InArray& local, double up_bytes_per_s,
                                       double out_bytes_per_s, double latency_s) {
  const std::size_t len = equal_length({&bytes, &ranks, &local});
  const LinkRates up{up_bytes_per_s, latency_s};
  const LinkRates out{out_bytes_per_s, latency_s};
  return estimate_columns(len, [&](EstimateColumns o) {
    spanning_all_to_all_sweep(bytes.data(), ranks.data(), local.data(), len, up, out, o);
  });
}

py::tuple deepep_exchange_sweep_py(const InArray& bytes, const InArray& ranks,
                                   const InArray& rounds, double local, double node_share,
                                   double up_bytes_per_s, double out_bytes_per_s,
                                   double latency_s) {
  const std::size_t len = equal_length({&bytes, &ranks, &rounds});
  const LinkRates up{up_bytes_per_s, latency_s};
  const LinkRates out{out_bytes_per_s, latency_s};
  return estimate_columns(len, [&](EstimateColumns o) {
    deepep_exchange_sweep(bytes.data(), ranks.data(), rounds.data(), len, local, node_share,
                          up, out, o);
  });
}

py::tuple spanning_collective_sweep_py(Collective op, CollectiveAlgo algo, const InArray& bytes,
                                       const InArray& ranks, const InArray& local,
                                       double up_bytes_per_s, double out_bytes_per_s,
                                       double latency_s, double ll128_channel_bytes_per_s) {
  const std::size_t len = equal_length({&bytes, &ranks, &local});
  const LinkRates up{up_bytes_per_s, latency_s};
  const LinkRates out{out_bytes_per_s, latency_s};
  return estimate_columns(len, [&](EstimateColumns o) {
    spanning_collective_sweep(op, algo, bytes.data(), ranks.data(), local.data(), len, up, out,
                              o, ll128_channel_bytes_per_s);
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
      .value("tree", CollectiveAlgo::tree)
      .value("nccl", CollectiveAlgo::nccl)
      .value("custom", CollectiveAlgo::custom);

  py::enum_<AttentionBackend>(m, "AttentionBackend")
      .value("standard", AttentionBackend::standard)
      .value("flash", AttentionBackend::flash)
      .value("cudnn", AttentionBackend::cudnn)
      .value("efficient", AttentionBackend::efficient)
      .value("math", AttentionBackend::math)
      .value("fa3", AttentionBackend::fa3)
      .value("flashinfer", AttentionBackend::flashinfer)
      .value("flash_triton", AttentionBackend::flash_triton)
      .value("flex", AttentionBackend::flex);
  py::enum_<SdpaArch>(m, "SdpaArch")
      .value("other", SdpaArch::other)
      .value("volta", SdpaArch::volta)
      .value("ampere", SdpaArch::ampere)
      .value("ada", SdpaArch::ada)
      .value("hopper", SdpaArch::hopper)
      .value("blackwell", SdpaArch::blackwell)
      .value("blackwell_consumer", SdpaArch::blackwell_consumer)
      .value("rocm", SdpaArch::rocm);
  py::class_<AttentionOne>(m, "AttentionOne",
                           "One attention call as floats, bound to hardware, efficiency, dtype "
                           "and SDPA architecture: call(batch, heads, kv_heads, q_len, kv_len, "
                           "head_dim, v_head_dim, shared_kv, causal, flash, backward, backend, "
                           "automatic, page_tokens=0) -> (time, compute, memory, overhead, flops, bytes, backend "
                           "code that ran); automatic = backend 'auto'.")
      .def(py::init<const Hardware&, const Efficiency&, DType, SdpaArch>(), py::arg("hardware"),
           py::arg("efficiency"), py::arg("dtype"), py::arg("arch"))
      .def("__call__", &AttentionOne::operator(), py::arg("batch"), py::arg("heads"),
           py::arg("kv_heads"), py::arg("q_len"), py::arg("kv_len"), py::arg("head_dim"),
           py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"), py::arg("flash"),
           py::arg("backward"), py::arg("backend"), py::arg("automatic"),
           py::arg("page_tokens") = 0.0);
  m.def("attention_auto_sweep", &attention_auto_sweep_py, py::arg("batch"), py::arg("heads"),
        py::arg("kv_heads"), py::arg("q_len"), py::arg("kv_len"), py::arg("head_dim"),
        py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"), py::arg("flash"),
        py::arg("backward"), py::arg("dtype"), py::arg("hardware"), py::arg("efficiency"),
        py::arg("arch"), py::arg("threads") = 0, py::arg("dropout") = false,
        "Backend 'auto' over equal-length float64 arrays: ((time, compute, memory, overhead, "
        "flops, bytes), uint8 backend codes).");
  m.def("sdpa_backend_sweep", &sdpa_backend_sweep_py, py::arg("q_len"), py::arg("kv_len"),
        py::arg("head_dim"), py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"),
        py::arg("backward"), py::arg("dtype"), py::arg("arch"),
        "Backend codes SDPA dispatches to over equal-length float64 arrays.");
  m.def("attention_pairs", &attention_pairs, py::arg("q_len"), py::arg("kv_len"),
        py::arg("causal"), "Query-key pairs scored per (sequence, head).");
  m.def("sliding_window_visited_keys", &sliding_window_visited_keys, py::arg("window"),
        "Keys per query a tiled attention kernel scores in a sliding-window layer.");
  m.def("flex_visited_blocks", &flex_visited_blocks, py::arg("q_len"), py::arg("kv_len"),
        py::arg("window"), py::arg("block") = kFlexBlock,
        "BlockMask blocks FlexAttention computes per (sequence, head), causal or sliding.");
  m.def("attention_sweep", &attention_sweep_py, py::arg("batch"), py::arg("heads"),
        py::arg("kv_heads"), py::arg("q_len"), py::arg("kv_len"), py::arg("head_dim"),
        py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"), py::arg("flash"),
        py::arg("backward"), py::arg("dtype"), py::arg("hardware"), py::arg("efficiency"),
        py::arg("backend") = AttentionBackend::standard, py::arg("dropout") = false,
        py::arg("page_tokens") = 0.0,
        "Attention estimates over equal-length float64 arrays: (time, compute, memory, "
        "overhead, flops, bytes).");
  m.def("attention_kernels", &attention_kernels_py, py::arg("batch"), py::arg("heads"),
        py::arg("kv_heads"), py::arg("q_len"), py::arg("kv_len"), py::arg("head_dim"),
        py::arg("v_head_dim"), py::arg("shared_kv"), py::arg("causal"), py::arg("flash"),
        py::arg("backward"), py::arg("dtype"), py::arg("hardware"), py::arg("efficiency"),
        py::arg("backend") = AttentionBackend::standard, py::arg("dropout") = false,
        py::arg("page_tokens") = 0.0,
        "Every kernel of one attention call with its cost and estimate.");
  m.def("collective_sweep", &collective_sweep_py, py::arg("op"), py::arg("algo"),
        py::arg("bytes"), py::arg("ranks"), py::arg("bytes_per_s"), py::arg("latency_s"),
        "Alpha-beta collective estimates over equal-length arrays of buffer bytes and ranks.");
  m.def("spanning_all_to_all_sweep", &spanning_all_to_all_sweep_py, py::arg("bytes"),
        py::arg("ranks"), py::arg("local"), py::arg("up_bytes_per_s"),
        py::arg("out_bytes_per_s"), py::arg("latency_s"),
        "All-to-all over ranks spread on scale-up domains of `local` ranks: the on-domain and "
        "off-domain shares cross their links at once.");
  m.def("deepep_exchange_sweep", &deepep_exchange_sweep_py, py::arg("bytes"), py::arg("ranks"),
        py::arg("rounds"), py::arg("local"), py::arg("node_share"), py::arg("up_bytes_per_s"),
        py::arg("out_bytes_per_s"), py::arg("latency_s"),
        "DeepEP normal-mode exchange kernels: NVLink rows and RDMA rows (once per node) at "
        "once, plus one signal hop per synchronisation round.");
  m.def("spanning_collective_sweep", &spanning_collective_sweep_py, py::arg("op"),
        py::arg("algo"), py::arg("bytes"), py::arg("ranks"), py::arg("local"),
        py::arg("up_bytes_per_s"), py::arg("out_bytes_per_s"), py::arg("latency_s"),
        py::arg("ll128_channel_bytes_per_s") = 0.0,
        "Ring / tree collectives over ranks spread on scale-up domains of `local` ranks: the "
        "rings leave each domain through its ranks' NICs, min(up, ranks there x out); algo "
        "nccl caps LL128's ring at one channel per NIC x ll128_channel_bytes_per_s (<= 0: "
        "none).");
}
