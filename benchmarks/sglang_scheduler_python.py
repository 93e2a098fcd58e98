"""Times SGLang v0.4.0.post2's per-request scheduler Python on this machine's CPU (task
sgdecode14, ``data/hardware-notes.md`` section 39).

SGLang v0.4's overlap loop processes a decode step's results only once the next step has been
launched, so for an eager decode step (more than 160 requests) that work, and the forming of
the following batch, sit on the step's critical path. This script runs SGLang's own code for
the per-request part of it, as released (``pip download sglang==0.4.0.post2 --no-deps``,
unzip the wheel, pass the folder): ``Scheduler.process_batch_result_decode`` (the overlap
branch, the step's token ids already resolved) with its ``stream_output`` (pickling the
``BatchTokenIDOut`` as ``send_pyobj`` does), and one ``PrefillAdder`` pass admitting one
``ignore_eos`` request (``add_one_req_ignore_eos``: the running requests' states built and
sorted). Both methods are compiled from ``managers/scheduler.py``'s source; the modules they
do not use (triton kernels, model config, memory pools, server args) are stubbed, the radix
cache is SGLang's ``ChunkCache`` stand-in (``disable`` set). Torch calls of the scheduler step
(``update_running_batch``, ``prepare_for_decode``) are not timed here: the host terms price
those.

The figure is this CPU's, not an H200 server's host: an order of magnitude, not a constant
for the model. Run:
``python benchmarks/sglang_scheduler_python.py /path/to/unzipped/sglang-0.4.0.post2``.
"""

from __future__ import annotations

import ast
import pickle
import statistics
import sys
import time
import types
import typing
from typing import Any


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


class _Any:
    """Accepts any call or attribute (module-level constants the timed code never reads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Any:
        return self

    def __getattr__(self, name: str) -> _Any:
        return _Any()


class _Tokenizer:
    """Llama 3's end-of-sequence ids as plain attributes (HF's property lookup not timed)."""

    eos_token_id = 128009
    additional_stop_token_ids = {128001, 128008, 128009}


class _Pool:
    def free_group_begin(self) -> None:
        pass

    def free_group_end(self) -> None:
        pass

    def free(self, index: Any) -> None:
        pass


class _Socket:
    def __init__(self) -> None:
        self.bytes = 0

    def send_pyobj(self, obj: Any) -> None:
        self.bytes += len(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))


class _Worker:
    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def resolve_batch_result(self, bid: int) -> tuple[Any, list[int]]:
        return types.SimpleNamespace(next_token_logprobs=None), self.ids


def _load(root: str) -> dict[str, Any]:
    sys.path.insert(0, root)
    triton = _stub("triton", jit=lambda f=None, **k: f if f else (lambda g: g))
    triton.language = _stub("triton.language", constexpr=int)  # type: ignore[attr-defined]
    _stub("sglang.srt.configs.model_config", ModelConfig=object, AttentionArch=_Any())
    _stub("sglang.srt.constrained.base_grammar_backend", BaseGrammarObject=object)
    _stub("sglang.srt.mem_cache.chunk_cache", ChunkCache=object)
    _stub("sglang.srt.mem_cache.memory_pool", BaseTokenToKVPool=object, ReqToTokenPool=object)
    _stub("sglang.srt.model_executor.forward_batch_info", ForwardMode=_Any())
    _stub("sglang.srt.sampling.sampling_batch_info", SamplingBatchInfo=object)
    _stub("sglang.srt.server_args", ServerArgs=_Any())
    import torch

    sb = __import__("sglang.srt.managers.schedule_batch", fromlist=["Req"])
    io = __import__("sglang.srt.managers.io_struct", fromlist=["BatchTokenIDOut"])
    sp = __import__("sglang.srt.sampling.sampling_params", fromlist=["SamplingParams"])
    policy = __import__("sglang.srt.managers.schedule_policy", fromlist=["PrefillAdder"])
    ns: dict[str, Any] = dict(torch=torch, BatchTokenIDOut=io.BatchTokenIDOut, Req=sb.Req,
                              List=list, Optional=typing.Optional,
                              BaseFinishReason=sb.BaseFinishReason, ScheduleBatch=object)
    with open(f"{root}/sglang/srt/managers/scheduler.py") as f:
        tree = ast.parse(f.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Scheduler")
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in ("process_batch_result_decode",
                                                           "stream_output"):
            exec(compile(ast.Module(body=[fn], type_ignores=[]), "scheduler.py", "exec"), ns)
    ns.update(Req=sb.Req, SamplingParams=sp.SamplingParams, PrefillAdder=policy.PrefillAdder)
    return ns


def _requests(ns: dict[str, Any], d: int, prompt: int, generated: int) -> list[Any]:
    reqs = []
    for i in range(d):
        params = ns["SamplingParams"](max_new_tokens=2 * generated + 1, temperature=0.0,
                                      ignore_eos=True)
        params.normalize(None)
        r = ns["Req"](str(i), "", list(range(prompt)), params)
        r.tokenizer = _Tokenizer()
        r.stream = True
        r.output_ids = list(range(generated))
        r.extend_input_len = prompt
        reqs.append(r)
    return reqs


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    ns = _load(sys.argv[1])
    sched = types.SimpleNamespace(
        enable_overlap=True, is_generation=True, stream_interval=1, skip_tokenizer_init=False,
        num_generated_tokens=0, forward_ct_decode=1, tp_rank=1, token_to_kv_pool=_Pool(),
        tree_cache=None, server_args=types.SimpleNamespace(decode_log_interval=40))
    decode = types.MethodType(ns["process_batch_result_decode"], sched)
    sched.stream_output = types.MethodType(ns["stream_output"], sched)
    print("SGLang v0.4.0.post2 scheduler Python per decode step, this CPU (median of 30):")
    for d, prompt, generated in ((400, 2000, 500), (400, 2000, 1000), (1000, 500, 250),
                                 (2000, 130, 125)):
        reqs = _requests(ns, d, prompt, generated)
        sched.tp_worker = _Worker([5] * d)
        sched.send_to_detokenizer = _Socket()
        batch = types.SimpleNamespace(reqs=reqs, return_logprob=False, out_cache_loc=None,
                                      next_batch_sampling_info=None)
        step = []
        for _ in range(30):
            t = time.perf_counter()
            decode(batch, (None, None, 0))
            step.append(time.perf_counter() - t)
        admit = []
        cache = types.SimpleNamespace(disable=True)
        for _ in range(30):
            t = time.perf_counter()
            adder = ns["PrefillAdder"](cache, batch, 0.1, 10**7, 16384, 8192)
            adder.add_one_req(_requests(ns, 1, prompt, 0)[0])
            admit.append(time.perf_counter() - t)
        s, a = statistics.median(step), statistics.median(admit)
        print(f"  {d:5d} requests, {prompt:5d}-token prompts, ~{generated:4d} generated: "
              f"results + stream_output {s * 1e3:6.2f} ms ({s / d * 1e6:5.1f} us a request, "
              f"{sched.send_to_detokenizer.bytes / 30 / 1e6:5.2f} MB pickled), one "
              f"ignore_eos admission pass {a * 1e3:6.2f} ms ({a / d * 1e6:5.1f} us a request)")


if __name__ == "__main__":
    main()
