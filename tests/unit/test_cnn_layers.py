"""CNNs timed layer by layer (service/engine/physics/cnn.py)."""

from __future__ import annotations

import pytest

from service.engine import validate_workload
from service.engine.physics import cnn, kernels
from service.engine.physics.estimate import estimate, workload_rate
from service.engine.physics.serving import ServingModel
from service.engine.physics.training import training_floor_flops, training_floor_rate
from service.engine.types import (
    GenericModel,
    GpuSpec,
    InferenceSpec,
    MemoryFormat,
    Precision,
    TrainingSpec,
    Workload,
)
from service.presets.catalog import PRESETS
from service.workloads.schemas import WorkloadError, WorkloadSpec
from tests.unit.gpus import A100_SXM, H100_SXM, L4, V100

R50 = PRESETS["resnet-50"].model


def _train(fmt: MemoryFormat = "nchw", precision: Precision = "fp16",
           ceiling: float | None = None) -> Workload:
    return Workload(
        kind="training", precision=precision, model=R50,
        training=TrainingSpec(batch_size=256, samples=1e6, optimizer="sgd",
                              memory_format=fmt, input_samples_per_s_per_gpu=ceiling),
    )


def _serve(ceiling: float | None = None) -> Workload:
    return Workload(kind="inference", precision="int8", model=R50,
                    inference=InferenceSpec(input_samples_per_s_per_gpu=ceiling))


def _h100() -> kernels.Device:
    rate = workload_rate(_train(), H100_SXM)
    assert rate is not None
    return kernels.device(H100_SXM, rate)


def test_resnet50_table_is_torchvisions() -> None:
    """53 convolutions + the fc layer, 4.09 GMAC and 25.5M weights per 224x224 image (the
    torchvision figures), 2048 -> 1000 classes last."""
    table = cnn.LAYER_TABLES["resnet-50"]
    convs = [x for x in table if x.kind == "conv"]
    assert len(convs) == 54
    assert cnn.forward_flops(table) / 2 == pytest.approx(4.089e9, rel=0.005)
    weights = sum(x.c_in * x.c_out * x.kernel**2 for x in convs)
    assert weights == pytest.approx(25.5e6, rel=0.005)
    assert (convs[-1].c_in, convs[-1].c_out) == (2048, 1000)
    assert not convs[0].grad_input and all(x.grad_input for x in convs[1:])
    assert sum(x.add for x in convs) == 16  # one residual add per bottleneck


def test_narrow_early_convolutions_waste_half_their_tiles() -> None:
    """64-output-channel convolutions fill half of a 128-wide tile: twice their ideal compute
    time on an H100; 256+ channel layers reach their FLOPs' time within a few percent."""
    dev = _h100()
    net = cnn.Net(cnn.LAYER_TABLES["resnet-50"], dev, 2.0, 2.0, training=False)
    ratios: dict[int, list[float]] = {}
    for layer, _, ops in net.layers:
        if ops is None or layer.size_out == 1:
            continue
        rows = 256.0 * layer.size_out**2
        ideal = 2.0 * rows * layer.c_out * layer.c_in * layer.kernel**2
        ratios.setdefault(layer.c_out, []).append(
            ops.fwd.time(rows)[0] * net.dev.matrix_flops_s / ideal)
    assert min(ratios[64]) > 1.9
    assert max(max(v) for k, v in ratios.items() if k >= 256) < 1.15


def test_nchw_training_pays_layout_transposes_on_tensor_cores_only() -> None:
    for gpu in (H100_SXM, A100_SXM):
        nchw = estimate(_train("nchw"), gpu, 1).samples_per_s
        nhwc = estimate(_train("nhwc"), gpu, 1).samples_per_s
        assert nchw is not None and nhwc is not None
        assert 1.25 < nhwc / nchw < 1.6
    fp32 = [estimate(_train(f, "fp32"), V100, 1).samples_per_s for f in ("nchw", "nhwc")]
    assert fp32[0] == fp32[1]


def test_resnet50_training_scales_with_bandwidth_more_than_tensor_peak() -> None:
    """Batch norm, ReLU, residual and layout traffic make ResNet-50 AMP training mostly
    memory-bound on Hopper: H100 / A100 lands near the bandwidth ratio (1.64), far below
    the dense FP16 peak ratio (3.2)."""
    h100 = estimate(_train(), H100_SXM, 1).samples_per_s
    a100 = estimate(_train(), A100_SXM, 1).samples_per_s
    assert h100 is not None and a100 is not None
    assert 1.6 < h100 / a100 < 2.2


def test_input_ceiling_caps_training_and_serving() -> None:
    free = estimate(_train(), H100_SXM, 2)
    capped = estimate(_train(ceiling=1000.0), H100_SXM, 2)
    assert free.samples_per_s is not None and free.samples_per_s > 2500
    # the ceiling caps the healthy step rate; the job's goodput (one GPU: 1 - 6e-6) follows
    assert capped.samples_per_s == pytest.approx(2000.0, rel=1e-4)
    assert any("input-pipeline ceiling" in w for w in capped.warnings)
    assert not any("input-pipeline ceiling" in w for w in free.warnings)
    served = estimate(_serve(5000.0), H100_SXM, 1)
    assert served.samples_per_s == pytest.approx(5000.0, rel=0.01)
    assert any("input-pipeline ceiling" in w for w in served.warnings)


