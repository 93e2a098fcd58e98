// Python bindings of the standalone float8 cast (conversion and forwarding only).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "roofline/efficiency.hpp"
#include "roofline/estimate.hpp"
#include "roofline/hardware.hpp"
#include "roofline/ops/cast.hpp"
#include "roofline/ops/float8_linear.hpp"
#include "arrays.hpp"

namespace py = pybind11;
using namespace roofline;
using namespace roofline::bindings;

namespace {

py::tuple float8_cast_sweep_py(const InArray& rows, const InArray& cols, CastGranularity g,
                               bool transpose, const Hardware& hw, const Efficiency& eff) {
  const std::size_t len = equal_length({&rows, &cols});
  const double* r = rows.data();
  const double* c = cols.data();
  return estimate_columns(len, [&](EstimateColumns o) {
    const Rates rates(hw, eff);
    for (std::size_t i = 0; i < len; ++i) {
      const Estimate e = float8_cast_estimate(r[i], c[i], g, transpose, rates);
      o.set(i, e);
    }
  });
}

py::list float8_cast_kernels_py(double rows, double cols, CastGranularity g, bool transpose,
                                const Hardware& hw, const Efficiency& eff) {
  KernelList kernels;
  float8_cast_kernels(rows, cols, g, transpose, eff.cast, kernels);
  const Rates rates(hw, eff);
  py::list out;
  for (int i = 0; i < kernels.size; ++i) {
    const NamedCost& nc = kernels.items[static_cast<std::size_t>(i)];
    out.append(kernel_row(nc.name, nc.cost, estimate(nc.cost, rates)));
  }
  return out;
}

}  // namespace

/// Registers CastGranularity, float8_cast_sweep and float8_cast_kernels on the module.
void bind_float8(py::module_& mod) {
  py::enum_<CastGranularity>(mod, "CastGranularity")
      .value("tensorwise", CastGranularity::tensorwise)
      .value("rowwise", CastGranularity::rowwise);
  mod.def("float8_cast_sweep", &float8_cast_sweep_py, py::arg("rows"), py::arg("cols"),
          py::arg("granularity"), py::arg("transpose"), py::arg("hardware"),
          py::arg("efficiency"),
          "Compiled bf16 -> float8 cast estimates over equal-length arrays: (time, compute, "
          "memory, overhead, flops, bytes).");
  mod.def("float8_cast_kernels", &float8_cast_kernels_py, py::arg("rows"), py::arg("cols"),
          py::arg("granularity"), py::arg("transpose"), py::arg("hardware"),
          py::arg("efficiency"), "Every kernel of one compiled float8 cast with its estimate.");
}
