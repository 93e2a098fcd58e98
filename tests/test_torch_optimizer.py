"""roofline.torch.estimate(optimizer=...): the optimizer update as torch.optim launches it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import roofline as rl  # noqa: E402
import roofline.torch  # noqa: E402,F401
from roofline import _core  # noqa: E402

H100 = "H100 SXM"


def _linear(n: int = 1024) -> tuple[torch.nn.Module, torch.Tensor]:
    with torch.device("meta"):
        m = torch.nn.Linear(n, n, bias=False).to(torch.bfloat16)
    return m, torch.empty(16, n, dtype=torch.bfloat16, device="meta")


def _opt_rows(e: rl.torch.TorchEstimate) -> list[rl.torch.OpRecord]:
    return [r for r in e.records if r.phase == "optimizer"]


def test_foreach_adamw_passes_by_hand() -> None:
    m, x = _linear()
    base = rl.torch.estimate(m, (x,), H100)
    e = rl.torch.estimate(m, (x,), H100, optimizer="adamw_foreach")
    rows = _opt_rows(e)
    # torch's foreach AdamW (steady state, after the first step made the state): weight decay
    # mul_(p), lerp_(m, g), mul_(v), addcmul_(v, g, g), d = sqrt(v), div_(d), add_(d, eps),
    # addcdiv_(p, m, d); the step counts live on the CPU and launch nothing
    assert [r.op for r in rows] == ["_foreach_mul_", "_foreach_lerp_", "_foreach_mul_",
                                    "_foreach_addcmul_", "_foreach_sqrt", "_foreach_div_",
                                    "_foreach_add_", "_foreach_addcdiv_"]
    # every list read once, one written: addcmul_ passes the one list g twice (the same
    # tensors: Call.aliased), read from DRAM once: reads 1+2+1+2+1+1+1+3 = 12, writes 8, of
    # 2 MiB each (as transformer.training's adamw_foreach passes)
    assert [r for r in rows if r.op == "_foreach_addcmul_"][0].estimate.bytes == 2 ** 21 * 3
    assert sum(float(r.estimate.bytes) for r in rows) == 1024 * 1024 * 2 * (12 + 8)
    assert e.time_s == pytest.approx(base.time_s + sum(float(r.estimate.time_s) for r in rows))
    assert e.wall_s >= e.time_s
    assert len(base.records) + 8 == len(e.records)


def test_fused_adamw_is_one_pass() -> None:
    m, x = _linear(4096)
    rows = _opt_rows(rl.torch.estimate(m, (x,), H100, optimizer="adamw_fused"))
    assert [r.op for r in rows] == ["_fused_adamw_"]
    # reads p, g, m, v; writes p, m, v: 7 x 32 MiB
    assert float(rows[0].estimate.bytes) == 4096 * 4096 * 2 * 7
    # 16.8 M elements = 256 chunks of 65536: one launch of depth 4
    assert _core.multi_tensor_apply_launches([4096.0 * 4096], 4) == 1
    foreach = _opt_rows(rl.torch.estimate(m, (x,), H100, optimizer="adamw_foreach"))
    assert float(rows[0].estimate.time_s) < sum(float(r.estimate.time_s) for r in foreach)


def test_callable_and_sgd() -> None:
    m, x = _linear()
    sgd = _opt_rows(rl.torch.estimate(m, (x,), H100, optimizer="sgd_foreach"))
    assert sgd and all(r.op.startswith("_foreach_") for r in sgd)
    loop = _opt_rows(rl.torch.estimate(
        m, (x,), H100, optimizer=lambda ps: torch.optim.AdamW(ps, foreach=False)))
    # the for-loop AdamW: one kernel per op per tensor (one tensor here)
    assert loop and not any(r.op.startswith("_foreach_") for r in loop)


def test_every_trainable_parameter_is_updated_once() -> None:
    with torch.device("meta"):
        m = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)]).to(
            torch.bfloat16)
    m[0].weight.requires_grad_(False)
    x = torch.empty(8, 256, dtype=torch.bfloat16, device="meta")
    rows = _opt_rows(rl.torch.estimate(m, (x,), H100, optimizer="adamw_fused"))
    trainable = sum(p.numel() for p in m.parameters() if p.requires_grad)
    assert float(rows[0].estimate.bytes) == trainable * 2 * 7
    # dedupe replays identical layers: their parameters are updated all the same
    full = rl.torch.estimate(m, (x,), H100, optimizer="adamw_foreach", dedupe=False)
    fast = rl.torch.estimate(m, (x,), H100, optimizer="adamw_foreach")
    assert fast.time_s == pytest.approx(full.time_s)


def test_bad_optimizer_arguments_name_the_argument() -> None:
    m, x = _linear()
    with pytest.raises(ValueError, match="optimizer"):
        rl.torch.estimate(m, (x,), H100, mode="inference", optimizer="adamw_foreach")
    with pytest.raises(ValueError, match="optimizer"):
        rl.torch.estimate(m, (x,), H100, optimizer="adamw_forech")
    with pytest.raises(TypeError, match="optimizer"):
        rl.torch.estimate(m, (x,), H100, optimizer=3)
    with pytest.raises(TypeError, match="optimizer"):
        rl.torch.estimate(m, (x,), H100, optimizer=lambda ps: "not an optimizer")


def test_llama_optimizer_agrees_with_transformer_estimate() -> None:
    transformers = pytest.importorskip("transformers")
    hf = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 3584,
          "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
          "vocab_size": 32000, "max_position_embeddings": 4096}
    cfg = transformers.LlamaConfig(**{k: v for k, v in hf.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    ids = torch.zeros(1, 1024, dtype=torch.long, device="meta")
    e = rl.torch.estimate(model, (ids,), "H200", kwargs={"labels": ids},
                          optimizer="adamw_foreach")
    torch_s = sum(float(r.estimate.time_s) for r in _opt_rows(e))
    t = rl.transformer.estimate(rl.transformer.from_hf(hf), "train", 1, seq_len=1024,
                                hardware="H200", runtime="hf", optimizer="adamw_foreach")
    # the same multi_tensor_apply passes; the torch path launches per real tensor list (chunk
    # rounding per tensor, at most 110 tensors a launch), the config path over one list
    assert torch_s == pytest.approx(float(t.step.optimizer_s), rel=0.08)