def test_input_ceiling_is_validated() -> None:
    llm = Workload(kind="inference", precision="bf16", model=PRESETS["llama-2-7b"].model,
                   inference=InferenceSpec(prompt_tokens=10, output_tokens=10,
                                           input_samples_per_s_per_gpu=100.0))
    assert [f for f, _ in validate_workload(llm)] == ["inference.input_samples_per_s_per_gpu"]
    with pytest.raises(ValueError):
        WorkloadSpec.model_validate({
            "kind": "training", "model": {"preset": "resnet-50"}, "precision": "fp16",
            "training": {"batch_size": 256, "samples": 1e6, "input_samples_per_s_per_gpu": 0},
        })
    with pytest.raises(WorkloadError):
        WorkloadSpec.model_validate({
            "kind": "inference", "model": {"preset": "llama-2-7b"}, "precision": "bf16",
            "inference": {"prompt_tokens": 8, "output_tokens": 8,
                          "input_samples_per_s_per_gpu": 50},
        }).to_engine()
    ok = WorkloadSpec.model_validate({
        "kind": "training", "model": {"preset": "resnet-50"}, "precision": "fp16",
        "training": {"batch_size": 256, "samples": 1e6, "memory_format": "nhwc",
                     "input_samples_per_s_per_gpu": 900},
    }).to_engine()
    assert ok.training is not None
    assert (ok.training.memory_format, ok.training.input_samples_per_s_per_gpu) == ("nhwc", 900)


def test_generic_model_without_a_table_keeps_the_aggregate_path() -> None:
    custom = GenericModel(25.6e6, 8.2, 45.0, name="my-cnn", layers=54)
    dev = _h100()
    assert isinstance(cnn.network(custom, dev, 2.0, 2.0, training=True), cnn.Aggregate)
    assert isinstance(cnn.network(R50, dev, 2.0, 2.0, training=True), cnn.Net)
    job = Workload(kind="training", precision="fp16", model=custom,
                   training=TrainingSpec(batch_size=256, samples=1e6, optimizer="sgd"))
    speed = estimate(job, H100_SXM, 1).samples_per_s
    assert speed is not None and speed > 0


@pytest.mark.parametrize(("gpu", "precision"), [(H100_SXM, "fp16"), (V100, "fp32")])
def test_lower_bounds_stay_below_the_layer_model(gpu: GpuSpec, precision: Precision) -> None:
    """The ranking prunes on FLOPs at the fastest kernel rate: the layer table's GEMM FLOPs
    (Winograd counted) must never exceed what the layer model times, FP32 included."""
    job = _train("nhwc", precision)
    rate = workload_rate(job, gpu)
    assert rate is not None
    floor_s = training_floor_flops(job) / training_floor_rate(job, gpu, rate)
    plan = estimate(job, gpu, 1)
    assert plan.step_time_ms is not None
    assert floor_s * 1e3 <= plan.step_time_ms
    served = ServingModel(_serve(), gpu, rate, 1, 0.0)
    per_sample = served.timing(256).ttft_s / 256
    assert served.request_floor_s() <= per_sample


def test_inference_activations_that_fit_in_l2_stay_on_chip() -> None:
    """TensorRT's ResNet-50 on the L4 (48 MB L2, 300 GB/s): at a small batch every layer's
    activations fit in the cache and only weights cross DRAM; at a large one they do not,
    and the DRAM bytes per image return. Training never keeps them on chip."""
    job = _serve()
    rate = workload_rate(job, L4)
    assert rate is not None
    dev = kernels.device(L4, rate)
    assert dev.l2_bytes == 48 * 2**20
    net = cnn.network(R50, dev, 1.0, 1.0, training=False)
    assert isinstance(net, cnn.Net)
    off_chip = cnn.network(R50, kernels.replace_l2(dev, 0.0), 1.0, 1.0, training=False)
    small, large = 4.0, 512.0
    assert net.time(small)[1] < 0.2 * off_chip.time(small)[1]
    assert net.time(large)[1] == pytest.approx(off_chip.time(large)[1], rel=0.05)
    train = cnn.network(R50, dev, 2.0, 2.0, training=True)
    train_off = cnn.network(R50, kernels.replace_l2(dev, 0.0), 2.0, 2.0, training=True)
    assert train.time(small) == train_off.time(small)
    # the ranking's lower bound still holds where the cache takes the DRAM traffic away
    served = ServingModel(job, L4, rate, 1, 0.0)
    for batch in (1, 4, 16, 64, 256):
        assert served.request_floor_s() <= served.timing(batch).ttft_s / batch
