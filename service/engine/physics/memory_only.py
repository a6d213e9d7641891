"""The estimate a memory rejection is explained from, without the speed search.

:func:`service.engine.choice.explain.memory_failure` reads only an estimate's memory figures (the
per-GPU breakdown at the largest count tried) and its fixes. For training, where a catalog
can hold thousands of GPU types that no count fits (a 70B model without checkpointing), the
full estimate's layout and step-time search is most of the work of rejecting them; this
builds the same memory figures and fixes from the minimum-memory layout alone.
"""

from __future__ import annotations

from service.engine.cache import Memo, memo_of
from service.engine.physics import training as tr
from service.engine.physics.estimate import _training_fixes, estimate, workload_rate
from service.engine.physics.memory import capacity_gb
from service.engine.types import Estimate, GpuSpec, Workload


def memory_estimate(
    workload: Workload, gpu: GpuSpec, gpu_count: int, memo: Memo | None = None
) -> Estimate:
    """``estimate(workload, gpu, gpu_count)`` with the same ``gpu_count``, ``fits``,
    ``memory``, ``memory_per_gpu_gb``, ``infeasible_reasons``, ``fixes`` and
    ``min_gpus_to_fit``; speed, energy and layout-derived fields are left out (None/empty).

    Training when no layout fits: the full estimate falls back to the minimum-memory layout
    (:func:`training.plan_training`), which is what this returns without the step times. In
    every other case (a layout fits, other kinds, no rate) it is the full estimate."""
    memo = memo_of(memo)
    rate = workload_rate(workload, gpu)
    spec = workload.training
    if workload.kind != "training" or rate is None or spec is None:
        return estimate(workload, gpu, gpu_count, memo=memo)
    prec = rate.precision_used
    if tr.fits(workload, gpu, gpu_count, prec, memo=memo):
        # plan_training would pick a fitting layout
        return estimate(workload, gpu, gpu_count, memo=memo)
    plan = tr.min_memory_plan(workload, gpu, gpu_count, prec, memo=memo)
    fixes, reasons, needed = _training_fixes(workload, gpu, gpu_count, prec, plan, memo)
    return Estimate(
        gpu_slug=gpu.slug,
        gpu_count=gpu_count,
        fits=plan.fits,
        precision_used=prec,
        memory_per_gpu_gb=plan.memory.total,
        memory_available_gb=capacity_gb(gpu),
        memory=plan.memory,
        parallelism=plan.layout.parallelism,
        bound=None,
        infeasible_reasons=reasons,
        fixes=fixes,
        min_gpus_to_fit=needed,
    )
