"""Options of compute and training jobs known by their ranked figures alone, without building
an estimate.

A ranking compares every usable count of every GPU type -- about 200 (GPU, count, offer)
options of a compute job on the seeded catalog, ~165 of a training job -- to list ten, and
building each option's :class:`~service.engine.types.Estimate` (layout, memory breakdown,
warnings, fixes, assumptions) and :class:`~service.engine.recommend_types.CostBreakdown` was
most of a compute job's time. The figures the ranking compares (USD to finish, hours, kWh,
GPU-hours, USD/h) are a few multiplications of the job's time on that count and the offer's
price: a compute job's one-GPU time and exchanges (:func:`scaling.scaled_time`), a training
job's planned step (:func:`training.plan_training`, memoized for the call, which the full
estimate then reuses). :func:`figures` computes exactly those, through the same functions the
estimate and the costing call in the same order (:func:`cost.hourly_usd`), so they are the same
floats. The ranking keeps such options as :class:`~service.engine.choice.explain.LightOption`
and builds the full option only for the ones it lists (tests/differential.py holds every answer
byte for byte). Inference options are always built in full: their figures come out of the
serving searches that build the estimate.

An option that misses a limit (memory, idle replicas, max_gpus, deadline, budget, $/h), a
single-module device asked for several modules and a GPU without the job's rate get None: the
caller builds those in full, since their failure carries the reason and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.engine import constants as c
from service.engine.cache import Memo
from service.engine.choice import cost as co
from service.engine.choice.explain import first_cost_limit
from service.engine.physics import parallelism as par
from service.engine.physics import scaling
from service.engine.physics import training as tr
from service.engine.physics import training_splits as splits
from service.engine.physics.estimate import (
    compute_job_seconds,
    exchange,
    power_w,
    sustained_samples_s,
    training_hours,
    workload_rate,
)
from service.engine.physics.memory import usable_memory_bytes
from service.engine.physics.performance import PeakRate
from service.engine.recommend_types import Constraints, CostSettings, Offer
from service.engine.types import GpuSpec, TransformerModel, Workload


@dataclass(frozen=True, slots=True)
class Figures:
    """What :func:`ranking._metrics` and the option's cost give the ranking."""

    gpu_count: int
    usd_per_hour: float | None
    money: float | None
    """USD to finish (USD/h for a training job of no stated length; None without an
    offer)."""
    time: float
    """Hours to finish (inf: no stated length)."""
    energy: float
    """kWh to finish (inf: no stated length)."""
    proxy: float
    """GPU-hours to finish (GPUs for a job of no stated length)."""


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
    """The ranked figures of ``n`` x ``gpu`` on ``instances`` of ``offer`` for the compute or
    training job ``workload``, as the full option would give them; None where the full option
    is needed (see the module docstring)."""
    if workload.kind not in ("compute", "training"):
        return None
    gpu_n = co.network_gpu(gpu, offer, n, memo)
    if n > 1 and par.single_module(gpu_n):
        return None
    rate = workload_rate(workload, gpu_n)
    if rate is None:
        return None
    runs: bool
    hours: float | None
    if workload.kind == "compute":
        runs, hours = _compute_job_hours(workload, gpu_n, n, rate, memo)
    else:
        runs, hours = _training_job_hours(workload, gpu_n, n, rate, memo)
    if not runs:
        return None
    power = power_w(gpu_n, n)
    replicas = 1  # cost.replicas_needed: a compute or training job runs once
    gpus = n * replicas
    usd_h = total = None
    if offer is not None:
        usd_h = co.hourly_usd(offer, instances, replicas, power, settings)[0]
        total = usd_h * hours if hours is not None else None
    # explain.limit_failure's limits after memory (these jobs have no latency)
    if first_cost_limit(constraints, gpus, hours, total, usd_h) is not None:
        return None
    energy = None if hours is None else power * hours / 1000.0  # the estimate's kWh
    return Figures(n, usd_h, *job_metrics(hours, usd_h, total, gpus, energy))


def job_metrics(hours: float | None, usd_per_hour: float | None, total_usd: float | None,
                gpus: int, energy_kwh: float | None) -> tuple[float | None, float, float, float]:
    """(money, time, energy, proxy) a compute or training option is ranked on, from its hours
    to finish (None: the job states no length), its price (USD/h, USD to finish; None without
    an offer), its GPUs in all and its kWh to finish: USD to finish (USD/h for a job of no
    length), hours, kWh (inf where unknown; 0.0 kWh, a vanishing job's energy, is the best
    value, not an unknown one) and GPU-hours (GPUs for a job of no length)."""
    money = total_usd if hours is not None else usd_per_hour
    proxy = gpus * (hours if hours is not None else 1.0)
    kwh = math.inf if energy_kwh is None else energy_kwh
    return money, math.inf if hours is None else hours, kwh, proxy


def _compute_job_hours(
    workload: Workload, gpu: GpuSpec, n: int, rate: PeakRate, memo: Memo
) -> tuple[bool, float]:
    """(memory holds the job, ``estimate._estimate_compute``'s hours to finish)."""
    spec = workload.compute
    assert spec is not None
    per_gpu_gb = spec.memory_gb / n + c.FRAMEWORK_OVERHEAD_GB
    if not per_gpu_gb <= usable_memory_bytes(gpu.memory_gb) / c.GB:
        return False, 0.0
    one = memo.scratch("compute_one_gpu", (workload, gpu),
                       lambda: compute_job_seconds(workload, gpu, rate, memo))
    scaled = scaling.scaled_time(spec, gpu, n, one, c.BYTES_PER_ELEMENT[rate.precision_used],
                                 exchange(gpu, n, memo))
    return True, scaled.total_s / 3600.0


def _training_job_hours(
    workload: Workload, gpu: GpuSpec, n: int, rate: PeakRate, memo: Memo
) -> tuple[bool, float | None]:
    """(the job runs: its plan fits and leaves no data-parallel replica without a sample,
    ``estimate._estimate_training``'s hours to finish; None: the job states no length)."""
    spec, model = workload.training, workload.model
    assert spec is not None and model is not None
    fitted = tr.fitted_step(workload, gpu, n, rate, memo)
    if fitted is None or splits.idle_replicas(workload, fitted[0]):
        return False, None
    seq = (spec.seq_len or 1) if isinstance(model, TransformerModel) else 1
    samples_s = sustained_samples_s(workload, n, spec.batch_size / fitted[1], seq)
    return True, training_hours(workload, samples_s, seq)
