// pybind11 module roofline._core: conversion and forwarding only, no formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "roofline/dtype.hpp"
#include "roofline/efficiency.hpp"
#include "roofline/estimate.hpp"
#include "roofline/hardware.hpp"
#include "roofline/ops/float8_linear.hpp"
#include "roofline/ops/gemm.hpp"
#include "roofline/sweep.hpp"
#include "arrays.hpp"

namespace py = pybind11;
using namespace roofline;
using namespace roofline::bindings;

/// Registers attention and collective bindings (cpp/bindings/bind_transformer.cpp).
void bind_transformer(py::module_& m);
/// Registers grouped GEMM and row-wise op bindings (cpp/bindings/bind_ops.cpp).
void bind_ops(py::module_& m);
/// Registers GemmTerms (cpp/bindings/bind_terms_gemm.cpp).
void bind_gemm_terms(py::module_& m);
/// Registers AttentionTerms (cpp/bindings/bind_terms_attention.cpp).
void bind_attention_terms(py::module_& m);
/// Registers RowOpTerms (cpp/bindings/bind_terms_row_ops.cpp).
void bind_row_ops_terms(py::module_& m);
/// Registers CastTerms (cpp/bindings/bind_terms_cast.cpp).
void bind_cast_terms(py::module_& m);
/// Registers HostTerms (cpp/bindings/bind_terms_host.cpp).
void bind_host_terms(py::module_& m);
/// Registers the launch (host overhead) model (cpp/bindings/bind_host.cpp).
void bind_host(py::module_& m);
/// Registers the standalone float8 cast bindings (cpp/bindings/bind_float8.cpp).
void bind_float8(py::module_& m);
/// Registers the training / serving / cost arithmetic (cpp/bindings/bind_plan.cpp).
void bind_plan(py::module_& m);
/// Registers the trace scanner (cpp/bindings/bind_trace.cpp).
void bind_trace(py::module_& m);
/// Registers the scalar entry points (one GEMM / one float8 linear per call).
void bind_scalar(py::module_& m);
/// Registers the eight-shape check (bind_lanes.cpp).
void bind_lanes(py::module_& m);

