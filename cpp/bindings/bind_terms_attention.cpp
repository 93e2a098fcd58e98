// Python binding of AttentionTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/attention.hpp"
#include "roofline/terms/scaling.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers AttentionBackendTerms, AttentionTerms, Fa3Tile, fa3_tile and
/// flash_fraction_per_sm_clock.
void bind_attention_terms(py::module_& mod) {
  py::class_<Fa3Tile>(mod, "Fa3Tile")
      .def_readonly("block_m", &Fa3Tile::block_m)
      .def_readonly("block_n", &Fa3Tile::block_n);
  mod.def("fa3_tile", &fa3_tile, py::arg("head_dim"), py::arg("v_head_dim"), py::arg("causal"),
          py::arg("element_bytes"), py::arg("paged_non_tma"),
          "FlashAttention-3's sm90 forward tile (kBlockM x kBlockN) for these head dims.");
  py::class_<AttentionBackendTerms>(mod, "AttentionBackendTerms")
      .def(py::init<>())
      .def_readwrite("fraction", &AttentionBackendTerms::fraction)
      .def_readwrite("bwd_fraction", &AttentionBackendTerms::bwd_fraction)
      .def_readwrite("decode_fraction", &AttentionBackendTerms::decode_fraction)
      .def_readwrite("q_tile", &AttentionBackendTerms::q_tile)
      .def_readwrite("kv_tile", &AttentionBackendTerms::kv_tile)
      .def_readwrite("decode_rows", &AttentionBackendTerms::decode_rows)
      .def_readwrite("no_split_kv", &AttentionBackendTerms::no_split_kv)
      .def_readwrite("no_pack_gqa", &AttentionBackendTerms::no_pack_gqa)
      .def_readwrite("bwd_tile_overhead", &AttentionBackendTerms::bwd_tile_overhead)
      .def_readwrite("call_s", &AttentionBackendTerms::call_s)
      .def_readwrite("bwd_call_s", &AttentionBackendTerms::bwd_call_s)
      .def_readwrite("decode_call_s", &AttentionBackendTerms::decode_call_s)
      .def_readwrite("bandwidth_scale", &AttentionBackendTerms::bandwidth_scale)
      .def_readwrite("cta_bytes_per_s", &AttentionBackendTerms::cta_bytes_per_s)
      .def_readwrite("softmax_flops", &AttentionBackendTerms::softmax_flops)
      .def_readwrite("paged_bandwidth_scale", &AttentionBackendTerms::paged_bandwidth_scale)
      .def_readwrite("kernel_latency_s", &AttentionBackendTerms::kernel_latency_s)
      .def_readwrite("separate_dq", &AttentionBackendTerms::separate_dq);
  py::class_<AttentionTerms>(mod, "AttentionTerms")
      .def(py::init<>())
      .def_readwrite("flash", &AttentionTerms::flash)
      .def_readwrite("cudnn", &AttentionTerms::cudnn)
      .def_readwrite("efficient", &AttentionTerms::efficient)
      .def_readwrite("fa3", &AttentionTerms::fa3)
      .def_readwrite("flashinfer", &AttentionTerms::flashinfer)
      .def_readwrite("flash_triton", &AttentionTerms::flash_triton)
      .def_readwrite("flex", &AttentionTerms::flex)
      .def_readwrite("strided_element_flops", &AttentionTerms::strided_element_flops);
  mod.def("flash_fraction_per_sm_clock", &flash_fraction_per_sm_clock, py::arg("ref_fraction"),
          py::arg("ref_bf16_flops_per_s"), py::arg("ref_bf16_fraction"), py::arg("ref_sms"),
          py::arg("ref_clock_hz"), py::arg("bf16_flops_per_s"), py::arg("bf16_fraction"),
          py::arg("sms"), py::arg("clock_hz"),
          "FlashAttention-2's fraction of the GEMM rate, carried per SM and clock.");
}
