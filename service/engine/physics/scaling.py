"""Strong scaling of a compute job: how the time to finish falls, then flattens, with GPUs.

A fixed job split over p GPUs (Amdahl 1967; the communication terms of Gropp, Lusk &
Skjellum, 'Using MPI', ch. 4, for a 3-D domain decomposition)::

    T(p) = f x T1  +  (1 - f) x T1 / p  +  steps x (transfer(p) + latency(p))  +  start(p)

* ``T1``: the one-GPU roofline time, max(FLOPs / sustained rate, bytes / bandwidth).
* ``f``: the serial fraction (:data:`constants.SERIAL_FRACTION` unless the job gives one).
* ``steps``: iterations or time steps, each ending in one exchange (:func:`job_steps`).
* ``transfer``: the bytes one GPU sends per step over the link they cross, at
  :data:`constants.COLLECTIVE_EFFICIENCY` of its one-way rate:

  - ``stencil``: halos of a 3-D domain decomposition. The working set V [B] is a cube of
    cells of the precision's element size split over a near-cubic p1 x p2 x p3 grid; each
    face with a neighbour sends depth x face-area cells (:data:`constants.HALO_DEPTH_CELLS`),
    so a GPU's halo is ~6 x depth x (V/p)^(2/3) x B^(1/3) once every dimension is split:
    it shrinks as (V/p)^(2/3) while the compute shrinks as V/p, which is why strong
    scaling saturates. Ranks are placed on nodes in row-major order (MPI's default block
    placement), so faces whose neighbour sits on another node cross the network and the
    others the node's link (NVLink / Infinity Fabric / PCIe); both run at once, the slower
    sets the step.
  - ``allreduce``: a dense iterative solver (Krylov, power iteration): each step sweeps the
    n x n matrix once and all-reduces an n-vector (n = sqrt(V / B)), a ring moving
    2 (p-1)/p of it over the slowest link the ring crosses.
  - ``none``: nothing exchanged (independent tasks); only the serial fraction limits it.

* ``latency``: one collective launch (:data:`constants.COLLECTIVE_LATENCY_S`; PCIe:
  :data:`constants.PCIE_COLLECTIVE_LATENCY_S`) plus a global scalar reduction per step (a
  time step's CFL limit, a residual norm): ceil(log2 p) rounds of
  :data:`constants.REDUCTION_HOP_LATENCY_S`. Communication is not overlapped with compute
  (the conservative reading: codes that overlap halos with interior work do better).

* ``start``: the launch and communicator set-up before the first step (:func:`job_startup_s`,
  none on one GPU): a fixed part and a bootstrap linear in the ranks.

A job that gives no working set (``memory_gb`` 0) is taken as sized to the machine (weak
scaling: HPL, capability runs): its serial part is ``f`` of the parallel run (Gustafson's
scaled speedup ``p - f (p - 1)``), not of ``T1``.

``T(p) >= T1 / p`` always (every added term is >= 0 and f x T1 >= f x T1 / p), so the
ranking's perfect-scaling floors (:mod:`service.engine.choice.bounds`) stay lower bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.engine import constants as c
from service.engine.physics import parallelism as par
from service.engine.types import Bound, ComputeSpec, GpuSpec

GRID_DIMS = 3
"""Dimensions of the domain decomposition (3-D: structured-grid CFD, climate, seismic)."""


@dataclass(frozen=True)
class ScaledTime:
    """A compute job's time to finish on ``gpus`` GPUs and its parts [s]."""

    gpus: int
    one_gpu_s: float
    """Roofline time of the whole job on one GPU."""
    serial_s: float
    """The serial fraction of ``one_gpu_s`` (run once, whatever the count)."""
    parallel_s: float
    """The rest of ``one_gpu_s`` divided over the GPUs."""
    transfer_s: float
    """Bytes exchanged over all steps."""
    latency_s: float
    """Per-step message and reduction latency over all steps."""
    compute_bound: bool
    """The one-GPU roofline is compute- (not memory-bandwidth-) bound."""
    startup_s: float = 0.0
    """Launch and communicator set-up before the first step (:func:`job_startup_s`)."""

    @property
    def total_s(self) -> float:
        if self.gpus == 1:
            return self.one_gpu_s
        return self.serial_s + self.parallel_s + self.transfer_s + self.latency_s \
            + self.startup_s

    @property
    def efficiency(self) -> float:
        """Parallel efficiency T1 / (p x T(p)) [fraction]; 1.0 on one GPU."""
        total = self.total_s
        if self.gpus == 1 or total <= 0:
            return 1.0
        return self.one_gpu_s / (self.gpus * total)

    @property
    def bound(self) -> Bound:
        if self.transfer_s + self.latency_s > self.parallel_s + self.serial_s:
            return "interconnect"
        return "compute" if self.compute_bound else "memory_bandwidth"


