"""Kernels a framework launches beside a layer's main ops, as it runs them: NeMo 2.x's eager
squared ReLU (:func:`squared_relu_eager`, ``estimate(mlp_activation="relu_pow")``) and
Transformer Engine's Float8CurrentScaling amax all-reduces under sequence parallelism
(:func:`amax_reductions`). Both record rows into a :class:`.program.Program`."""

from __future__ import annotations

from .program import Program

__all__ = ["amax_reductions", "squared_relu_eager"]


def amax_reductions(ops: Program, g: int, block: str) -> None:
    """The amax all-reduces of Transformer Engine's Float8CurrentScaling quantizers under
    sequence parallelism, training (``ops.recipe == "tensorwise_te"``, ``ops.amax_ranks``
    TP ranks): a column-parallel linear's input quantizer and a row-parallel linear's
    grad_output quantizer reduce their amax over the TP group before casting (TE bee4649c
    and release_v2.9 ``module/linear.py`` / ``layernorm_linear.py``: ``with_amax_reduction``,
    ``amax_reduction_group = tp_group``), one 4-byte NCCL all-reduce on the compute path
    each: per block the QKV (or fc1) input forward and the output (or fc2) projection's
    gradient backward. Named apart from the TP ``all_reduce`` rows: userbuffers do not
    overlap them."""
    if ops.train and ops.recipe == "tensorwise_te" and ops.amax_ranks > 1:
        ops.collective(g, f"{block} fp8 amax reduce", "all_reduce", 4.0, ops.amax_ranks)


def squared_relu_eager(ops: Program, g: int, elements: float) -> None:
    """Squared ReLU as NeMo 2.x runs it: ``torch.pow(F.relu(x), 2)``, eager.

    NeMo v2.3.0 (2b03b748) ``nemo/collections/llm/fn/activation.py`` leaves ``squared_relu``
    unscripted ("remove until we have serialization"), and Megatron-Core's MLP (core_v0.12.0
    ``transformer/mlp.py``) calls ``activation_func`` itself when ``bias_activation_fusion``
    is off (NemotronConfig's default). Forward: ``relu`` (reads x, writes r; autograd saves
    r) and ``pow(r, 2)`` (reads r, writes y). Backward of ``pow``: ATen's ``pow_backward``
    computes ``grad * (2 * r.pow(1))``, where ``pow(r, 1)`` is a copy
    (``pow_Tensor_Scalar_out``), then the scalar multiply, then the product with the
    gradient; ``relu``'s is ``threshold_backward(grad, r, 0)``. Two kernels forward (4
    elements moved per element), four backward (10), against one and one (2 and 3) fused.
    Counts in the activation's 2-byte elements.
    """
    e = float(elements)
    ops.passes(g, "act (relu, pow)", [(e, 1.0, 1.0), (e, 1.0, 1.0)],
               [(e, 1.0, 1.0), (e, 1.0, 1.0), (e, 2.0, 1.0), (e, 2.0, 1.0)], saved=e)
