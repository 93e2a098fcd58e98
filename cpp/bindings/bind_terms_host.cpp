// Python binding of HostTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/host.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers HostTerms on the module.
void bind_host_terms(py::module_& mod) {
  py::class_<HostTerms>(mod, "HostTerms")
      .def(py::init<>());
}
