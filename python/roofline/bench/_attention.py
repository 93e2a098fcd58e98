"""Attention families: F.scaled_dot_product_attention forced to one backend with
``torch.nn.attention.sdpa_kernel`` (forward, backward, decode), and SDPA's own choice."""

from __future__ import annotations

from typing import Any

from ._cases import Ctx, Family, Measure, Skip, simple
from ._shapes import by_suite
from ._timing import Timer

__all__ = ["FAMILIES"]

#: Our backend names -> SDPBackend member names.
_BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION",
             "efficient": "EFFICIENT_ATTENTION", "math": "MATH"}


def _prefill(seqs: tuple[int, ...], dims: tuple[int, ...], tokens: int, width: int,
             gqa: bool = True) -> list[dict[str, Any]]:
    """FlashAttention-2 benchmark shapes: batch = tokens / seq, heads = width / head_dim;
    plus a Llama-3-8B GQA row (32 query heads, 8 KV heads, head_dim 128)."""
    out = [{"batch": max(1, tokens // s), "heads": max(1, width // d), "q_len": s, "kv_len": s,
            "head_dim": d, "causal": c}
           for s in seqs for d in dims for c in (False, True)]
    if gqa:
        s = seqs[-1]
        out.append({"batch": max(1, tokens // s), "heads": 32, "kv_heads": 8, "q_len": s,
                    "kv_len": s, "head_dim": 128, "causal": True})
    return out


def _decode(batches: tuple[int, ...], kv_lens: tuple[int, ...], heads: int,
            kv_heads: tuple[int, ...], d: int) -> list[dict[str, Any]]:
    out = []
    for b in batches:
        for kv in kv_lens:
            for kvh in kv_heads:
                a: dict[str, Any] = {"batch": b, "heads": heads, "q_len": 1, "kv_len": kv,
                                     "head_dim": d, "causal": False}
                if kvh != heads:
                    a["kv_heads"] = kvh
                out.append(a)
    return out


_PREFILL = by_suite(
    _prefill((128, 256), (64,), 512, 256, gqa=False),
    _prefill((128, 256, 512), (64,), 1024, 512, gqa=False),
    _prefill((1024, 4096), (64, 128), 16384, 2048),
    _prefill((512, 1024, 2048, 4096, 8192, 16384), (64, 128), 16384, 2048))
_MATERIALIZED = by_suite(
    _prefill((128,), (64,), 256, 256, gqa=False),
    _prefill((128, 256), (64,), 512, 256, gqa=False),
    _prefill((512, 1024), (64, 128), 8192, 2048, gqa=False),
    _prefill((512, 1024, 2048), (64, 128), 8192, 2048, gqa=False))
_DECODE = by_suite(
    _decode((1,), (256, 1024), 8, (2,), 64),
    _decode((1, 4), (256, 1024, 4096), 8, (2, 8), 64),
    _decode((1, 16), (1024, 8192), 32, (8,), 128),
    _decode((1, 4, 16, 64), (512, 2048, 8192, 32768), 32, (8, 32), 128))


def _backend_reason(ctx: Ctx, backend: str) -> str | None:
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
    except ImportError:
        return "this torch has no torch.nn.attention.sdpa_kernel"
    if not hasattr(SDPBackend, _BACKENDS[backend]):
        return f"this torch has no SDPBackend.{_BACKENDS[backend]}"
    return None


def _tensors(ctx: Ctx, a: dict[str, Any], grad: bool) -> tuple[Any, Any, Any]:
    kvh = a.get("kv_heads", a["heads"])
    q = ctx.randn(a["batch"], a["heads"], a["q_len"], a["head_dim"], requires_grad=grad)
    k = ctx.randn(a["batch"], kvh, a["kv_len"], a["head_dim"], requires_grad=grad)
    v = ctx.randn(a["batch"], kvh, a["kv_len"], a["head_dim"], requires_grad=grad)
    return q, k, v


def _sdpa(ctx: Ctx, a: dict[str, Any], backend: str | None) -> Any:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    kwargs: dict[str, Any] = {"is_causal": a["causal"]}
    if a.get("kv_heads", a["heads"]) != a["heads"]:
        kwargs["enable_gqa"] = True
    forced = None if backend is None else getattr(SDPBackend, _BACKENDS[backend])

    def attend(q: Any, k: Any, v: Any) -> Any:
        if forced is None:
            return F.scaled_dot_product_attention(q, k, v, **kwargs)
        with sdpa_kernel(forced):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

    return attend


def _forward(backend: str | None) -> Any:
    def build(ctx: Ctx, a: dict[str, Any]) -> Measure:
        q, k, v = _tensors(ctx, a, grad=False)
        attend = _sdpa(ctx, a, backend)

        def fn() -> Any:
            return attend(q, k, v)

        _check(fn, backend)
        return simple(fn)

    return build


def _check(fn: Any, backend: str | None) -> None:
    """Run once: a backend that cannot take this shape/dtype becomes a Skip (SDPA's
    per-call UserWarnings about why a backend refuses, e.g. the efficient kernel and GQA,
    are silenced: the Skip's reason carries it)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fn()
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Skip(f"SDPA backend {backend or 'default'} cannot run this case: {first[:160]}"
                   ) from None


def _backward(backend: str) -> Any:
    def build(ctx: Ctx, a: dict[str, Any]) -> Measure:
        torch = ctx.torch
        q, k, v = _tensors(ctx, a, grad=True)
        attend = _sdpa(ctx, a, backend)
        g = ctx.randn(a["batch"], a["heads"], a["q_len"], a["head_dim"])

        def fwd() -> Any:
            with torch.no_grad():
                return attend(q, k, v)

        def fwd_bwd() -> Any:
            # autograd.grad returns fresh gradients: no accumulation kernels into .grad
            return torch.autograd.grad(attend(q, k, v), (q, k, v), g)

        _check(fwd_bwd, backend)

        def measure(timer: Timer) -> dict[str, Any]:
            total = timer(fwd_bwd)
            forward = timer(fwd)
            if total <= forward:
                raise Skip("backward time not positive ((fwd+bwd) <= fwd: noise)")
            return {"measured": total - forward, "fwd_bwd_s": total}

        return measure

    return build


def _requires(backend: str, cuda_only: bool = False) -> Any:
    def requires(ctx: Ctx) -> str | None:
        if cuda_only and ctx.device != "cuda":
            return f"SDPA backend {backend} runs on CUDA GPUs only"
        return _backend_reason(ctx, backend)

    return requires


def _families() -> list[Family]:
    out = []
    for backend, cuda_only in (("flash", False), ("cudnn", True), ("efficient", True)):
        out.append(Family(f"attention_{backend}", "attention",
                          f"SDPA backend {backend}, forward", _PREFILL, _forward(backend),
                          backend=backend, requires=_requires(backend, cuda_only)))
        out.append(Family(f"attention_{backend}_bwd", "attention",
                          f"SDPA backend {backend}: (forward+backward) - forward",
                          _bwd(_PREFILL), _backward(backend), backend=backend,
                          requires=_requires(backend, cuda_only)))
    out.append(Family("attention_materialized", "attention",
                      "SDPA backend math (scores materialized), forward", _MATERIALIZED,
                      _forward("math"), backend="math", requires=_requires("math")))
    for backend, cuda_only in (("flash", False), ("cudnn", True), ("efficient", True)):
        out.append(Family(f"decode_{backend}", "attention",
                          f"SDPA backend {backend}, forward, q_len=1 against a KV cache",
                          _DECODE, _forward(backend), backend=backend,
                          requires=_requires(backend, cuda_only)))
    out.append(Family("sdpa_default", "attention",
                      "SDPA with no backend restriction (what PyTorch picks), forward",
                      _PREFILL, _forward(None), backend="auto"))
    return out


def _bwd(shapes: Any) -> Any:
    def with_backward(device: str, suite: str) -> list[dict[str, Any]]:
        return [{**a, "backward": True} for a in shapes(device, suite)]

    return with_backward


FAMILIES = _families()
