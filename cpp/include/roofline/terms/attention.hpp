#pragma once

namespace roofline {

/// Terms of the attention implementations SDPA dispatches to (flash, cuDNN, efficient, math).
struct AttentionTerms {
  // Fields are added by the model of this area; every one documents its physical meaning
  // and the data that sets it (see docs/model.md).
};

}  // namespace roofline
