// Python binding of AttentionTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/attention.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers AttentionTerms on the module.
void bind_attention_terms(py::module_& mod) {
  py::class_<AttentionTerms>(mod, "AttentionTerms")
      .def(py::init<>());
}