def job_steps(spec: ComputeSpec) -> float:
    """Steps (each ending in one exchange) of a compute job: the job's own figure, else its
    sweeps over the working set, ``total_gb_moved / memory_gb`` (at least 1).

    A stencil time step or a solver iteration streams its whole working set (grid or matrix)
    through memory at least once (the roofline stencil model, Williams, Waterman & Patterson
    2009, CACM 52(4)), so the sweeps bound the steps from above: the derived count never
    understates the exchanges. A job with no traffic or no working set is one step."""
    if spec.steps is not None:
        return max(1.0, spec.steps)
    if spec.memory_gb <= 0 or spec.total_gb_moved <= 0:
        return 1.0
    return max(1.0, spec.total_gb_moved / spec.memory_gb)


def serial_fraction(spec: ComputeSpec) -> float:
    """The job's serial fraction, else :data:`constants.SERIAL_FRACTION`."""
    return c.SERIAL_FRACTION if spec.serial_fraction is None else spec.serial_fraction


def process_grid(gpus: int) -> tuple[int, int, int]:
    """A near-cubic p1 x p2 x p3 = ``gpus`` grid, largest first (what ``MPI_Dims_create``
    returns): prime factors, largest first, each to the currently smallest dimension."""
    factors: list[int] = []
    n, k = gpus, 2
    while k * k <= n:
        while n % k == 0:
            factors.append(k)
            n //= k
        k += 1
    if n > 1:
        factors.append(n)
    dims = [1] * GRID_DIMS
    for f in sorted(factors, reverse=True):
        dims[dims.index(min(dims))] *= f
    a, b, d = sorted(dims, reverse=True)
    return a, b, d


def node_block(grid: tuple[int, int, int], gpus_per_node: int) -> tuple[int, int, int]:
    """The extent of one node's GPUs in each grid dimension under row-major block placement
    (consecutive ranks on a node, the last dimension varying fastest)."""
    left = max(1, gpus_per_node)
    block = [1] * GRID_DIMS
    for d in reversed(range(GRID_DIMS)):
        block[d] = math.gcd(grid[d], left)
        left //= block[d]
    a, b, e = block
    return a, b, e


def halo_bytes(
    working_set_b: float, gpus: int, gpus_per_node: int, elem_b: float,
    geometry: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None,
) -> tuple[float, float]:
    """(on-node, off-node) halo bytes [B] one GPU sends per step: the GPU on the critical
    path, at a node-block edge, inside the grid (two neighbours per split dimension, one when
    the dimension is split in two). ``geometry``: (:func:`process_grid`, :func:`node_block`)
    of ``gpus`` and ``gpus_per_node`` when the caller has them."""
    if gpus <= 1 or working_set_b <= 0 or elem_b <= 0:
        return 0.0, 0.0
    if geometry is None:
        grid = process_grid(gpus)
        geometry = grid, node_block(grid, gpus_per_node)
    grid, block = geometry
    side = (working_set_b / elem_b) ** (1.0 / 3.0)  # cells per side of the cubic domain
    extent = [side / g for g in grid]
    on = off = 0.0
    for d in range(GRID_DIMS):
        neighbours = min(2, grid[d] - 1)
        if neighbours == 0:
            continue
        area = math.prod(extent[k] for k in range(GRID_DIMS) if k != d)
        face_b = c.HALO_DEPTH_CELLS * area * elem_b
        if block[d] == grid[d]:
            away = 0
        elif block[d] == 1:
            away = neighbours
        else:
            away = 1
        on += (neighbours - away) * face_b
        off += away * face_b
    return on, off


def allreduce_vector_bytes(working_set_b: float, elem_b: float) -> float:
    """The n-vector of an n x n matrix of ``working_set_b`` bytes [B]."""
    if working_set_b <= 0 or elem_b <= 0:
        return 0.0
    return elem_b * math.sqrt(working_set_b / elem_b)


