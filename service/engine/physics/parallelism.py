"""How n GPUs split the work: nodes, tensor/pipeline/data parallel degrees, and the links used.

Tensor parallelism stays inside one fast-interconnect domain (NVLink / Infinity Fabric); PCIe
cards with NVLink bridges form pairs only. Collectives that leave a node use the network.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from service.engine import constants as c
from service.engine.cache import Memo
from service.engine.physics.memory import capacity_bytes
from service.engine.types import GpuSpec, Parallelism, Sharding

FAST_LINKS = ("nvlink", "infinity_fabric")
BRIDGED_FORM_FACTORS = ("pcie", "workstation", "consumer")


def single_module(gpu: GpuSpec) -> bool:
    """A single-module device (a Jetson: an edge SoC, one GPU per system, no interconnect):
    it runs a workload on one module only, so it never gets a multi-GPU plan or fix."""
    return gpu.form_factor == "edge" and gpu.max_gpus_per_node <= 1


def node_layout(gpu: GpuSpec, gpu_count: int) -> tuple[int, int]:
    """(nodes, gpus per node) for ``gpu_count`` GPUs, filling nodes first."""
    per_node = max(1, gpu.max_gpus_per_node)
    if gpu_count <= per_node:
        return 1, gpu_count
    nodes = -(-gpu_count // per_node)
    return nodes, per_node


def fast_domain_size(gpu: GpuSpec) -> int:
    """GPUs joined by the fast interconnect (1 when there is none)."""
    if gpu.interconnect not in FAST_LINKS or not gpu.interconnect_bandwidth_gb_s:
        return 1
    if gpu.form_factor in BRIDGED_FORM_FACTORS:
        return min(c.BRIDGE_PAIR_SIZE, gpu.max_gpus_per_node)
    return max(1, gpu.max_gpus_per_node)


def memory_twin(gpu: GpuSpec, precision_used: str | None, memo: Memo) -> GpuSpec:
    """The first GPU type of this call with ``gpu``'s memory and node figures (memory size,
    GPUs per node, form factor, fast-domain size) at the same precision: whether a workload
    fits on ``n`` of them reads only those (usable memory, the searched counts, the TP
    degrees and splits a node allows, the runtime's sequence cap), so a memory search or a
    split list made for the twin holds for every GPU type that shares them. A catalog has a
    few dozen memory configurations and up to thousands of GPU types (33 types, 20
    configurations in the seeded one): the fit searches run once per configuration.
    tests/unit/test_memory_twin.py perturbs every other figure and checks the answers stay."""
    return memo.scratch("memory_twin", memory_twin_key(gpu, precision_used), lambda: gpu)


def memory_twin_key(gpu: GpuSpec, precision_used: str | None) -> tuple[object, ...]:
    """What :func:`memory_twin` groups GPU types by: the memory they offer, GPUs per node,
    form factor and fast-domain size, at a precision."""
    return (capacity_bytes(gpu), gpu.max_gpus_per_node, gpu.form_factor, fast_domain_size(gpu),
            precision_used)


def pcie_gb_s(gpu: GpuSpec) -> float:
    """Achievable one-way PCIe bandwidth [GB/s] for the card's generation."""
    gen = gpu.pcie_gen or c.DEFAULT_PCIE_GEN
    return c.PCIE_GB_S.get(gen, c.PCIE_GB_S[c.DEFAULT_PCIE_GEN])


def fast_link_gb_s(gpu: GpuSpec) -> float:
    """One-way fast-interconnect bandwidth [GB/s] (datasheet totals are bidirectional)."""
    total = gpu.interconnect_bandwidth_gb_s or 0.0
    return total * c.LINK_DIRECTIONAL_FRACTION


def network_gb_s(gpu: GpuSpec) -> float:
    """Cross-node bandwidth per GPU [GB/s, one way] for the class of node this GPU ships in.

    HGX/OAM nodes of the H100/MI300X generation carry one 400 Gb/s port per GPU; older and
    PCIe nodes far less, which is what makes multi-node training on them slow. A GPU rented or
    bought with an offer whose network is known carries that offer's rate instead.
    """
    if gpu.network_gb_s_per_gpu is not None:
        return gpu.network_gb_s_per_gpu
    if gpu.form_factor in ("sxm", "oam"):
        link = gpu.interconnect_bandwidth_gb_s or 0.0
        if link >= 800:
            return c.NETWORK_GB_S_PER_GPU
        if link >= 400:
            return c.NETWORK_GB_S_PER_GPU_A100_HGX
        return c.NETWORK_GB_S_PER_GPU_V100_HGX
    return {
        "pcie": c.NETWORK_GB_S_PER_GPU_PCIE_SERVER,
        "workstation": c.NETWORK_GB_S_PER_GPU_WORKSTATION,
        "consumer": c.NETWORK_GB_S_PER_GPU_CONSUMER,
    }.get(gpu.form_factor, c.NETWORK_GB_S_PER_GPU_EDGE)


def group_link(gpu: GpuSpec, gpus_in_node: int, spans_nodes: bool) -> tuple[str, float]:
    """The slowest link a collective crosses when it involves ``gpus_in_node`` GPUs of a node
    (and other nodes when ``spans_nodes``), with its one-way bandwidth [GB/s]."""
    if gpus_in_node <= 1 and not spans_nodes:
        return "none", 0.0
    domain = fast_domain_size(gpu)
    if domain > 1 and gpus_in_node <= domain:
        name = "nvlink" if gpu.interconnect == "nvlink" else "infinity_fabric"
        intra = (name, fast_link_gb_s(gpu))
    else:
        intra = ("pcie", pcie_gb_s(gpu))
    if spans_nodes:
        return "network", min(network_gb_s(gpu), intra[1])
    return intra


def tp_candidates(gpu: GpuSpec, gpu_count: int) -> list[int]:
    """Allowed tensor-parallel degrees: powers of 2 inside the fast domain and the count."""
    return powers_of_two_upto(min(fast_domain_size(gpu), gpu_count))


NODE_SEARCH_LIMIT = 4096
"""Largest GPU count :func:`min_gpus_to_fit` searches."""


def gpu_count_candidates(
    gpu: GpuSpec, limit: int = NODE_SEARCH_LIMIT, memo: Memo | None = None
) -> tuple[int, ...]:
    """1, 2, 4, 8 (within a node), then whole nodes, up to ``limit`` GPUs (memoized per node
    size and limit when a memo is given: asked twice per GPU type of every ranking). A
    single-module device (:func:`single_module`) has the one count 1."""
    if single_module(gpu):
        return (1,)
    per_node = max(1, gpu.max_gpus_per_node)
    if memo is not None:
        return memo.get("count_candidates", (per_node, limit),
                        lambda: _count_candidates(per_node, limit))
    return _count_candidates(per_node, limit)


def _count_candidates(per_node: int, limit: int) -> tuple[int, ...]:
    # never above the limit (max_gpus): a count the search tries is one the request allows
    counts = [n for n in (1, 2, 4, 8) if n <= min(per_node, max(1, limit))]
    if per_node not in counts and per_node <= limit:
        counts.append(per_node)
    nodes = 2
    while nodes * per_node <= limit:
        counts.append(nodes * per_node)
        nodes = nodes + 1 if nodes < 16 else nodes * 2
    return tuple(counts)


def least_count(counts: Sequence[int], ok: Callable[[int], bool]) -> int | None:
    """The least of ``counts`` (ascending) for which ``ok`` holds, None when it holds for
    none, given that it is monotone (holding at a count, it holds at every larger one): one
    probe at the first, one at the last, then a bisection."""
    if ok(counts[0]):
        return counts[0]  # the common case: one GPU holds it
    if not ok(counts[-1]):
        return None
    lo, hi = 1, len(counts) - 1  # counts[hi] holds, counts[0] does not
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(counts[mid]):
            hi = mid
        else:
            lo = mid + 1
    return counts[hi]


def powers_of_two_upto(n: int) -> list[int]:
    out = [1]
    while out[-1] * 2 <= n:
        out.append(out[-1] * 2)
    return out


@dataclass(frozen=True)
class Layout:
    """A chosen split and the links each kind of collective crosses."""

    parallelism: Parallelism
    tp_link_gb_s: float
    dp_link_gb_s: float
    dp_link: str


def layout(gpu: GpuSpec, gpu_count: int, tp: int, pp: int, sharding: Sharding,
           memo: Memo) -> Layout:
    """:func:`make_layout`, kept in the shared cache (a pure function of a frozen GPU and four
    scalars; immutable)."""
    return memo.get("layout", (gpu, gpu_count, tp, pp, sharding),
                    lambda: make_layout(gpu, gpu_count, tp, pp, sharding))


def make_layout(
    gpu: GpuSpec, gpu_count: int, tp: int, pp: int, sharding: Sharding
) -> Layout:
    """Build the :class:`Parallelism` record for ``tp`` x ``pp`` x dp = ``gpu_count``."""
    nodes, per_node = node_layout(gpu, gpu_count)
    dp = max(1, gpu_count // (tp * pp))
    _, tp_bw = group_link(gpu, tp, spans_nodes=False)
    spans = nodes > 1
    # data-parallel (and pipeline) peers share the node with the TP group: the whole node's
    # GPUs must sit in one fast domain for their collectives to stay on it
    dp_name, dp_bw = group_link(gpu, per_node, spans_nodes=spans)
    if dp * pp > 1:
        slowest, slowest_bw = dp_name, dp_bw
    elif tp > 1:
        slowest, slowest_bw = group_link(gpu, tp, spans_nodes=False)
    else:
        slowest, slowest_bw = "none", 0.0
    parallelism = Parallelism(
        gpu_count=gpu_count,
        nodes=nodes,
        gpus_per_node=per_node,
        data_parallel=dp,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        sharding=sharding if dp > 1 else "none",
        link=slowest,
        link_bandwidth_gb_s=slowest_bw or None,
    )
    return Layout(parallelism, tp_bw, dp_bw, dp_name)
