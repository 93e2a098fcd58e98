#pragma once

namespace roofline {

/// Terms of torchao's float8 cast kernels as torch.compile generates them (amax, scale, cast).
struct CastTerms {
  // Fields are added by the model of this area; every one documents its physical meaning
  // and the data that sets it (see docs/model.md).
};

}  // namespace roofline
