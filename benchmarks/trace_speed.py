"""How fast and how lean ``rl.trace.explain`` reads a large Kineto trace.

Builds a synthetic chrome trace shaped like a PyTorch profiler trace of an HF Llama train
step (``ProfilerStep#N`` annotations, ``nn.Module:`` python_function events, nested cpu_ops
with recorded shapes, ``cudaLaunchKernel`` runtime calls, kernels with Kineto's full argument
set, ac2g flows, backward ops with autograd sequence numbers), writes it as ``.json`` (and
``.json.gz``), then runs ``rl.trace.explain`` on it in a fresh process per implementation and
prints, per file: wall seconds and MB/s of the (uncompressed) JSON, CPU seconds and MB/s per
CPU second (the figure to compare on a shared machine), peak resident memory, and peak
resident memory over the JSON's size (total, and the growth over the process after
``import roofline``). The row ``json.loads`` reads and parses the whole file with the
standard library alone (no analysis): the machine's reference speed, measured in the same
run.

Run: ``python benchmarks/trace_speed.py [--steps 60] [--layers 12] [--old /work/main/python]``
(``--old``: a second package root, run on the same files, side by side; ``--gzip`` adds the
gzip file; ``--keep DIR`` keeps the files; ``--repeat N`` runs each row N times and shows the
run with the least CPU time). Needs no GPU and no torch.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

#: The child processes' common part: resident memory before the read, then ``{READ}`` (the
#: read itself, setting ``fields``) timed in wall and CPU seconds, and one JSON line out.
_TIMED = r"""
import gzip, json, resource, sys, time
{IMPORT}
def rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
base = rss_mb()
c0 = time.process_time()
t0 = time.perf_counter()
{READ}
dt = time.perf_counter() - t0
cpu = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"s": dt, "cpu_s": cpu, "peak_mb": peak, "base_mb": base, **fields}}))
"""

_JSON_ONLY = _TIMED.format(IMPORT="", READ=r"""with open(sys.argv[1], "rb") as fh:
    raw = fh.read()
