// Python binding of RowOpTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/row_ops.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers RowOpTerms on the module.
void bind_row_ops_terms(py::module_& mod) {
  py::class_<RowOpTerms>(mod, "RowOpTerms")
      .def(py::init<>());
}