namespace {

const char* role_name(KernelRole r) {
  switch (r) {
    case KernelRole::bf16_gemm: return "bf16_gemm";
    case KernelRole::lowp_gemm: return "lowp_gemm";
    case KernelRole::cast: return "cast";
  }
  return "";
}

py::tuple gemm_sweep_py(const InArray& m, const InArray& k, const InArray& n, const InArray& batch,
                        DType a, DType b, DType out, bool b_shared, const Hardware& hw,
                        const Efficiency& eff, int threads, Scaling scaling, bool a_transposed) {
  const std::size_t len = equal_length({&m, &k, &n, &batch});
  GemmShape formats;
  formats.scaling = scaling;
  formats.a_transposed = a_transposed;
  formats.a = a;
  formats.b = b;
  formats.out = out;
  formats.b_shared = b_shared;
  return estimate_columns(len, [&](EstimateColumns o) {
    gemm_sweep(m.data(), k.data(), n.data(), batch.data(), len, formats, hw, eff, threads, o);
  });
}

py::tuple cost_sweep_py(const InArray& flops, const InArray& bytes_read,
                        const InArray& bytes_written, PeakClass math, double kernels,
                        const Hardware& hw, const Efficiency& eff, int threads) {
  const std::size_t len = equal_length({&flops, &bytes_read, &bytes_written});
  return estimate_columns(len, [&](EstimateColumns o) {
    cost_sweep(flops.data(), bytes_read.data(), bytes_written.data(), len, math, kernels, hw, eff,
               threads, o);
  });
}

py::list cast_kernel_times_py(double d0, double d1, TensorRole role, Recipe recipe,
                              LinearMode mode, bool fuse, const Hardware& hw,
                              const Efficiency& eff) {
  KernelList kernels;
  if (mode == LinearMode::inference) {
    inference_cast_kernels(d0, d1, recipe, fuse, eff.torchao_conventions, kernels, eff.cast);
  } else {
    training_cast_kernels(d0, d1, role, recipe, fuse, eff.torchao_conventions, kernels, eff.cast);
  }
  py::list times;
  for (int i = 0; i < kernels.size; ++i) {
    times.append(estimate(kernels.items[static_cast<std::size_t>(i)].cost, hw, eff).time_s);
  }
  return times;
}

py::list param_refresh_kernel_times_py(double elements, Recipe recipe, const Hardware& hw,
                                       const Efficiency& eff) {
  KernelList kernels;
  param_refresh_kernels(elements, recipe, kernels, eff.cast);
  py::list times;
  for (int i = 0; i < kernels.size; ++i) {
    times.append(estimate(kernels.items[static_cast<std::size_t>(i)].cost, hw, eff).time_s);
  }
  return times;
}

py::tuple grouped_quantize_columns_py(const InArray& rows, double cols, Recipe recipe,
                                      const Hardware& hw, const Efficiency& eff) {
  double time = 0.0, memory = 0.0, bytes = 0.0;
  int launches = 0;
  const double* r = rows.data();
  for (py::ssize_t i = 0; i < static_cast<py::ssize_t>(rows.size()); ++i) {
    if (!(r[i] > 0.0)) continue;  // an expert without rows launches nothing
    KernelList kernels;
    grouped_quantize_kernels(r[i], cols, recipe, kernels, eff.cast);
    for (int j = 0; j < kernels.size; ++j) {
      const Estimate e = estimate(kernels.items[static_cast<std::size_t>(j)].cost, hw, eff);
      time += e.time_s;
      memory += e.memory_s;
      bytes += e.bytes;
      ++launches;
    }
  }
  return py::make_tuple(time, memory, bytes, launches);
}

py::tuple float8_linear_sweep_py(const InArray& m, const InArray& k, const InArray& n,
                                 Recipe recipe, LinearMode mode, bool fuse, const Hardware& hw,
                                 const Efficiency& eff, int threads) {
  const std::size_t len = equal_length({&m, &k, &n});
  py::array_t<double> bf16(static_cast<py::ssize_t>(len)), lowp(static_cast<py::ssize_t>(len)),
      cast(static_cast<py::ssize_t>(len));
  LinearSpec spec;
  spec.recipe = recipe;
  spec.mode = mode;
  spec.fuse_with_prev = fuse;
  double* pb = bf16.mutable_data();
  double* pl = lowp.mutable_data();
  double* pc = cast.mutable_data();
  {
    py::gil_scoped_release release;
    float8_linear_sweep(m.data(), k.data(), n.data(), len, spec, hw, eff, threads, pb, pl, pc);
  }
  return py::make_tuple(bf16, lowp, cast);
}

// Index of the first element that is not an integer in [lo, hi] (NaN, infinities and
// fractions fail), or -1: the extent check of every array argument, one pass over the values
// (numpy needs five passes and temporaries). x is an integer when x >= 2**52 (every double
// there is) or when (x + 2**52) - 2**52, x rounded to an integer, equals x (0 <= x < 2**52;
// callers pass lo >= 0). On x86-64 blocks of 256 values are checked two at a time with SSE2
// (part of the baseline ISA) and only a block holding a bad value is scanned one by one.
py::ssize_t first_bad_extent_py(const InArray& values, double lo, double hi) {
  constexpr double kTwo52 = 4503599627370496.0;
  const double* v = values.data();
  const auto len = static_cast<py::ssize_t>(values.size());
  py::gil_scoped_release release;
  py::ssize_t start = 0;
#if defined(__SSE2__)
  constexpr py::ssize_t kBlock = 256;
  const __m128d vlo = _mm_set1_pd(lo), vhi = _mm_set1_pd(hi), two52 = _mm_set1_pd(kTwo52);
  for (; start + kBlock <= len; start += kBlock) {
    __m128d good = _mm_castsi128_pd(_mm_set1_epi32(-1));
    for (py::ssize_t i = start; i < start + kBlock; i += 2) {
      const __m128d x = _mm_loadu_pd(v + i);
      const __m128d r = _mm_sub_pd(_mm_add_pd(x, two52), two52);
      const __m128d in = _mm_and_pd(_mm_cmpge_pd(x, vlo), _mm_cmple_pd(x, vhi));
      const __m128d whole = _mm_or_pd(_mm_cmpeq_pd(r, x), _mm_cmpge_pd(x, two52));
      good = _mm_and_pd(good, _mm_and_pd(in, whole));
    }
    if (_mm_movemask_pd(good) != 3) break;
  }
#endif
  for (py::ssize_t i = start; i < len; ++i) {
    const double x = v[i];
    if (!(x >= lo && x <= hi && (x >= kTwo52 || (x + kTwo52) - kTwo52 == x))) return i;
  }
  return -1;
}

py::list float8_linear_kernels_py(double m, double k, double n, Recipe recipe, LinearMode mode,
                                  bool fuse, const Hardware& hw, const Efficiency& eff) {
  LinearSpec spec{m, k, n, recipe, mode, fuse};
  KernelList kernels;
  float8_linear_kernels(spec, eff.torchao_conventions, kernels, eff.cast);
  py::list rows;
  for (int i = 0; i < kernels.size; ++i) {
    const NamedCost& nc = kernels.items[static_cast<std::size_t>(i)];
    const Estimate e = estimate(nc.cost, hw, eff);
    py::dict row = kernel_row(nc.name, nc.cost, e);
    row["role"] = role_name(nc.role);
    rows.append(row);
  }
  return rows;
}

}  // namespace

