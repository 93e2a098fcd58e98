"""Activation offloading to host memory, as Megatron-Core runs it (``estimate(offload_layers=)``).

Megatron-Core's ``cpu_offloading`` with ``cpu_offloading_num_layers = K`` wraps each
transformer layer in Transformer Engine's CPU-offload context (``get_cpu_offload_context``;
Megatron-Bridge's perf presets set ``cpu_offloading_weights=False``: activations only). TE's
default schedule (TransformerEngine ``docs/features/other_optimizations/cpu_offloading``):
the first ``K`` of the ``L`` layers have their saved activations copied to pinned host memory
on one copy stream as soon as they are saved, at most ``L - K`` layers' activations stay on
the GPU (compute waits for a copy-out to free room), and in the backward each offloaded
layer's activations are copied back, in order, before its backward reads them. The seconds a
micro-batch waits on those copies are ``_core.offload_exposed_s`` (equal layers); the GPU
holds ``(L - K) / L`` of the layers' activations. Megatron-Core refuses offloading with
pipeline parallelism, with activation recomputation and with ``K >= L``
(``TransformerConfig.__post_init__``); so does :func:`.arguments.check_offload`.

The host link's rate per GPU and direction (:func:`host_link_bytes_per_s`, unless the caller
passes ``host_bytes_per_s``) is the copy engines' achieved rate, not the line rate:
nvbandwidth's ``host_to_device_memcpy_ce`` reaches 24.8 GB/s per A100-SXM4 on PCIe 4.0 x16
(NVIDIA developer forums, "Asymmetric PCIe bandwidth in bidirectional transfers", 2025),
0.775 of its 32 GB/s; the same share of each link's line rate is assumed elsewhere: PCIe 3.0
x16 (V100) 12.4 GB/s, PCIe 5.0 x16 (Hopper, Blackwell HGX, MI300-series, and any accelerator
not listed) 49.6 GB/s, NVLink-C2C (900 GB/s both ways per link, TE's CPU-offloading page)
349 GB/s, which a GH200's one GPU gets; a GB200 / GB300 Grace serves two GPUs from one
LPDDR5X pool (TE's page: "a Grace CPU with 480 GB LPDDR5X ... and two Blackwell GPUs"; the
GB200 NVL72 datasheet's 18.4 TB/s over 36 Graces, 511 GB/s each; GB300 assumed the same), so
a data-parallel step, both GPUs offloading at once, gets 256 GB/s each (``L4`` also matches
the L40S, PCIe 4.0 too). Not modeled: the HBM traffic of the copies (2 bytes of DRAM traffic
per byte moved, which TE's page notes can slow memory-bound kernels), the host's time to
allocate pinned buffers, and the head's work between the last forward and the first backward
layer (which would hide part of the first copy-ins).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core

__all__ = ["DEFAULT_HOST_LINK", "HOST_LINKS", "LINK_EFFICIENCY", "host_link_bytes_per_s",
           "offload_exposed_s"]

#: Share of a host link's line rate per direction that copy engines reach (24.8 / 32 GB/s,
#: nvbandwidth on an A100-SXM4's PCIe 4.0 x16).
LINK_EFFICIENCY = 24.8 / 32.0

#: ``(name fragment, bytes/s per GPU and direction)``, first match of the hardware's full
#: name; anything else: PCIe 5.0 x16 (:data:`DEFAULT_HOST_LINK`).
HOST_LINKS: tuple[tuple[str, float], ...] = (
    ("GB200", 512e9 / 2), ("GB300", 512e9 / 2),             # one Grace's LPDDR5X, two GPUs
    ("GH200", 450e9 * LINK_EFFICIENCY),                       # NVLink-C2C, one GPU
    ("V100", 16e9 * LINK_EFFICIENCY),                         # PCIe 3.0 x16
    ("A100", 32e9 * LINK_EFFICIENCY), ("A10", 32e9 * LINK_EFFICIENCY),
    ("L4", 32e9 * LINK_EFFICIENCY), ("RTX 3090", 32e9 * LINK_EFFICIENCY),
    ("RTX 4090", 32e9 * LINK_EFFICIENCY), ("MI250X", 32e9 * LINK_EFFICIENCY),
    ("Gaudi 2", 32e9 * LINK_EFFICIENCY),                      # PCIe 4.0 x16
)
#: PCIe 5.0 x16 at :data:`LINK_EFFICIENCY`.
DEFAULT_HOST_LINK = 64e9 * LINK_EFFICIENCY


def host_link_bytes_per_s(hw: Any) -> float:
    """Bytes/s one GPU of ``hw`` copies to or from pinned host memory (see the module
    docstring): the first :data:`HOST_LINKS` fragment in its full name, else PCIe 5.0 x16."""
    name = str(getattr(hw, "full_name", None) or getattr(hw, "name", ""))
    for fragment, rate in HOST_LINKS:
        if fragment in name:
            return rate
    return DEFAULT_HOST_LINK


def offload_exposed_s(layers: Any, offloaded: Any, fwd_layers_s: Any, bwd_layers_s: Any,
                      saved_bytes: Any, host_bytes_per_s: float) -> np.ndarray:
    """Seconds a micro-batch waits on offloading ``offloaded`` of ``layers`` equal layers whose
    forward / backward take ``fwd_layers_s`` / ``bwd_layers_s`` and save ``saved_bytes`` in
    all (arrays broadcast): ``_core.offload_exposed_s`` per layer."""
    n = np.maximum(np.asarray(layers, dtype=float), 1.0)
    out: np.ndarray = np.asarray(_core.offload_exposed_s(
        n, offloaded, np.asarray(fwd_layers_s, dtype=float) / n,
        np.asarray(bwd_layers_s, dtype=float) / n, np.asarray(saved_bytes, dtype=float) / n,
        float(host_bytes_per_s)), dtype=float)
    return out