data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
fields = {"steps": 0, "kernels": 0, "measured_s": 0.0, "predicted_s": 0.0}""")

_CHILD = _TIMED.format(IMPORT="import roofline as rl", READ=r"""
rep = rl.trace.explain(sys.argv[1], hardware="H100 SXM")
fields = {"steps": rep.iterations, "kernels": len(rep.rows), "measured_s": rep.measured_s,
          "predicted_s": rep.predicted_s}""")


class _Gen:
    """Writes the events of a Llama-like train step, one JSON line per event."""

    def __init__(self, fh: Any, hidden: int, ffn: int, heads: int, tokens: int) -> None:
        self.fh = fh
        self.h, self.f, self.heads, self.t = hidden, ffn, heads, tokens
        self.cpu_ts = 1_000_000.0
        self.gpu_ts = 1_000_500.0
        self.ext = 1
        self.corr = 1
        self.seq = 1
        self.pyid = 1
        self.first = True
        self.fwd_seq: list[tuple[int, str, list[Any], list[str]]] = []

    def emit(self, e: dict[str, Any]) -> None:
        self.fh.write(("" if self.first else ",\n") + json.dumps(e))
        self.first = False

    def module(self, name: str, dur: float) -> None:
        self.pyid += 1
        self.emit({"ph": "X", "cat": "python_function", "name": f"nn.Module: {name}",
                   "pid": 1, "tid": 1, "ts": self.cpu_ts, "dur": dur,
                   "args": {"Python parent id": self.pyid - 1, "Python id": self.pyid,
                            "Python module id": self.pyid % 97}})
        self.cpu_ts += 0.5

    def op(self, name: str, dims: list[Any], types: list[str], kernel: str, flops_us: float,
           inner: str | None = None, seq: bool = True) -> None:
        """One cpu_op (with an optional inner aten op), its launch and its kernel."""
        ts = self.cpu_ts
        s = self.seq if seq else None
        if seq:
            self.seq += 1
            self.fwd_seq.append((s, name, dims, types))  # type: ignore[arg-type]
        args: dict[str, Any] = {"External id": self.ext, "Record function id": 0,
                                "Ev Idx": self.ext, "Input Dims": dims, "Input type": types,
                                "Input Strides": [[d[-1], 1] if len(d) > 1 else [1] if d
                                                  else [] for d in dims],
                                "Concrete Inputs": ["" for _ in dims]}
        if s is not None:
            args["Sequence number"] = s
            args["Fwd thread id"] = 0
        self.emit({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
                   "dur": 30.0 if inner else 20.0, "args": args})
        self.ext += 1
        if inner:
            self.emit({"ph": "X", "cat": "cpu_op", "name": inner, "pid": 1, "tid": 1,
                       "ts": ts + 2, "dur": 25.0,
                       "args": {"External id": self.ext, "Record function id": 0,
                                "Ev Idx": self.ext, "Input Dims": dims, "Input type": types,
                                "Concrete Inputs": ["" for _ in dims]}})
            self.ext += 1
        lt = ts + 6
        self.emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": lt, "dur": 4.2,
                   "args": {"External id": self.ext - 1, "cbid": 211,
                            "correlation": self.corr}})
        self.emit({"ph": "s", "id": self.corr, "pid": 1, "tid": 1, "ts": lt, "cat": "ac2g",
                   "name": "ac2g"})
        self.gpu_ts = max(self.gpu_ts, lt + 5)
        self.emit({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                   "ts": self.gpu_ts, "dur": flops_us,
                   "args": {"External id": self.ext - 1, "queued": 0, "device": 0,
                            "context": 1, "stream": 7, "correlation": self.corr,
                            "registers per thread": 128, "shared memory": 98304,
                            "blocks per SM": 1.0, "warps per SM": 8.0, "grid": [132, 1, 1],
                            "block": [384, 1, 1], "est. achieved occupancy %": 12}})
        self.emit({"ph": "f", "id": self.corr, "pid": 0, "tid": 7, "ts": self.gpu_ts,
                   "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.gpu_ts += flops_us + 1.0
        self.corr += 1
        self.cpu_ts = ts + (35.0 if inner else 25.0)

    def linear(self, name: str, k: int, n: int) -> None:
        self.module(name, 40.0)
        t = self.t
        self.op("aten::linear", [[t, k], [n, k], []], ["c10::BFloat16"] * 2 + [""],
                "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT", 2 * t * k * n / 700e6,
                inner="aten::mm")

    def elementwise(self, name: str, shape: list[int]) -> None:
        self.op(name, [shape, shape], ["c10::BFloat16"] * 2,
                "void at::native::vectorized_elementwise_kernel<4, at::native::"
                "CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::"
                "CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
                2 * shape[0] * shape[1] * 2 / 3e6)

    def layer(self, i: int) -> None:
        h, f, t = self.h, self.f, self.t
        self.module(f"model.layers.{i}", 900.0)
        self.module(f"model.layers.{i}.input_layernorm", 80.0)
        for name in ("aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul",
                     "aten::mul"):
            self.elementwise(name, [t, h])
        self.module(f"model.layers.{i}.self_attn", 400.0)
        for proj, n in (("q_proj", h), ("k_proj", h // 4), ("v_proj", h // 4)):
            self.linear(f"model.layers.{i}.self_attn.{proj}", h, n)
        for name in ("aten::mul", "aten::neg", "aten::cat", "aten::mul", "aten::add") * 2:
            self.elementwise(name, [t, h])
        hd = h // self.heads
        self.op("aten::_scaled_dot_product_flash_attention",
                [[1, self.heads, t, hd]] * 3 + [[], [], [], []],
                ["c10::BFloat16"] * 3 + ["Scalar", "bool", "bool", "Scalar"],
                "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, "
                "4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)",
                4 * t * t * h / 600e6)
        self.linear(f"model.layers.{i}.self_attn.o_proj", h, h)
        self.elementwise("aten::add", [t, h])
        self.module(f"model.layers.{i}.mlp", 300.0)
        self.linear(f"model.layers.{i}.mlp.gate_proj", h, f)
        self.linear(f"model.layers.{i}.mlp.up_proj", h, f)
        self.elementwise("aten::silu", [t, f])
        self.elementwise("aten::mul", [t, f])
        self.linear(f"model.layers.{i}.mlp.down_proj", f, h)
        self.elementwise("aten::add", [t, h])

    def backward(self) -> None:
        for s, name, dims, types in reversed(self.fwd_seq):
            back = name.split("::")[-1].capitalize() + "Backward0"
            self.emit({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": self.cpu_ts,
                       "dur": 60.0,
                       "name": f"autograd::engine::evaluate_function: {back}",
                       "args": {"External id": self.ext, "Record function id": 0,
                                "Sequence number": s, "Fwd thread id": 1, "Ev Idx": 0}})
            self.ext += 1
            self.cpu_ts += 1
            save = self.cpu_ts
            kernel = ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT" if "linear" in name else
                      "void at::native::vectorized_elementwise_kernel<4, at::native::"
                      "BinaryFunctor<c10::BFloat16>, std::array<char*, 3ul> >(int)")
            n_kernels = 2 if "linear" in name else 1
            for _ in range(n_kernels):
                self.op("aten::mm" if "linear" in name else "aten::mul", dims[:2], types[:2],
                        kernel, 50.0, seq=False)
            self.cpu_ts = max(self.cpu_ts, save + 55)
        self.fwd_seq.clear()

    def step(self, n: int, layers: int) -> None:
        ts = self.cpu_ts
        self.emit({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
                   "tid": 1, "ts": ts, "dur": 1.0, "args": {"External id": self.ext}})
        self.ext += 1
        self.cpu_ts += 1
        self.module("LlamaForCausalLM", 1.0)
        for i in range(layers):
            self.layer(i)
        self.backward()
        self.gpu_ts = max(self.gpu_ts, self.cpu_ts)
        self.cpu_ts = self.gpu_ts + 10  # the step ends when the GPU is done


def build(path: str, steps: int, layers: int, compress: bool = False) -> int:
    """Write the synthetic trace to ``path``; returns its size in bytes."""
    opener: Any = gzip.open if compress else open
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": '
                 '"NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072}], '
                 '"record_shapes": 1, "traceEvents": [\n')
        g = _Gen(fh, hidden=4096, ffn=14336, heads=32, tokens=8192)
        for s in range(steps):
            g.step(s + 1, layers)
        fh.write('\n], "traceName": "synthetic", "displayTimeUnit": "ms"}\n')
    return os.path.getsize(path)


def _run(root: str, path: str, repeat: int = 1) -> dict[str, Any]:
    """The run with the least CPU time of ``repeat`` fresh processes."""
    # the package root first, the caller's own path after it (carried wheels, site folders)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    code = _JSON_ONLY if root == "json" else _CHILD
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code, path], env=env, check=True,
                             capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return min(runs, key=lambda r: r["cpu_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--gzip", action="store_true", help="also time the .json.gz file")
    parser.add_argument("--old", default=None, help="a second package root to compare")
    parser.add_argument("--keep", default=None, help="directory to keep the files in")
    parser.add_argument("--repeat", type=int, default=1,
                        help="fresh processes per row (the least CPU time is shown)")
    args = parser.parse_args()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    roots = [("this tree", os.path.abspath(here))]
    if args.old:
        roots.append(("old", os.path.abspath(args.old)))
    roots.append(("json.loads", "json"))  # the machine's speed: the stdlib parse alone
    tmp = args.keep or tempfile.mkdtemp(prefix="roofline_trace_speed_")
    os.makedirs(tmp, exist_ok=True)
    files = [os.path.join(tmp, f"llama_{args.steps}x{args.layers}.json")]
    if args.gzip:
        files.append(files[0] + ".gz")
    print(f"{'file':<26} {'code':<10} {'MB':>6} {'s':>6} {'MB/s':>6} {'cpu s':>6} "
          f"{'cpu MB/s':>8} {'peak MB':>7} {'peak/file':>9} {'growth/file':>11} "
          f"{'kernels':>7} {'steps':>5} {'measured ms':>11} {'predicted ms':>12}")
    try:
        for f in files:
            build(f, args.steps, args.layers, compress=f.endswith(".gz"))
            mb = os.path.getsize(files[0]) / 1e6  # the JSON's size (gzip: uncompressed)
            for label, root in roots:
                r = _run(root, f, args.repeat)
                print(f"{os.path.basename(f):<26} {label:<10} {mb:6.1f} {r['s']:6.2f} "
                      f"{mb / r['s']:6.1f} {r['cpu_s']:6.2f} {mb / r['cpu_s']:8.1f} "
                      f"{r['peak_mb']:7.0f} {r['peak_mb'] * 1.048576 / mb:9.2f} "
                      f"{(r['peak_mb'] - r['base_mb']) * 1.048576 / mb:11.2f} "
                      f"{r['kernels']:7d} {r['steps']:5d} {r['measured_s'] * 1e3:11.3f} "
                      f"{r['predicted_s'] * 1e3:12.3f}")
    finally:
        if not args.keep:
            for f in files:
                if os.path.exists(f):
                    os.unlink(f)
            os.rmdir(tmp)


if __name__ == "__main__":
    main()
