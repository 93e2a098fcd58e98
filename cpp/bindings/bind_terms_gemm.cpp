// Python binding of GemmTerms (conversion only: the fields, readable and writable).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "roofline/estimate.hpp"
#include "roofline/terms/gemm.hpp"
#include "roofline/terms/scaling.hpp"

namespace py = pybind11;

using namespace roofline;

/// Registers GemmTerms, gemm_throttle_fraction and the sustained- and limited-clock GEMM times.
void bind_gemm_terms(py::module_& mod) {
  py::class_<GemmTerms>(mod, "GemmTerms")
      .def(py::init<>())
      .def_readwrite("latency_s", &GemmTerms::latency_s)
      .def_readwrite("rowwise_latency_s", &GemmTerms::rowwise_latency_s)
      .def_readwrite("memory_fraction", &GemmTerms::memory_fraction)
      .def_readwrite("throttle_fraction", &GemmTerms::throttle_fraction)
      .def_readwrite("throttle_time_s", &GemmTerms::throttle_time_s)
      .def_readwrite("rowwise_max_splits", &GemmTerms::rowwise_max_splits)
      .def_readwrite("rowwise_min_tile_n", &GemmTerms::rowwise_min_tile_n)
      .def_readwrite("unaligned_fraction", &GemmTerms::unaligned_fraction)
      .def_readwrite("compute_scale_16", &GemmTerms::compute_scale_16)
      .def_readwrite("compute_scale_8", &GemmTerms::compute_scale_8)
      .def_readwrite("grouped_compute_fraction", &GemmTerms::grouped_compute_fraction)
      .def_readwrite("grouped_latency_s", &GemmTerms::grouped_latency_s);
  mod.def("gemm_throttle_fraction", &gemm_throttle_fraction, py::arg("fitted"),
          py::arg("reference_flops_per_w"), py::arg("bf16_flops_per_s"), py::arg("tdp_w"),
          "Sustained clock fraction of a GEMM on an accelerator from the reference's fit.");
  mod.def("sustained_compute_s", py::vectorize(&sustained_compute_s), py::arg("compute_s"),
          py::arg("throttle_fraction"), py::arg("throttle_time_s"),
          "Compute time of a GEMM under continuous tensor load (clock settled at the "
          "throttle fraction), from its compute time run alone.");
  mod.def("sustained_gemm_time_s", py::vectorize(&sustained_gemm_time_s), py::arg("time_s"),
          py::arg("compute_s"), py::arg("memory_s"), py::arg("throttle_fraction"),
          py::arg("throttle_time_s"), py::arg("overlap_p"),
          "Time of a GEMM under continuous tensor load, from its time run alone.");
  mod.def("limiter_load", py::vectorize(&limiter_load), py::arg("busy_s"),
          py::arg("since_start_s"), py::arg("window_s"), py::arg("prior_load"),
          "Power limiter's load: busy fraction of the window, its pre-trace part at prior_load.");
  mod.def("limited_compute_s", py::vectorize(&limited_compute_s), py::arg("compute_s"),
          py::arg("throttle_fraction"), py::arg("throttle_time_s"), py::arg("load"),
          "Compute time of a GEMM at the clock 1 - (1 - f) load, from its time run alone.");
  mod.def("limited_gemm_time_s", py::vectorize(&limited_gemm_time_s), py::arg("time_s"),
          py::arg("compute_s"), py::arg("memory_s"), py::arg("throttle_fraction"),
          py::arg("throttle_time_s"), py::arg("overlap_p"), py::arg("load"),
          "Time of a GEMM at the clock 1 - (1 - f) load, from its time run alone.");
}
