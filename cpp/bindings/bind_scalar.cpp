// Scalar entry points: one GEMM or one float8 linear per call, as Python floats (conversion
// and forwarding only: the same core calls as the sweeps, without numpy arrays).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "roofline/estimate.hpp"
#include "roofline/ops/float8_linear.hpp"
#include "roofline/ops/gemm.hpp"
#include "arrays.hpp"

namespace py = pybind11;
using namespace roofline;
using namespace roofline::bindings;

namespace {

GemmShape gemm_shape(double m, double k, double n, double batch, DType a, DType b, DType out,
                     bool b_shared, Scaling scaling) {
  GemmShape s;
  s.m = m;
  s.k = k;
  s.n = n;
  s.batch = batch;
  s.a = a;
  s.b = b;
  s.out = out;
  s.b_shared = b_shared;
  s.scaling = scaling;
  return s;
}

py::tuple as_tuple(const Estimate& e) {
  return py::make_tuple(e.time_s, e.compute_s, e.memory_s, e.overhead_s, e.flops, e.bytes);
}

py::tuple gemm_one_py(double m, double k, double n, double batch, DType a, DType b, DType out,
                      bool b_shared, const Hardware& hw, const Efficiency& eff, Scaling scaling) {
  const GemmShape s = gemm_shape(m, k, n, batch, a, b, out, b_shared, scaling);
  return as_tuple(estimate(gemm_cost(s, eff.torchao_conventions), Rates(hw, eff)));
}

py::tuple gemm_sweep_exhaustive_py(const InArray& m, const InArray& k, const InArray& n,
                                   const InArray& batch, DType a, DType b, DType out,
                                   bool b_shared, const Hardware& hw, const Efficiency& eff,
                                   Scaling scaling) {
  const std::size_t len = equal_length({&m, &k, &n, &batch});
  const Rates rates(hw, eff);
  return estimate_columns(len, [&](EstimateColumns o) {
    for (std::size_t i = 0; i < len; ++i) {
      const GemmShape s = gemm_shape(m.data()[i], k.data()[i], n.data()[i], batch.data()[i], a,
                                     b, out, b_shared, scaling);
      o.set(i, estimate_exhaustive(gemm_cost(s, eff.torchao_conventions), rates));
    }
  });
}

py::tuple float8_linear_one_py(double m, double k, double n, Recipe recipe, LinearMode mode,
                               bool fuse, const Hardware& hw, const Efficiency& eff) {
  LinearSpec s;
  s.recipe = recipe;
  s.mode = mode;
  s.fuse_with_prev = fuse;
  {
    KernelList probe;  // recipe / mode checks throw as in float8_linear_sweep
    float8_linear_kernels(s, eff.torchao_conventions, probe);
  }
  s.m = m;
  s.k = k;
  s.n = n;
  const LinearTimes t = float8_linear_times(s, Rates(hw, eff), eff.torchao_conventions);
  return py::make_tuple(t.bf16_s, t.lowp_gemm_s, t.cast_s);
}

// A GEMM family (formats, scaling) on one hardware and efficiency with its Rates computed once:
// called with m, k, n, batch it gives gemm_one's tuple.
class GemmOne {
 public:
  GemmOne(const Hardware& hw, const Efficiency& eff, DType a, DType b, DType out, bool b_shared,
          Scaling scaling)
      : rates_(hw, eff),
        formats_(gemm_shape(0, 0, 0, 1, a, b, out, b_shared, scaling)),
        torchao_(eff.torchao_conventions) {}

  py::tuple operator()(double m, double k, double n, double batch) const {
    GemmShape s = formats_;
    s.m = m;
    s.k = k;
    s.n = n;
    s.batch = batch;
    return as_tuple(estimate(gemm_cost(s, torchao_), rates_));
  }

 private:
  Rates rates_;
  GemmShape formats_;
  bool torchao_;
};

// A float8 linear recipe / mode on one hardware and efficiency (recipe checks and Rates done
// once): called with m, k, n it gives float8_linear_one's tuple.
class Float8LinearOne {
 public:
  Float8LinearOne(Recipe recipe, LinearMode mode, bool fuse, const Hardware& hw,
                  const Efficiency& eff)
      : rates_(hw, eff), torchao_(eff.torchao_conventions) {
    spec_.recipe = recipe;
    spec_.mode = mode;
    spec_.fuse_with_prev = fuse;
    KernelList probe;  // recipe / mode checks throw as in float8_linear_sweep
    float8_linear_kernels(spec_, torchao_, probe);
  }

  py::tuple operator()(double m, double k, double n) const {
    LinearSpec s = spec_;
    s.m = m;
    s.k = k;
    s.n = n;
    const LinearTimes t = float8_linear_times(s, rates_, torchao_);
    return py::make_tuple(t.bf16_s, t.lowp_gemm_s, t.cast_s);
  }

 private:
  Rates rates_;
  LinearSpec spec_;
  bool torchao_;
};

}  // namespace

/// Registers gemm_one, gemm_sweep_exhaustive, float8_linear_one, GemmOne and Float8LinearOne.
void bind_scalar(py::module_& mod) {
  mod.def("gemm_one", &gemm_one_py, py::arg("m"), py::arg("k"), py::arg("n"), py::arg("batch"),
          py::arg("a"), py::arg("b"), py::arg("out"), py::arg("b_shared"), py::arg("hardware"),
          py::arg("efficiency"), py::arg("scaling"),
          "One GEMM estimate (the gemm_sweep computation): (time, compute, memory, overhead, "
          "flops, bytes) as floats.");
  mod.def("gemm_sweep_exhaustive", &gemm_sweep_exhaustive_py, py::arg("m"), py::arg("k"),
          py::arg("n"), py::arg("batch"), py::arg("a"), py::arg("b"), py::arg("out"),
          py::arg("b_shared"), py::arg("hardware"), py::arg("efficiency"), py::arg("scaling"),
          "gemm_sweep with the reference GEMM search (every tile and split-K factor evaluated), "
          "one thread: the pruned search must equal it.");
  mod.def("float8_linear_one", &float8_linear_one_py, py::arg("m"), py::arg("k"), py::arg("n"),
          py::arg("recipe"), py::arg("mode"), py::arg("fuse_with_prev"), py::arg("hardware"),
          py::arg("efficiency"),
          "One float8 linear (the float8_linear_sweep computation): (bf16, low-precision GEMM, "
          "cast) seconds as floats.");
  py::class_<GemmOne>(mod, "GemmOne",
                      "gemm_one bound to formats, hardware and efficiency: call(m, k, n, batch).")
      .def(py::init<const Hardware&, const Efficiency&, DType, DType, DType, bool, Scaling>(),
           py::arg("hardware"), py::arg("efficiency"), py::arg("a"), py::arg("b"),
           py::arg("out"), py::arg("b_shared"), py::arg("scaling"))
      .def("__call__", &GemmOne::operator(), py::arg("m"), py::arg("k"), py::arg("n"),
           py::arg("batch"));
  py::class_<Float8LinearOne>(mod, "Float8LinearOne",
                              "float8_linear_one bound to a recipe, mode, hardware and "
                              "efficiency: call(m, k, n).")
      .def(py::init<Recipe, LinearMode, bool, const Hardware&, const Efficiency&>(),
           py::arg("recipe"), py::arg("mode"), py::arg("fuse_with_prev"), py::arg("hardware"),
           py::arg("efficiency"))
      .def("__call__", &Float8LinearOne::operator(), py::arg("m"), py::arg("k"), py::arg("n"));
}