@dataclass(frozen=True, slots=True)
class Exchange:
    """What one step's exchange crosses on ``gpus`` GPUs of a GPU type, whatever the job: a
    pure function of the GPU's figures and the count (kept across requests by callers that
    have a shared cache), so a ranking that times hundreds of counts does the link and grid
    arithmetic once per (GPU, count)."""

    per_node: int
    """GPUs per node used (``node_layout``)."""
    latency_s: float
    """One exchange's launch plus a global scalar reduction: :func:`step_latency_s`."""
    ring_gb_s: float
    """One-way rate of the slowest link an all-reduce ring crosses [GB/s]."""
    intra_gb_s: float
    """The node's link, for halo faces whose neighbour is on the same node [GB/s]."""
    inter_gb_s: float
    """The link faces cross to another node (the node's link on one node) [GB/s]."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def exchange(gpu: GpuSpec, gpus: int) -> Exchange:
    """The :class:`Exchange` of ``gpus`` x ``gpu`` (``gpus`` >= 2)."""
    nodes, per_node = par.node_layout(gpu, gpus)
    name, ring = par.group_link(gpu, per_node, spans_nodes=nodes > 1)
    launch = c.PCIE_COLLECTIVE_LATENCY_S if name == "pcie" else c.COLLECTIVE_LATENCY_S
    latency = launch + math.ceil(math.log2(gpus)) * c.REDUCTION_HOP_LATENCY_S
    _, intra = par.group_link(gpu, per_node, spans_nodes=False)
    inter = par.group_link(gpu, per_node, spans_nodes=True)[1] if nodes > 1 else intra
    grid = process_grid(gpus)
    return Exchange(per_node, latency, ring, intra, inter, grid, node_block(grid, per_node))


def step_latency_s(gpu: GpuSpec, gpus: int, ex: Exchange | None = None) -> float:
    """One exchange's launch plus a global scalar reduction (ceil(log2 p) rounds) [s]."""
    if gpus <= 1:
        return 0.0
    return (ex or exchange(gpu, gpus)).latency_s


def step_transfer_s(spec: ComputeSpec, gpu: GpuSpec, gpus: int, elem_b: float,
                    ex: Exchange | None = None) -> float:
    """Seconds one step's exchange moves bytes for (see the module docstring)."""
    if gpus <= 1 or spec.communication == "none":
        return 0.0
    ex = ex or exchange(gpu, gpus)
    working_set_b = spec.memory_gb * c.GB
    rate = c.GB * c.COLLECTIVE_EFFICIENCY
    if spec.communication == "allreduce":
        link = ex.ring_gb_s
        volume = 2.0 * (gpus - 1) / gpus * allreduce_vector_bytes(working_set_b, elem_b)
        return volume / (link * rate) if link > 0 else 0.0
    on_b, off_b = halo_bytes(working_set_b, gpus, ex.per_node, elem_b, (ex.grid, ex.block))
    intra, inter = ex.intra_gb_s, ex.inter_gb_s
    on_s = on_b / (intra * rate) if on_b > 0 and intra > 0 else 0.0
    off_s = off_b / (inter * rate) if off_b > 0 and inter > 0 else 0.0
    return max(on_s, off_s)


def job_startup_s(gpus: int) -> float:
    """Seconds a job on ``gpus`` GPUs spends before its first step: none on one GPU; on
    several, the communicator's set-up (:data:`constants.JOB_STARTUP_FIXED_S`) plus a
    bootstrap growing with the ranks (:data:`constants.JOB_STARTUP_S_PER_GPU`). Part of a
    job's time to finish (a fast job on thousands of GPUs waits minutes to start: what keeps
    a 15-s solve off 128 nodes), not of its rates (HPL's Rmax, samples/s)."""
    if gpus <= 1:
        return 0.0
    return c.JOB_STARTUP_FIXED_S + c.JOB_STARTUP_S_PER_GPU * gpus


def scaled_time(
    spec: ComputeSpec,
    gpu: GpuSpec,
    gpus: int,
    one_gpu: tuple[float, float],
    elem_b: float,
    ex: Exchange | None = None,
) -> ScaledTime:
    """The job's time on ``gpus`` GPUs from ``one_gpu`` = (compute_s, memory_s) on one GPU
    [s]; ``elem_b``: bytes per element of the precision it runs at; ``ex``: the
    :class:`Exchange` of ``gpus`` x ``gpu`` when the caller has it."""
    compute_s, memory_s = one_gpu
    t1 = max(compute_s, memory_s)
    if gpus <= 1:
        return ScaledTime(1, t1, 0.0, t1, 0.0, 0.0, compute_s >= memory_s)
    f = serial_fraction(spec)
    steps = job_steps(spec)
    transfer = steps * step_transfer_s(spec, gpu, gpus, elem_b, ex)
    latency = steps * step_latency_s(gpu, gpus, ex) if spec.communication != "none" else 0.0
    if spec.memory_gb <= 0:
        # no working set given: a job sized to the machine (HPL, capability runs) scales
        # weakly, and the serial part is a fraction of the parallel run, not of the one-GPU
        # time (Gustafson 1988: scaled speedup p - f (p - 1))
        run = t1 / (gpus - f * (gpus - 1))
        return ScaledTime(gpus, t1, f * run, (1.0 - f) * run, transfer, latency,
                          compute_s >= memory_s, job_startup_s(gpus))
    return ScaledTime(gpus, t1, f * t1, (1.0 - f) * t1 / gpus, transfer, latency,
                      compute_s >= memory_s, job_startup_s(gpus))
