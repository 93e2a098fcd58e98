// Python binding of HostTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/host.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers HostTerms on the module.
void bind_host_terms(py::module_& mod) {
  py::class_<HostTerms>(mod, "HostTerms")
      .def(py::init<>())
      .def_readwrite("eager_launch_s", &HostTerms::eager_launch_s)
      .def_readwrite("compiled_launch_s", &HostTerms::compiled_launch_s)
      .def_readwrite("compiled_call_s", &HostTerms::compiled_call_s)
      .def_readwrite("compiled_region_s", &HostTerms::compiled_region_s)
      .def_readwrite("compiled_forward_s", &HostTerms::compiled_forward_s)
      .def_readwrite("torchao_call_s", &HostTerms::torchao_call_s)
      .def_readwrite("graph_launch_s", &HostTerms::graph_launch_s)
      .def_readwrite("kernel_gap_s", &HostTerms::kernel_gap_s)
      .def_readwrite("kernel_latency_s", &HostTerms::kernel_latency_s)
      .def_readwrite("op_view_launches", &HostTerms::op_view_launches)
      .def_readwrite("op_kernel_launches", &HostTerms::op_kernel_launches)
      .def_readwrite("op_gemm_launches", &HostTerms::op_gemm_launches)
      .def_readwrite("op_attention_launches", &HostTerms::op_attention_launches)
      .def_readwrite("module_call_launches", &HostTerms::module_call_launches)
      .def_readwrite("op_backward_launches", &HostTerms::op_backward_launches)
      .def_readwrite("step_call_launches", &HostTerms::step_call_launches);
}
