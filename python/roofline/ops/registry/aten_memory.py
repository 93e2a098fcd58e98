"""The aten ops priced as one memory-bound pass, and the aten ops that launch nothing."""

from __future__ import annotations

from .memory_entries import batched_copy, free, memory
from .table import Entry, add

# ops that launch no kernel themselves: views, allocation, metadata, autograd bookkeeping
free("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "detach",
     "lift_fresh", "alias", "_reshape_alias", "sym_size", "sym_stride", "sym_numel",
     "sym_storage_offset", "_local_scalar_dense", "scalar_tensor", "set_", "resize_",
     "_to_copy_meta", "view", "as_strided", "t", "transpose", "permute", "expand", "select",
     "slice", "squeeze", "unsqueeze", "unflatten", "flatten", "split", "split_with_sizes",
     "unbind", "chunk", "narrow", "view_as", "expand_as", "unfold", "diagonal", "movedim",
     rule="pointwise")
free("_unsafe_view", "reshape", "contiguous", "to", rule="unary_copy")
free("_c10d_functional::wait_tensor", "c10d_functional::wait_tensor")

# composite ops: they launch through the ops they call (priced there); a kernel a trace links
# to the composite itself is priced by its recorded inputs
free("layer_norm", "dropout", "scaled_dot_product_attention", "embedding_backward",
     "cross_entropy_loss", "nll_loss", "nll_loss_nd", "log_softmax", "softmax", "type_as",
     "feature_dropout", rule="pointwise")

# copies
memory("copy_", "_copy_from", "_copy_from_and_resize", rule="copy", layout=True)
memory("clone", "_to_copy", "lift_fresh_copy", rule="unary_copy", layout=True)
add(*(f"aten::{n}" for n in ("cat", "stack", "concat", "concatenate", "_cat")),
    entry=lambda n: Entry(n, "memory", "elementwise", batched_copy))
# fills and random numbers: write their first tensor
memory("fill_", "zero_", "ones_like", "zeros_like", "full_like", "normal_", "uniform_",
       "bernoulli_", "random_", "exponential_", rule="write_only")
memory("zeros", "ones", "full", "new_zeros", "new_ones", "new_full", "arange", "rand",
       "randn", "rand_like", "randn_like")
# gathers, scatters, layout changes
# (index_add / scatter_add: atomic_entries.py; gather, index: gather_entries.py)
memory("scatter", "index_put",
       "index_put_", "masked_fill", "masked_fill_", "tril", "triu",
       "select_backward", "slice_backward", "split_with_sizes_copy", "constant_pad_nd",
       "repeat", "roll", "flip", "where", "native_dropout_backward")
memory("native_dropout", rule="dropout")
# reductions: read the inputs, write nothing worth counting (sum, mean: reduce_entries.py)
memory("var_mean", rule="reduce", kind="reduction")
# (max, min, amax, amin: reduce_entries.py, a full reduction as sum's)
memory("norm", "linalg_vector_norm", "var", "std", "std_mean", "argmax",
       "argmin", "any", "all", "prod", "nll_loss2d_forward", rule="reduce")
# routing bookkeeping of MoE layers (HF's experts): one pass over their inputs and outputs
# (topk and sort: sort_entries.py: aten's radix select and cub's radix sort)
memory("histc", "cumsum", "floor_divide", "bincount", "argsort")
# nll_loss_forward / nll_loss_backward: nll_entries.py (one-block kernels)
# elementwise
memory("add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "relu", "relu_",
       "clamp_min", "clamp", "clamp_max", "threshold_backward", "silu", "silu_backward",
       "gelu", "gelu_backward", "sigmoid", "sigmoid_backward", "tanh", "tanh_backward",
       "exp", "log", "pow", "rsqrt", "sqrt", "reciprocal", "abs", "sign", "mse_loss",
       "addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "lerp_", "maximum", "minimum",
       "silu_", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "bitwise_not", "cos", "sin",
       "erf", "masked_scale", "le_", "ge_",
       "torch::autograd::AccumulateGrad", layout=True)
