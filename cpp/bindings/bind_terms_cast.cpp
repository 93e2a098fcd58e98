// Python binding of CastTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/cast.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers CastTerms on the module.
void bind_cast_terms(py::module_& mod) {
  py::class_<CastTerms>(mod, "CastTerms")
      .def(py::init<>());
}
