// Python binding of GemmTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/gemm.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers GemmTerms on the module.
void bind_gemm_terms(py::module_& mod) {
  py::class_<GemmTerms>(mod, "GemmTerms")
      .def(py::init<>());
}
