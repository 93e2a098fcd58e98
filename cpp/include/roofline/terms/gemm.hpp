#pragma once

namespace roofline {

/// Terms of the cuBLAS / grouped GEMM implementations PyTorch runs (per-dtype and scaling).
struct GemmTerms {
  // Fields are added by the model of this area; every one documents its physical meaning
  // and the data that sets it (see docs/model.md).
};

}  // namespace roofline
