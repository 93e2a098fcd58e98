// Python binding of RowOpTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/row_ops.hpp"
#include "roofline/terms/scaling.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers RowOpTerms, per_sm_bandwidth and gpu_streaming_latency_s on the module.
void bind_row_ops_terms(py::module_& mod) {
  py::class_<RowOpTerms>(mod, "RowOpTerms")
      .def(py::init<>())
      .def_readwrite("small_kernel_ramp_s", &RowOpTerms::small_kernel_ramp_s)
      .def_readwrite("follow_on_s", &RowOpTerms::follow_on_s)
      .def_readwrite("aten_reread", &RowOpTerms::aten_reread)
      .def_readwrite("inductor_reread", &RowOpTerms::inductor_reread)
      .def_readwrite("cta_sm_bytes_per_s", &RowOpTerms::cta_sm_bytes_per_s)
      .def_readwrite("transcendental_flops", &RowOpTerms::transcendental_flops)
      .def_readwrite("l2_bytes", &RowOpTerms::l2_bytes);
  mod.def("per_sm_bandwidth", &per_sm_bandwidth, py::arg("fraction"),
          py::arg("mem_bytes_per_s"), py::arg("sms"),
          "Bytes/s of one SM at a fraction of its share of the DRAM bandwidth.");
  mod.def("gpu_streaming_latency_s", &gpu_streaming_latency_s, py::arg("per_call_latency_s"),
          py::arg("kernel_gap_s"), py::arg("small_kernel_ramp_s"),
          "GPU-side fixed time of a streaming kernel from the per-call latency.");
}
