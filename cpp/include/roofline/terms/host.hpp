#pragma once

namespace roofline {

/// Host-side launch overhead: time the CPU spends per kernel in eager mode and in CUDA graphs.
struct HostTerms {
  // Fields are added by the model of this area; every one documents its physical meaning
  // and the data that sets it (see docs/model.md).
};

}  // namespace roofline
