"""A compute job's hours to finish on many GPU counts of one GPU type, compiled (numba).

A ranking of a compute job (FP64 simulation, solvers) times every searched count of every GPU
type it evaluates (~200 a request) through :func:`scaling.scaled_time`: the count's exchange
(:func:`scaling.exchange`: node layout, links, launch latency, process grid, node block), the
step's halo or all-reduce bytes, the serial fraction. In Python that was ~8 us a count, a
quarter of an FP64 request. Here the same arithmetic runs as one compiled loop over a GPU
type's counts (:func:`hours`), with the memory check the ranking's figures make first.

Every operation is the reference's, in the same order, in IEEE doubles (the settings of
:mod:`compiled`), so the hours are the reference's bit for bit:
``tests/unit/test_compiled_scaling.py`` compares them with :func:`scaling.scaled_time` on
random compute jobs over every catalog GPU and every searched count.

Units: seconds [s], bytes [B], GB and GB/s where named.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from service.engine import constants as c
from service.engine.physics import parallelism as par
from service.engine.physics import scaling
from service.engine.physics.batched import Array
from service.engine.physics.compiled import _jit, group_link, node_layout
from service.engine.physics.memory import usable_gb
from service.engine.types import ComputeSpec, GpuSpec

# the scalars of one (job, GPU type)
_PER_NODE, _DOMAIN, _FAST, _PCIE, _NETWORK, _PCIE_LATENCY, _LATENCY, _HOP = range(8)
_EFFICIENCY, _GB, _HALO_DEPTH, _MEMORY_GB, _OVERHEAD_GB, _USABLE_GB = range(8, 14)
_COMPUTE_S, _MEMORY_S, _SERIAL, _STEPS, _COMMUNICATION, _ELEM_B = range(14, 20)
_STARTUP_FIXED, _STARTUP_PER_GPU = range(20, 22)
_PARAMS = 22
COMMUNICATION = {"none": 0.0, "stencil": 1.0, "allreduce": 2.0}


def pack_gpu(gpu: GpuSpec) -> Array:
    """The scalars of :func:`pack` that depend on the GPU type alone (and the constants), the
    job's left 0: kept per GPU type across requests (read-only)."""
    p = np.zeros(_PARAMS)
    p[_PER_NODE], p[_DOMAIN] = max(1, gpu.max_gpus_per_node), par.fast_domain_size(gpu)
    p[_FAST], p[_PCIE], p[_NETWORK] = par.fast_link_gb_s(gpu), par.pcie_gb_s(gpu), \
        par.network_gb_s(gpu)
    p[_PCIE_LATENCY], p[_LATENCY] = c.PCIE_COLLECTIVE_LATENCY_S, c.COLLECTIVE_LATENCY_S
    p[_HOP], p[_EFFICIENCY], p[_GB] = c.REDUCTION_HOP_LATENCY_S, c.COLLECTIVE_EFFICIENCY, c.GB
    p[_HALO_DEPTH] = c.HALO_DEPTH_CELLS
    p[_OVERHEAD_GB] = c.FRAMEWORK_OVERHEAD_GB
    p[_USABLE_GB] = usable_gb(gpu)
    p[_STARTUP_FIXED], p[_STARTUP_PER_GPU] = c.JOB_STARTUP_FIXED_S, c.JOB_STARTUP_S_PER_GPU
    p.flags.writeable = False
    return p


def pack(spec: ComputeSpec, gpu: GpuSpec, one_gpu: tuple[float, float], elem_b: float,
         gpu_row: Array | None = None) -> Array:
    """The scalars :func:`hours` reads for ``spec`` on ``gpu`` (``one_gpu``: its
    (compute_s, memory_s) on one GPU, :func:`estimate.compute_job_seconds`; ``gpu_row``:
    :func:`pack_gpu` of ``gpu`` when the caller keeps it)."""
    p = (pack_gpu(gpu) if gpu_row is None else gpu_row).copy()
    p[_MEMORY_GB] = spec.memory_gb
    p[_COMPUTE_S], p[_MEMORY_S] = one_gpu
    p[_SERIAL], p[_STEPS] = scaling.serial_fraction(spec), scaling.job_steps(spec)
    p[_COMMUNICATION], p[_ELEM_B] = COMMUNICATION[spec.communication], elem_b
    return p


@_jit
def _link(p: Array, network: float, in_node: int, spans: bool) -> tuple[bool, float]:
    """:func:`parallelism.group_link` on the packed GPU at ``network`` [GB/s per GPU]: (the
    link is PCIe, its rate)."""
    return group_link(int(p[_DOMAIN]), p[_FAST], p[_PCIE], network, in_node, spans)


