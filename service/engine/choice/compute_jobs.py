"""A compute job's options known by their ranked figures alone, without building an estimate.

A ranking of a compute job (FP64 simulation, a dense solver) compares every usable count of
every GPU type -- about 200 (GPU, count, offer) options on the seeded catalog -- to list ten,
and building each option's :class:`~service.engine.types.Estimate` (layout, memory breakdown,
warnings, assumptions) and :class:`~service.engine.recommend_types.CostBreakdown` was most of
such a request's time. The figures the ranking compares (USD to finish, hours, kWh, GPU-hours,
USD/h) are a few multiplications of the job's one-GPU time, its exchange on that count and the
offer's price; :func:`figures` computes exactly those, through the same functions the estimate
and the costing call in the same order (:func:`scaling.scaled_time`,
:func:`cost.hourly_usd`), so they are the same floats. The ranking keeps such options as
:class:`~service.engine.choice.explain.LightOption` and builds the full option only for the
ones it lists (tests/differential.py holds every answer byte for byte).

An option that misses a limit (memory, max_gpus, deadline, budget, $/h), a single-module device
asked for several modules and a GPU without the job's rate get None: the caller builds those in
full, since their failure carries the reason and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.engine import constants as c
from service.engine.cache import Memo
from service.engine.choice import cost as co
from service.engine.physics import parallelism as par
from service.engine.physics import scaling
from service.engine.physics.estimate import (
    compute_job_seconds,
    exchange,
    power_w,
    workload_rate,
)
from service.engine.physics.memory import usable_memory_bytes
from service.engine.recommend_types import Constraints, CostSettings, Offer
from service.engine.types import GpuSpec, Workload


@dataclass(frozen=True, slots=True)
class Figures:
    """What :func:`ranking._metrics` and the option's cost give the ranking."""

    gpu_count: int
    usd_per_hour: float | None
    money: float | None
    """USD to finish (None without an offer)."""
    time: float
    """Hours to finish."""
    energy: float
    """kWh to finish."""
    proxy: float
    """GPU-hours to finish."""


def figures(
    workload: Workload,
    gpu: GpuSpec,
    n: int,
    offer: Offer | None,
    instances: int,
    settings: CostSettings,
    constraints: Constraints,
    memo: Memo,
) -> Figures | None:
    """The ranked figures of ``n`` x ``gpu`` on ``instances`` of ``offer`` for the compute job
    ``workload``, as the full option would give them; None where the full option is needed
    (see the module docstring)."""
    spec = workload.compute
    if spec is None:
        return None
    gpu_n = co.network_gpu(gpu, offer, n, memo)
    if n > 1 and par.single_module(gpu_n):
        return None
    rate = workload_rate(workload, gpu_n)
    if rate is None:
        return None
    per_gpu_gb = spec.memory_gb / n + c.FRAMEWORK_OVERHEAD_GB
    if not per_gpu_gb <= usable_memory_bytes(gpu_n.memory_gb) / c.GB:
        return None
    one = memo.scratch("compute_one_gpu", (workload, gpu_n),
                       lambda: compute_job_seconds(workload, gpu_n, rate))
    scaled = scaling.scaled_time(spec, gpu_n, n, one, c.BYTES_PER_ELEMENT[rate.precision_used],
                                 exchange(gpu_n, n, memo))
    hours = scaled.total_s / 3600.0
    power = power_w(gpu_n, n)
    replicas = 1  # cost.replicas_needed: a compute job runs once
    gpus = n * replicas
    usd_h = total = None
    if offer is not None:
        usd_h = co.hourly_usd(offer, instances, replicas, power, settings)[0]
        total = usd_h * hours
    # explain.limit_failure's checks after memory (a compute job has no latency)
    if constraints.max_gpus is not None and gpus > constraints.max_gpus:
        return None
    if constraints.deadline_hours is not None and hours > constraints.deadline_hours:
        return None
    if constraints.budget_usd is not None and total is not None and \
            total > constraints.budget_usd:
        return None
    if constraints.max_usd_per_hour is not None and usd_h is not None and \
            usd_h > constraints.max_usd_per_hour:
        return None
    return Figures(n, usd_h, total, hours, power * hours / 1000.0, gpus * hours)