PYBIND11_MODULE(_core, mod) {
  mod.doc() = "roofline C++ core: costs, efficiency presets, estimates and vectorised sweeps";

  py::enum_<PeakClass>(mod, "PeakClass")
      .value("fp64", PeakClass::fp64).value("fp32", PeakClass::fp32)
      .value("tf32", PeakClass::tf32).value("bf16", PeakClass::bf16)
      .value("fp8", PeakClass::fp8).value("int8", PeakClass::int8)
      .value("fp4", PeakClass::fp4);

  py::enum_<DType>(mod, "DType")
      .value("fp64", DType::fp64).value("fp32", DType::fp32).value("tf32", DType::tf32)
      .value("bf16", DType::bf16).value("fp16", DType::fp16)
      .value("fp8_e4m3", DType::fp8_e4m3).value("fp8_e5m2", DType::fp8_e5m2)
      .value("int8", DType::int8).value("int32", DType::int32)
      .value("fp4_e2m1", DType::fp4_e2m1).value("mxfp8", DType::mxfp8)
      .value("mxfp4", DType::mxfp4).value("nvfp4", DType::nvfp4)
      .value("fp8_block_1x128", DType::fp8_block_1x128)
      .value("fp8_block_128x128", DType::fp8_block_128x128);

  py::enum_<Scaling>(mod, "Scaling")
      .value("none", Scaling::none).value("tensorwise", Scaling::tensorwise)
      .value("rowwise", Scaling::rowwise).value("blockwise", Scaling::blockwise)
      .value("microscaled", Scaling::microscaled);

  py::enum_<Recipe>(mod, "Recipe")
      .value("tensorwise", Recipe::tensorwise).value("rowwise", Recipe::rowwise)
      .value("rowwise_with_gw_hp", Recipe::rowwise_with_gw_hp)
      .value("mxfp8_cublas", Recipe::mxfp8_cublas)
      .value("mxfp8_cublas_rceil", Recipe::mxfp8_cublas_rceil)
      .value("mxfp8_emulated", Recipe::mxfp8_emulated)
      .value("mxfp8_cutlass", Recipe::mxfp8_cutlass)
      .value("mxfp8_32x32_flexible_gemm_layout", Recipe::mxfp8_32x32_flexible_gemm_layout)
      .value("mxfp8_32x32_weight", Recipe::mxfp8_32x32_weight)
      .value("mxfp4_cutlass", Recipe::mxfp4_cutlass).value("mxfp4", Recipe::mxfp4)
      .value("nvfp4", Recipe::nvfp4).value("nvfp4_static", Recipe::nvfp4_static)
      .value("tensorwise_static", Recipe::tensorwise_static)
      .value("nvfp4_no_global_scale", Recipe::nvfp4_no_global_scale)
      .value("blockwise", Recipe::blockwise).value("mxfp8_te", Recipe::mxfp8_te)
      .value("tensorwise_te", Recipe::tensorwise_te)
      .value("delayed_te", Recipe::delayed_te)
      .value("delayed_te_uncached", Recipe::delayed_te_uncached)
      .value("blockwise_te", Recipe::blockwise_te)
      .value("tensorwise_te_sm90", Recipe::tensorwise_te_sm90);

  py::enum_<TensorRole>(mod, "TensorRole")
      .value("input", TensorRole::input).value("weight", TensorRole::weight)
      .value("grad_output", TensorRole::grad_output);

  py::enum_<LinearMode>(mod, "LinearMode")
      .value("training", LinearMode::training)
      .value("inference", LinearMode::inference);

  py::class_<Hardware>(mod, "Hardware")
      .def(py::init([](const std::array<double, kPeakClassCount>& peaks, double mem_bytes_per_s,
                       double l2_bytes, int sms, double clock_hz) {
             Hardware h;
             h.peak_flops_per_s = peaks;
             h.mem_bytes_per_s = mem_bytes_per_s;
             h.l2_bytes = l2_bytes;
             h.sms = sms;
             h.clock_hz = clock_hz;
             return h;
           }),
           py::arg("peak_flops_per_s"), py::arg("mem_bytes_per_s"), py::arg("l2_bytes") = 0.0,
           py::arg("sms") = 0, py::arg("clock_hz") = 0.0)
      .def_readonly("peak_flops_per_s", &Hardware::peak_flops_per_s)
      .def_readonly("mem_bytes_per_s", &Hardware::mem_bytes_per_s);

  bind_gemm_terms(mod);
  bind_attention_terms(mod);
  bind_row_ops_terms(mod);
  bind_cast_terms(mod);
  bind_host_terms(mod);

  py::class_<Efficiency>(mod, "Efficiency")
      .def(py::init([](double cf, double mf, double floor_s, bool torchao, bool shape_aware,
                       double gemm_latency_s, double memory_latency_s, double overlap_p,
                       double sm_bytes_per_s, double attention_fraction, double decode_fraction,
                       double attention_softmax_flops, double attention_tile_overhead) {
             Efficiency e{cf, mf, floor_s, torchao};
             e.shape_aware = shape_aware;
             e.gemm_latency_s = gemm_latency_s;
             e.memory_latency_s = memory_latency_s;
             e.overlap_p = overlap_p;
             e.sm_bytes_per_s = sm_bytes_per_s;
             e.attention_fraction = attention_fraction;
             e.decode_fraction = decode_fraction;
             e.attention_softmax_flops = attention_softmax_flops;
             e.attention_tile_overhead = attention_tile_overhead;
             return e;
           }),
           py::arg("compute_fraction"), py::arg("memory_fraction"), py::arg("kernel_floor_s"),
           py::arg("torchao_conventions") = false, py::arg("shape_aware") = false,
           py::arg("gemm_latency_s") = 0.0, py::arg("memory_latency_s") = 0.0,
           py::arg("overlap_p") = 0.0, py::arg("sm_bytes_per_s") = 0.0,
           py::arg("attention_fraction") = 0.0, py::arg("decode_fraction") = 0.0,
           py::arg("attention_softmax_flops") = 0.0, py::arg("attention_tile_overhead") = 0.0)
      .def_readwrite("gemm", &Efficiency::gemm)
      .def_readwrite("attention", &Efficiency::attention)
      .def_readwrite("row_ops", &Efficiency::row_ops)
      .def_readwrite("cast", &Efficiency::cast)
      .def_readwrite("host", &Efficiency::host)
      .def_readonly("shape_aware", &Efficiency::shape_aware)
      .def_readonly("gemm_latency_s", &Efficiency::gemm_latency_s)
      .def_readonly("memory_latency_s", &Efficiency::memory_latency_s)
      .def_readonly("overlap_p", &Efficiency::overlap_p)
      .def_readonly("sm_bytes_per_s", &Efficiency::sm_bytes_per_s)
      .def_readonly("attention_fraction", &Efficiency::attention_fraction)
      .def_readonly("decode_fraction", &Efficiency::decode_fraction)
      .def_readonly("attention_softmax_flops", &Efficiency::attention_softmax_flops)
      .def_readonly("attention_tile_overhead", &Efficiency::attention_tile_overhead)
      .def_readonly("compute_fraction", &Efficiency::compute_fraction)
      .def_readonly("memory_fraction", &Efficiency::memory_fraction)
      .def_readonly("kernel_floor_s", &Efficiency::kernel_floor_s)
      .def_readonly("torchao_conventions", &Efficiency::torchao_conventions)
      .def_static("peak", &Efficiency::peak)
      .def_static("torchao", &Efficiency::torchao)
      .def_static("default_model", &Efficiency::default_model);

  mod.def("bytes_per_element", &bytes_per_element, py::arg("dtype"),
          "Payload plus block-scale bytes per element.");
  mod.def("element_bytes", &element_bytes, py::arg("dtype"));
  mod.def("peak_class", &peak_class, py::arg("dtype"));
  mod.def("gemm_sweep", &gemm_sweep_py, py::arg("m"), py::arg("k"), py::arg("n"),
          py::arg("batch"), py::arg("a"), py::arg("b"), py::arg("out"), py::arg("b_shared"),
          py::arg("hardware"), py::arg("efficiency"), py::arg("threads") = 0,
          py::arg("scaling") = Scaling::none, py::arg("a_transposed") = false,
          "GEMM estimates over equal-length float64 arrays: (time, compute, memory, overhead, "
          "flops, bytes); a_transposed: A is stored k x m (its rows are m elements).");
  mod.def("cost_sweep", &cost_sweep_py, py::arg("flops"), py::arg("bytes_read"),
          py::arg("bytes_written"), py::arg("math"), py::arg("kernels"), py::arg("hardware"),
          py::arg("efficiency"), py::arg("threads") = 0,
          "Estimates of single-kernel costs given as arrays: (time, compute, memory, overhead, "
          "flops, bytes).");
  mod.def("cast_kernel_times", &cast_kernel_times_py, py::arg("dim0"), py::arg("dim1"),
          py::arg("role"), py::arg("recipe"), py::arg("mode"), py::arg("fuse_with_prev"),
          py::arg("hardware"), py::arg("efficiency"),
          "Time of each cast kernel that prepares one operand (torchao's per-kernel list).");
  mod.def("param_refresh_kernel_times", &param_refresh_kernel_times_py, py::arg("elements"),
          py::arg("recipe"), py::arg("hardware"), py::arg("efficiency"),
          "Time of each kernel one rank runs per optimizer step to refresh `elements` "
          "low-precision linear weights after the all-gather (MXFP8: copy_ + zero_).");
  mod.def("grouped_quantize_columns", &grouped_quantize_columns_py, py::arg("rows"),
          py::arg("cols"), py::arg("recipe"), py::arg("hardware"), py::arg("efficiency"),
          "(time_s, memory_s, bytes, launches) of a training GroupedLinear's per-expert quantize "
          "kernels over rows[i] x cols inputs (TE's split_quantize).");
  mod.def("gathered_weight_bytes", &gathered_weight_bytes, py::arg("recipe"),
          py::arg("stored_bytes"),
          "Bytes per linear-weight element the distributed optimizer all-gathers under a recipe.");
  mod.def("float8_linear_sweep", &float8_linear_sweep_py, py::arg("m"), py::arg("k"),
          py::arg("n"), py::arg("recipe"), py::arg("mode"), py::arg("fuse_with_prev"),
          py::arg("hardware"), py::arg("efficiency"), py::arg("threads") = 0,
          "Float8 linear times over arrays: (bf16 GEMMs, low-precision GEMMs, casts).");
  mod.def("first_bad_extent", &first_bad_extent_py, py::arg("values"), py::arg("lo"),
          py::arg("hi"),
          "Index of the first value that is not an integer in [lo, hi] (NaN fails), or -1.");
  mod.def("float8_linear_kernels", &float8_linear_kernels_py, py::arg("m"), py::arg("k"),
          py::arg("n"), py::arg("recipe"), py::arg("mode"), py::arg("fuse_with_prev"),
          py::arg("hardware"), py::arg("efficiency"),
          "Every kernel of one float8 linear with its cost and estimate.");
  bind_transformer(mod);
  bind_ops(mod);
  bind_host(mod);
  bind_float8(mod);
  bind_plan(mod);
  bind_trace(mod);
  bind_scalar(mod);
  bind_lanes(mod);
}