@_jit
def _grid(gpus: int) -> tuple[int, int, int]:
    """:func:`scaling.process_grid` (:data:`scaling.GRID_DIMS` = 3 dimensions, largest
    first): each prime factor, largest first, to the first smallest dimension. Integers in
    registers (no array per count: allocating was most of a count's time)."""
    d0 = d1 = d2 = 1
    n = gpus
    while n > 1:
        # the largest prime factor of what is left
        m, k, largest = n, 2, 1
        while k * k <= m:
            while m % k == 0:
                largest = k
                m //= k
            k += 1
        if m > 1:
            largest = m
        n //= largest
        if d1 < d0:
            if d2 < d1:
                d2 *= largest
            else:
                d1 *= largest
        elif d2 < d0:
            d2 *= largest
        else:
            d0 *= largest
    if d0 < d1:
        d0, d1 = d1, d0
    if d1 < d2:
        d1, d2 = d2, d1
    if d0 < d1:
        d0, d1 = d1, d0
    return d0, d1, d2


@_jit
def _block(grid: tuple[int, int, int], per_node: int) -> tuple[int, int, int]:
    """:func:`scaling.node_block` of ``grid``."""
    left = max(1, per_node)
    b2 = math.gcd(grid[2], left)
    left //= b2
    b1 = math.gcd(grid[1], left)
    left //= b1
    return math.gcd(grid[0], left), b1, b2


@_jit
def _halo(p: Array, side: float, grid: tuple[int, int, int], block: tuple[int, int, int]
          ) -> tuple[float, float]:
    """:func:`scaling.halo_bytes` (``gpus`` > 1, a working set, an element size; ``side``:
    its cells per side of the cubic domain, the same for every count)."""
    elem_b = p[_ELEM_B]
    on = off = 0.0
    for d in range(3):
        neighbours = min(2, grid[d] - 1)
        if neighbours == 0:
            continue
        area = 1.0
        for k in range(3):
            if k != d:
                area = area * (side / grid[k])
        face_b = p[_HALO_DEPTH] * area * elem_b
        if block[d] == grid[d]:
            away = 0
        elif block[d] == 1:
            away = neighbours
        else:
            away = 1
        on += (neighbours - away) * face_b
        off += away * face_b
    return on, off


@_jit
def _side(p: Array) -> float:
    """Cells per side of the job's cubic domain (:func:`scaling.halo_bytes`); 0 without a
    working set or an element size (no halo)."""
    working_set_b = p[_MEMORY_GB] * p[_GB]
    elem_b = p[_ELEM_B]
    if working_set_b > 0.0 and elem_b > 0.0:
        side: float = (working_set_b / elem_b) ** (1.0 / 3.0)
        return side
    return 0.0


@_jit
def _total_s(p: Array, network: float, gpus: int, side: float) -> float:
    """:attr:`scaling.ScaledTime.total_s` of :func:`scaling.scaled_time` on ``gpus`` at
    ``network`` [GB/s per GPU] (``side``: :func:`_side` of ``p``)."""
    compute_s, memory_s = p[_COMPUTE_S], p[_MEMORY_S]
    t1: float = max(compute_s, memory_s)
    if gpus <= 1:
        return t1
    f, steps, communication = p[_SERIAL], p[_STEPS], p[_COMMUNICATION]
    # the exchange (scaling.exchange)
    nodes, in_node = node_layout(int(p[_PER_NODE]), gpus)
    pcie, ring = _link(p, network, in_node, nodes > 1)
    launch = p[_PCIE_LATENCY] if pcie else p[_LATENCY]
    latency_1 = launch + math.ceil(math.log2(gpus)) * p[_HOP]
    intra = _link(p, network, in_node, False)[1]
    inter = _link(p, network, in_node, True)[1] if nodes > 1 else intra
    # one step's transfer (scaling.step_transfer_s)
    transfer_1 = 0.0
    if communication != 0.0:
        working_set_b = p[_MEMORY_GB] * p[_GB]
        rate = p[_GB] * p[_EFFICIENCY]
        elem_b = p[_ELEM_B]
        if communication == 2.0:
            vector = 0.0
            if working_set_b > 0.0 and elem_b > 0.0:
                vector = elem_b * math.sqrt(working_set_b / elem_b)
            volume = 2.0 * (gpus - 1) / gpus * vector
            transfer_1 = volume / (ring * rate) if ring > 0.0 else 0.0
        else:
            on_b = off_b = 0.0
            if working_set_b > 0.0 and elem_b > 0.0:
                grid = _grid(gpus)
                on_b, off_b = _halo(p, side, grid, _block(grid, in_node))
            on_s = on_b / (intra * rate) if on_b > 0.0 and intra > 0.0 else 0.0
            off_s = off_b / (inter * rate) if off_b > 0.0 and inter > 0.0 else 0.0
            transfer_1 = max(on_s, off_s)
    transfer = steps * transfer_1
    latency = steps * latency_1 if communication != 0.0 else 0.0
    startup = p[_STARTUP_FIXED] + p[_STARTUP_PER_GPU] * gpus  # scaling.job_startup_s
    if p[_MEMORY_GB] <= 0.0:
        run = t1 / (gpus - f * (gpus - 1))
        total: float = f * run + (1.0 - f) * run + transfer + latency + startup
        return total
    total = f * t1 + (1.0 - f) * t1 / gpus + transfer + latency + startup
    return total


