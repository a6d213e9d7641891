"""One unit per name: energy to finish [kWh] and energy per hour of serving [kWh/hour] are
separate fields, each set for its kind only; a GPU type's time floor is hours to finish or a
latency [ms], each in its own field."""

from __future__ import annotations

import pytest

from service.engine import estimate
from service.engine.choice import bounds as bd
from service.engine.choice import cost as co
from service.engine.physics import scaling
from service.engine.recommend_types import CostSettings, Offer
from service.engine.types import ComputeSpec, InferenceSpec, TrainingSpec, Workload
from service.presets.catalog import PRESETS
from tests.unit.catalog_data import gpus_by_slug

H100 = gpus_by_slug()["nvidia-h100-sxm5-80gb"]
OFFER = Offer(quote_id=1, gpu_slug=H100.slug, provider="aws", region="us-east-1",
              instance_type="p5.48xlarge", gpu_count=8, pricing="on_demand",
              price_usd_per_hour=98.32)
TRAINING = Workload(kind="training", precision="bf16", model=PRESETS["gpt-2"].model,
                    training=TrainingSpec(batch_size=512, seq_len=1024, tokens=1e10))
COMPUTE = Workload(kind="compute", precision="fp64",
                   compute=ComputeSpec(total_tflop=1e6, memory_gb=10))
SERVING = Workload(kind="inference", precision="fp16", model=PRESETS["llama-2-7b"].model,
                   inference=InferenceSpec(prompt_tokens=512, output_tokens=128,
                                           target_requests_per_s=200))


@pytest.mark.parametrize("workload", [TRAINING, COMPUTE], ids=["training", "compute"])
def test_a_job_has_energy_to_finish_only(workload: Workload) -> None:
    est = estimate(workload, H100, 8)
    assert est.power_w is not None and est.time_to_complete_hours is not None
    assert est.energy_kwh_total == pytest.approx(est.power_w * est.time_to_complete_hours / 1000)
    assert est.energy_kwh_per_hour is None
    cost = co.cost_breakdown(workload, est, OFFER, 1, CostSettings())
    assert cost.energy_kwh_total == est.energy_kwh_total and cost.energy_kwh_per_hour is None


def test_training_without_an_amount_has_no_energy() -> None:
    spec = TrainingSpec(batch_size=512, seq_len=1024)
    est = estimate(Workload(kind="training", precision="bf16", model=PRESETS["gpt-2"].model,
                            training=spec), H100, 8)
    assert est.time_to_complete_hours is None
    assert est.energy_kwh_total is None and est.energy_kwh_per_hour is None


def test_serving_has_energy_per_hour_only() -> None:
    est = estimate(SERVING, H100, 1)
    assert est.power_w is not None
    one_hour = 1.0
    assert est.energy_kwh_per_hour == pytest.approx(est.power_w * one_hour / 1000)
    assert est.energy_kwh_total is None
    cost = co.cost_breakdown(SERVING, est, OFFER, 1, CostSettings())
    assert cost.replicas > 1  # the target needs several copies: the hourly energy counts all
    assert cost.energy_kwh_per_hour == pytest.approx(est.energy_kwh_per_hour * cost.replicas)
    assert cost.energy_kwh_total is None


@pytest.mark.parametrize("workload", [TRAINING, COMPUTE], ids=["training", "compute"])
def test_a_jobs_time_floor_is_in_hours(workload: Workload) -> None:
    floor = bd.floors(workload, H100, 1, 8)
    assert floor.time_hours > 0 and floor.latency_ms == 0.0
    # the one-GPU hours over the 8 GPUs (ideal scaling; compute jobs keep their serial
    # part) and the start-up of 8 GPUs (these jobs run hours: the largest count is the
    # fastest), never above the estimate's time
    startup_h = scaling.job_startup_s(8) / 3600
    if workload.kind == "compute":
        assert workload.compute is not None
        f = scaling.serial_fraction(workload.compute)
        assert floor.time_hours == pytest.approx(
            f * floor.gpu_hours + (1 - f) * floor.gpu_hours / 8 + startup_h)
        assert floor.time_hours > floor.gpu_hours / 8 * 1.003  # f = 5e-4: 7 x 5e-4 above
    else:
        assert floor.time_hours == pytest.approx(floor.gpu_hours / 8 + startup_h)
    hours = estimate(workload, H100, 8).time_to_complete_hours
    assert hours is not None and floor.time_hours <= hours


def test_a_services_time_floor_is_a_latency_in_ms() -> None:
    floor = bd.floors(SERVING, H100, 1, 8)
    assert floor.latency_ms > 0 and floor.time_hours == 0.0
    latency = estimate(SERVING, H100, 1).latency_ms
    assert latency is not None and floor.latency_ms <= latency
