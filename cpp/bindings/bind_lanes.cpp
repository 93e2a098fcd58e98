// A check of the eight-shape path (tests only): streaming kernels estimated eight at a time
// (estimate_lane_times on CostT<Lanes>) beside the same costs one at a time. Conversion and
// forwarding only, no formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <stdexcept>

#include "roofline/estimate.hpp"
#include "arrays.hpp"

namespace py = pybind11;
using namespace roofline;
using namespace roofline::bindings;

namespace {

py::tuple memory_lane_check_py(const InArray& flops, const InArray& bytes_read,
                               const InArray& bytes_written, const InArray& kernels,
                               const InArray& bandwidth_fraction, const InArray& rows,
                               const InArray& ctas_per_sm, const InArray& row_bytes,
                               const InArray& reread_bytes, const InArray& transcendentals,
                               const InArray& strided_elements, int row_kernel, PeakClass math,
                               const Hardware& hw, const Efficiency& eff) {
  if (row_kernel < 0 || row_kernel > static_cast<int>(RowKernel::inductor)) {
    throw std::invalid_argument("memory_lane_check: row_kernel must be 0..4, got " +
                                std::to_string(row_kernel));
  }
  const std::size_t len =
      equal_length({&flops, &bytes_read, &bytes_written, &kernels, &bandwidth_fraction, &rows,
                    &ctas_per_sm, &row_bytes, &reread_bytes, &transcendentals,
                    &strided_elements});
  const Rates rates(hw, eff);
  py::array_t<double> lanes(static_cast<py::ssize_t>(len)), one(static_cast<py::ssize_t>(len));
  double* out_lanes = lanes.mutable_data();
  double* out_one = one.mutable_data();
  GemmMemo memo;
  CostT<Lanes> c;
  c.kind = KernelKind::memory;
  c.math = math;
  c.row_kernel = static_cast<RowKernel>(row_kernel);
  for (std::size_t start = 0; start < len; start += kLaneCount) {
    for (std::size_t l = 0; l < kLaneCount; ++l) {
      const std::size_t i = std::min(start + l, len - 1);
      c.flops[l] = flops.data()[i];
      c.bytes_read[l] = bytes_read.data()[i];
      c.bytes_written[l] = bytes_written.data()[i];
      c.kernels[l] = kernels.data()[i];
      c.bandwidth_fraction[l] = bandwidth_fraction.data()[i];
      c.rows[l] = rows.data()[i];
      c.ctas_per_sm[l] = ctas_per_sm.data()[i];
      c.row_bytes[l] = row_bytes.data()[i];
      c.reread_bytes[l] = reread_bytes.data()[i];
      c.transcendentals[l] = transcendentals.data()[i];
      c.strided_elements[l] = strided_elements.data()[i];
    }
    const Lanes t = estimate_lane_times(c, rates, memo);
    for (std::size_t l = 0; l < kLaneCount && start + l < len; ++l) {
      out_lanes[start + l] = t[l];
      out_one[start + l] = estimate(lane_cost(c, l), rates, memo).time_s;
    }
  }
  return py::make_tuple(lanes, one);
}

}  // namespace

/// Registers memory_lane_check.
void bind_lanes(py::module_& mod) {
  mod.def("memory_lane_check", &memory_lane_check_py, py::arg("flops"), py::arg("bytes_read"),
          py::arg("bytes_written"), py::arg("kernels"), py::arg("bandwidth_fraction"),
          py::arg("rows"), py::arg("ctas_per_sm"), py::arg("row_bytes"),
          py::arg("reread_bytes"), py::arg("transcendentals"), py::arg("strided_elements"),
          py::arg("row_kernel"), py::arg("math"), py::arg("hardware"), py::arg("efficiency"),
          "Streaming-kernel times eight at a time (estimate_lane_times) and one at a time "
          "(estimate), for tests: (lanes, one) arrays that must agree bit for bit.");
}