@_jit
def _hours(p: Array, counts: Array, networks: Array, out: Array) -> None:
    """Each count's hours to finish into ``out`` (NaN: its memory does not hold the job);
    ``networks[i]`` > 0: count ``i`` runs at that network rate per GPU (its offer's, where
    it spans nodes), else at the packed one."""
    side = _side(p)
    for i in range(counts.shape[0]):
        n = int(counts[i])
        per_gpu_gb = p[_MEMORY_GB] / n + p[_OVERHEAD_GB]
        if not per_gpu_gb <= p[_USABLE_GB]:
            out[i] = math.nan
            continue
        network = networks[i] if networks[i] > 0.0 else p[_NETWORK]
        out[i] = _total_s(p, network, n, side) / 3600.0


@_jit
def _hours_in_order(p: Array, counts: Array, networks: Array, one_module: bool,
                    by_hours: bool, out: Array, order: NDArray[np.int64]) -> int:
    """:func:`_hours` into ``out`` (``one_module``: NaN above one GPU, a single-module
    device's), and into ``order`` the indices of the counts that run (not NaN): by their
    hours, ties in count order (a stable sort), where ``by_hours``, else in count order; how
    many."""
    _hours(p, counts, networks, out)
    k = 0
    for i in range(counts.shape[0]):
        if one_module and counts[i] > 1.0:
            out[i] = math.nan
        h = out[i]
        if math.isnan(h):
            continue
        j = k
        while by_hours and j > 0 and out[order[j - 1]] > h:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
        k += 1
    return k


def hours_in_order(packed: Array, counts: Array, networks: Array, one_module: bool,
                   by_hours: bool) -> tuple[list[int], list[float]]:
    """The counts that run, in order (``by_hours``: fastest first, a stable sort of their
    hours; else in count order), and every count's hours (NaN: it does not run; above one
    GPU of a ``one_module`` device none does): :func:`hours_array` and the sort in one
    compiled call."""
    out = np.empty(counts.shape[0])
    order = np.empty(counts.shape[0], dtype=np.int64)
    k = _hours_in_order(packed, counts, networks, one_module, by_hours, out, order)
    return order[:k].tolist(), out.tolist()


def hours(packed: Array, counts: Sequence[int],
          networks: Sequence[float | None] | None = None) -> list[float | None]:
    """The hours to finish on each of ``counts`` GPUs of the packed job and GPU type (None
    where a GPU's memory does not hold its share of the working set), compiled;
    ``networks``: each count's network rate per GPU [GB/s] where it is not the packed GPU's
    (:func:`cost.network_rate`: the offer's, on counts spanning nodes; None: the GPU's), the
    hours :func:`pack` of the GPU carrying that rate gives (the same floats)."""
    nets = np.zeros(len(counts)) if networks is None else np.array(
        [0.0 if r is None else r for r in networks], dtype=np.float64)
    out = hours_array(packed, np.array(counts, dtype=np.float64), nets)
    return [None if math.isnan(h) else h for h in out.tolist()]


def hours_array(packed: Array, counts: Array, networks: Array) -> Array:
    """:func:`hours` of ``counts`` GPUs as an array (NaN: memory does not hold the job);
    ``networks[i]`` > 0: count ``i``'s network rate per GPU [GB/s], else the packed GPU's."""
    out = np.empty(counts.shape[0])
    _hours(packed, counts, networks, out)
    return out


def warm_up() -> None:
    """Compile (or load from numba's cache) the loops; every communication branch."""
    p = np.ones(_PARAMS)
    p[_PER_NODE], p[_DOMAIN], p[_MEMORY_GB], p[_USABLE_GB] = 2.0, 2.0, 1.0, 100.0
    for communication in COMMUNICATION.values():
        p[_COMMUNICATION] = communication
        _hours(p, np.array([1.0, 2.0, 12.0]), np.array([0.0, 0.0, 3.0]), np.empty(3))
    counts, networks = np.array([1.0, 2.0, 12.0]), np.array([0.0, 0.0, 3.0])
    hours_in_order(p, counts, networks, False, True)
    # the figures' counts and networks: the offer index keeps them read only (another type)
    counts.flags.writeable = networks.flags.writeable = False
    hours_in_order(p, counts, networks, False, True)
