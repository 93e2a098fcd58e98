"""The model beside session 8's H200 kernel measurements (``data/programs/h200/session8.jsonl``).

Prints, per measured row, the GPU kernel time measured on the H200 (profiler, per call) and the
model's prediction for the same call on the H200, with the signed error, then the median
absolute error per group:

- ``grouped_mm``: MoE expert FFN GEMMs (``rl.grouped_gemm``; forward + backward = forward +
  dgrad (the same kernel with k and n swapped) + the 2D x 2D weight gradient, which torch
  runs through the same CUTLASS grouped kernel: ``rl.grouped_gemm(k, m, n, g)``, the group's
  tokens as the reduction);
- ``sdpa``: GQA attention per backend (``rl.attention``, forward and ``backward=True``);
- ``flex_attention``: the sliding window is priced as the transformer prices it (a block of
  ``window`` queries scores ``sliding_window_visited_keys(window)`` keys, non-causal);
- ``routing``: router softmax + topk, the permutation and the un-permutation, through
  ``roofline.torch.estimate`` of the same PyTorch code on the meta device;
- ``adamw_foreach``: the optimizer step of ``roofline.torch.estimate(optimizer=
  "adamw_foreach")`` (the train step with it less the step without);
- ``aten_mean``, ``topk`` (the second call's held-out grid: 64-32768 slices of 8-1024
  elements, k 2-16, fp32 / bf16, sorted or not) and ``argsort`` likewise through
  ``roofline.torch.estimate``. The multi-block top-k rows are grouped by dtype: the fp32
  half gave ``select.hpp``'s two ``mbtopk`` constants, the bf16 half is held out.

Nothing else is fitted to these rows. Run:
``PYTHONPATH=python python benchmarks/session8_kernels.py``.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import roofline as rl
from roofline import _core

H200_DIR = Path(__file__).resolve().parents[1] / "data" / "programs" / "h200"
#: the first call's rows, then the second call's held-out top-k grid and argsorts
ROWS = (H200_DIR / "session8.jsonl", H200_DIR / "session8b.jsonl")
HW = "H200"


def _expert(a: dict[str, Any]) -> tuple[float, float]:
    m, g, k, n = a["m_per_group"], a["groups"], a["k"], a["n"]
    fwd = float(rl.grouped_gemm(m, k, n, g, hardware=HW).time_s)
    dgrad = float(rl.grouped_gemm(m, n, k, g, hardware=HW).time_s)
    wgrad = float(rl.grouped_gemm(k, m, n, g, hardware=HW).time_s)
    return fwd, fwd + dgrad + wgrad


def _sdpa(a: dict[str, Any], keys: int | None = None, causal: bool = True) -> tuple[float, float]:
    kv = a["seq"] if keys is None else keys
    backend = a.get("backend", "flash")
    kw = {"kv_heads": a["kv_heads"], "causal": causal, "hardware": HW, "backend": backend}
    fwd = float(rl.attention(a["batch"], a["heads"], a["seq"], kv, a["head_dim"], **kw).time_s)
    bwd = float(rl.attention(a["batch"], a["heads"], a["seq"], kv, a["head_dim"],
                             backward=True, **kw).time_s)
    return fwd, bwd


def _torch_programs() -> dict[str, Any]:
    """The measured PyTorch calls, as modules for ``roofline.torch.estimate``."""
    import torch

    class Router(torch.nn.Module):
        def __init__(self, k: int) -> None:
            super().__init__()
            self.k = k

        def forward(self, logits: torch.Tensor) -> Any:
            return torch.topk(torch.softmax(logits.float(), dim=-1), self.k, dim=-1)

    class Permute(torch.nn.Module):
        def __init__(self, k: int) -> None:
            super().__init__()
            self.k = k

        def forward(self, x: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
            order = torch.argsort(flat, stable=True)
            return x.index_select(0, order // self.k)

    class Unpermute(torch.nn.Module):
        def forward(self, x: torch.Tensor, tok: torch.Tensor, routed: torch.Tensor,
                    wt: torch.Tensor) -> torch.Tensor:
            return torch.zeros_like(x).index_add_(0, tok, routed * wt[:, None])

    class Mean(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.mean()

    class TopK(torch.nn.Module):
        def __init__(self, k: int, is_sorted: bool) -> None:
            super().__init__()
            self.k = k
            self.is_sorted = is_sorted

        def forward(self, x: torch.Tensor) -> Any:
            return torch.topk(x, self.k, dim=-1, sorted=self.is_sorted)

    class ArgSort(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.argsort(x, stable=True)

    return {"torch": torch, "Router": Router, "Permute": Permute, "Unpermute": Unpermute,
            "Mean": Mean, "TopK": TopK, "ArgSort": ArgSort}


def _routing(r: dict[str, Any], progs: dict[str, Any]) -> float:
    import roofline.torch as rt

    torch = progs["torch"]
    a = r["args"]
    t, e, k, h = a["tokens"], a["experts"], a["topk"], a["hidden"]
    meta = {"device": "meta"}
    if r["what"] == "router_softmax_topk":
        mod, args = progs["Router"](k), (torch.empty(t, e, dtype=torch.bfloat16, **meta),)
    elif r["what"] == "permute":
        mod, args = progs["Permute"](k), (torch.empty(t, h, dtype=torch.bfloat16, **meta),
                                          torch.empty(t * k, dtype=torch.long, **meta))
    else:
        mod = progs["Unpermute"]()
        args = (torch.empty(t, h, dtype=torch.bfloat16, **meta),
                torch.empty(t * k, dtype=torch.long, **meta),
                torch.empty(t * k, h, dtype=torch.bfloat16, **meta),
                torch.empty(t * k, dtype=torch.bfloat16, **meta))
    return float(rt.estimate(mod, args, hardware=HW, mode="inference").time_s)


def _mean(r: dict[str, Any], progs: dict[str, Any]) -> float:
    import roofline.torch as rt

    torch = progs["torch"]
    x = torch.empty(r["args"]["numel"], dtype=torch.bfloat16, device="meta")
    return float(rt.estimate(progs["Mean"](), (x,), hardware=HW, mode="inference").time_s)


def _topk(r: dict[str, Any], progs: dict[str, Any]) -> float:
    import roofline.torch as rt

    torch = progs["torch"]
    a = r["args"]
    dt = torch.float32 if a["dtype"] == "fp32" else torch.bfloat16
    x = torch.empty(a["slices"], a["n"], dtype=dt, device="meta")
    mod = progs["TopK"](a["k"], a["sorted"])
    return float(rt.estimate(mod, (x,), hardware=HW, mode="inference").time_s)


def _argsort(r: dict[str, Any], progs: dict[str, Any]) -> float:
    import roofline.torch as rt

    torch = progs["torch"]
    a = r["args"]
    dt = torch.long if a["dtype"] == "int64" else torch.int32
    x = torch.empty(a["numel"], dtype=dt, device="meta")
    return float(rt.estimate(progs["ArgSort"](), (x,), hardware=HW, mode="inference").time_s)


def _adamw(r: dict[str, Any], progs: dict[str, Any]) -> float:
    """``torch.optim.AdamW(foreach=True).step`` over the row's parameters: the train step with
    ``optimizer="adamw_foreach"`` less the same step without it."""
    import roofline.torch as rt

    torch = progs["torch"]
    a = r["args"]

    class Params(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ps = torch.nn.ParameterList(
                torch.nn.Parameter(torch.empty(a["numel"], device="meta"))
                for _ in range(a["params"]))

        def forward(self, x: Any) -> Any:
            return sum((p[:1] * x).sum() for p in self.ps)

    mod, x = Params(), torch.empty(1, device="meta")
    with_opt = rt.estimate(mod, (x,), hardware=HW, mode="train", optimizer="adamw_foreach")
    return float(with_opt.time_s) - float(rt.estimate(mod, (x,), hardware=HW,
                                                       mode="train").time_s)


def main() -> None:
    rows = [json.loads(line) for path in ROWS for line in path.read_text().splitlines()
            if line.strip()]
    progs = _torch_programs()
    errors: dict[str, list[float]] = defaultdict(list)
    print(f"{'row':44s} {'measured us':>12s} {'model us':>10s} {'error':>7s}")

    def show(name: str, group: str, measured: float, model: float) -> None:
        err = model / measured - 1.0
        errors[group].append(abs(err))
        print(f"{name:44s} {measured * 1e6:12.1f} {model * 1e6:10.1f} {err:+7.1%}")

    for r in rows:
        if "error" in r:
            print(f"{r['name']:44s} (not run: {r['error'][:60]})")
            continue
        what, a = r["what"], r.get("args", {})
        if what == "grouped_mm":
            fwd, both = _expert(a)
            show(r["name"] + " fwd", "grouped_mm fwd", r["fwd_kernel_s"], fwd)
            show(r["name"] + " fwd+bwd", "grouped_mm fwd+bwd", r["fwd_bwd_kernel_s"], both)
        elif what == "sdpa":
            fwd, bwd = _sdpa(a)
            show(r["name"] + " fwd", "sdpa fwd", r["fwd_kernel_s"], fwd)
            show(r["name"] + " bwd", "sdpa bwd", r["bwd_kernel_s"], bwd)
        elif what == "flex_attention":
            if a["mask"] == "causal":
                fwd, bwd = _sdpa({**a, "backend": "flash"})
            else:
                # a block of `window` queries scores the visited keys, non-causal, for every
                # block of the sequence (the transformer's sliding-window pricing)
                keys = int(_core.sliding_window_visited_keys(a["window"]))
                fwd, bwd = _sdpa({**a, "backend": "flash"}, keys=keys, causal=False)
            show(r["name"] + " fwd", "flex fwd", r["fwd_kernel_s"], fwd)
            show(r["name"] + " bwd", "flex bwd", r["bwd_kernel_s"], bwd)
        elif what in ("router_softmax_topk", "permute", "unpermute"):
            show(r["name"], f"routing {what}", r["kernel_s"], _routing(r, progs))
        elif what == "aten_mean":
            show(r["name"], "aten_mean", r["kernel_s"], _mean(r, progs))
        elif what == "adamw_foreach":
            show(r["name"], "adamw_foreach", r["kernel_s"], _adamw(r, progs))
        elif what == "topk":
            multi = _core.topk_multiblock(float(a["slices"]), float(a["n"]))
            # multi-block: the fp32 rows gave the round trip and block constants
            # (select.hpp), the bf16 rows are held out
            group = f"topk multi-block {a['dtype']}" if multi else "topk single-block"
            show(r["name"], group, r["kernel_s"], _topk(r, progs))
        elif what == "argsort":
            show(r["name"], "argsort", r["kernel_s"], _argsort(r, progs))
    print()
    print(f"{'group':28s} {'rows':>5s} {'median |error|':>15s}")
    for group, errs in errors.items():
        print(f"{group:28s} {len(errs):5d} {statistics.median(errs):15.1%}")


if __name__ == "__main__":
    main()
