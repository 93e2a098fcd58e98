#pragma once

namespace roofline {

/// Terms of the norm, softmax, cross-entropy and elementwise implementations (fused, eager, compiled).
struct RowOpTerms {
  // Fields are added by the model of this area; every one documents its physical meaning
  // and the data that sets it (see docs/model.md).
};

}  // namespace roofline
