// Python binding of CastTerms (conversion only: the fields, readable and writable).
#include <pybind11/pybind11.h>

#include "roofline/terms/cast.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers CastTerms on the module.
void bind_cast_terms(py::module_& mod) {
  py::class_<CastTerms>(mod, "CastTerms")
      .def(py::init<>())
      .def_readwrite("amax_fraction", &CastTerms::amax_fraction)
      .def_readwrite("transpose_fraction", &CastTerms::transpose_fraction)
      .def_readwrite("dual_fraction", &CastTerms::dual_fraction)
      .def_readwrite("row_fraction", &CastTerms::row_fraction)
      .def_readwrite("column_fraction", &CastTerms::column_fraction)
      .def_readwrite("column_sm_bytes_per_s", &CastTerms::column_sm_bytes_per_s)
      .def_readwrite("mxfp8_quantize_fraction", &CastTerms::mxfp8_quantize_fraction)
      .def_readwrite("sms", &CastTerms::sms)
      .def("real_kernels", &CastTerms::real_kernels);
}
