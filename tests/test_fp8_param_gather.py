"""estimate(fp8_param_gather=False): bf16 parameters under Float8CurrentScaling."""

from __future__ import annotations

from typing import Any

import pytest

import roofline as rl
from roofline import _core
from roofline._params.resolve import resolve
from roofline.transformer.memory import weight_params

KW: dict[str, Any] = dict(hardware="GB200", seq_len=8192, micro_batch=1, grad_accum=2, dp=64,
                          zero=3, fsdp="megatron", gpus_per_node=72,
                          linear_recipe="tensorwise_te")


def test_bf16_parameters_cost_one_weight_cast_per_step():
    """TE quantizes each bf16 weight once per step (amax, scale, cast of the linear
    elements: the input-role kernels of tensorwise_te), cached for the later micro-batches;
    the optimizer step carries it. Llama-3-70B: ~70e9 elements x 5 bytes ~ 50 ms on GB200."""
    fp8 = rl.transformer.estimate("Llama-3-70B", "train", **KW)
    bf16 = rl.transformer.estimate("Llama-3-70B", "train", fp8_param_gather=False, **KW)
    cfg = rl.transformer.config("Llama-3-70B")
    _, chw, ceff = resolve("GB200", "default")
    cast = sum(_core.cast_kernel_times(1.0, float(weight_params(cfg, 1, 1, "train")[0]),
                                       _core.TensorRole.input, _core.Recipe.tensorwise_te,
                                       _core.LinearMode.training, False, chw, ceff))
    assert 0.03 < cast < 0.08
    assert bf16.step.optimizer_s - fp8.step.optimizer_s == pytest.approx(cast, rel=1e-6)
    assert bf16.step.compute_s == pytest.approx(fp8.step.compute_s)
    # the weights are held (and gathered) at 2 bytes: more weight memory
    assert bf16.step.memory["weights_bytes"] > fp8.step.memory["weights_bytes"]


def test_bad_fp8_param_gather_names_the_argument():
    with pytest.raises(ValueError, match="fp8_param_gather"):  # only TE's current scaling
        rl.transformer.estimate("Llama-3-70B", "train", fp8_param_gather=False,
                                **dict(KW, linear_recipe="mxfp8_te"))
    with pytest.raises(ValueError, match="fp8_param_gather"):
        rl.transformer.estimate("Llama-3-70B", "train", fp8_param_gather=False,
                                **dict(KW, linear_recipe=None))
    with pytest.raises(TypeError, match="fp8_param_gather"):
        rl.transformer.estimate("Llama-3-70B", "train", fp8_param_gather=0, **KW)
    with pytest.raises(ValueError, match="fp8_param_gather"):  # a training argument
        rl.transformer.estimate("Llama-3-70B", "prefill", hardware="GB200", seq_len=512,
                                fp8_param_gather=False)
