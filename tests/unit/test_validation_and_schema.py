"""validate_workload names fields; the request schema resolves presets; presets are sane."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.engine import validate_workload
from service.engine.types import (
    ComputeSpec,
    InferenceSpec,
    TrainingSpec,
    TransformerModel,
    Workload,
)
from service.presets import PRESETS, preset_to_dict
from service.workloads.schemas import WorkloadError, WorkloadSpec


def _fields(w: Workload) -> set[str]:
    return {field for field, _ in validate_workload(w)}


BAD = TransformerModel(
    params=7e9,
    layers=32,
    hidden_size=4100,
    attention_heads=32,
    kv_heads=5,
    vocab_size=32000,
    intermediate_size=11008,
    experts=2,
    experts_per_token=4,
)


def test_inconsistent_model_fields_are_named() -> None:
    w = Workload(kind="training", precision="bf16", model=BAD, training=TrainingSpec(batch_size=8))
    fields = _fields(w)
    assert {"model.hidden_size", "model.kv_heads", "model.experts_per_token"} <= fields
    assert {"training.seq_len", "training.tokens"} <= fields


def test_inference_needs_tokens_and_compute_needs_spec() -> None:
    model = PRESETS["llama-2-7b"].model
    w = Workload(kind="inference", precision="fp16", model=model, inference=InferenceSpec())
    assert "inference.prompt_tokens" in _fields(w)
    assert "compute" in _fields(Workload(kind="compute", precision="fp64"))
    assert "training" in _fields(Workload(kind="training", precision="bf16", model=model))


def test_a_section_of_another_kind_is_named() -> None:
    """The engine would read an inference section as serving whatever the kind (the API drops
    such sections before the engine sees them; a Python caller gets the error)."""
    model = PRESETS["llama-2-7b"].model
    serve = InferenceSpec(prompt_tokens=128, output_tokens=16)
    train = TrainingSpec(batch_size=8, seq_len=4096, tokens=1e9)
    w = Workload(kind="training", precision="bf16", model=model, training=train,
                 inference=serve)
    assert validate_workload(w) == [("inference", "a training workload takes no inference "
                                                  "section")]
    w = Workload(kind="inference", precision="bf16", model=model, inference=serve,
                 training=train)
    assert _fields(w) == {"training"}
    w = Workload(kind="compute", precision="fp64", inference=serve,
                 compute=ComputeSpec(total_tflop=1e3, total_gb_moved=1e2, memory_gb=1))
    assert _fields(w) == {"inference"}


def test_valid_workload_has_no_errors() -> None:
    w = Workload(
        kind="training",
        precision="bf16",
        model=PRESETS["llama-2-7b"].model,
        training=TrainingSpec(batch_size=8, seq_len=4096, tokens=1e9),
    )
    assert validate_workload(w) == []


def test_schema_resolves_preset_and_fsdp_alias() -> None:
    spec = WorkloadSpec.model_validate(
        {
            "kind": "training",
            "model": {"preset": "llama-2-70b"},
            "precision": "bf16",
            "training": {"batch_size": 64, "seq_len": 4096, "tokens": 1e9, "sharding": "fsdp"},
        }
    )
    w = spec.to_engine()
    assert w.training is not None and w.training.sharding == "zero3"
    assert w.model == PRESETS["llama-2-70b"].model


def test_schema_unknown_preset_names_field() -> None:
    spec = WorkloadSpec.model_validate(
        {"kind": "inference", "model": {"preset": "nope"}, "inference": {"prompt_tokens": 1}}
    )
    with pytest.raises(WorkloadError, match="unknown preset 'nope'") as err:
        spec.to_engine()
    assert err.value.errors[0][0] == "model.preset"


def test_schema_rejects_extra_nan_and_bounds() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        WorkloadSpec.model_validate({"kind": "compute", "compute": {"total_tflop": 1}, "x": 1})
    with pytest.raises(ValidationError, match="finite number"):
        WorkloadSpec.model_validate({"kind": "compute", "compute": {"total_tflop": float("nan")}})
    with pytest.raises(ValidationError, match="less than or equal to"):
        WorkloadSpec.model_validate(
            {"kind": "training", "model": {"params": 1e20, "gflops_per_sample": 1}}
        )


def test_schema_validate_workload_errors_surface() -> None:
    spec = WorkloadSpec.model_validate(
        {
            "kind": "training",
            "model": {"preset": "llama-2-7b"},
            "training": {"batch_size": 8, "tokens": 1e9},
        }
    )
    with pytest.raises(WorkloadError, match="seq_len is required") as err:
        spec.to_engine()
    assert "training.seq_len" in {f for f, _ in err.value.errors}


def test_schema_examples_validate() -> None:
    examples = WorkloadSpec.model_json_schema()["examples"]
    assert {e["kind"] for e in examples} == {"inference", "training", "compute"}
    assert len(examples) == 5  # + padding-free BERT inference, FP64 matrix-unit DGEMM
    for example in examples:
        WorkloadSpec.model_validate(example).to_engine()


EXPECTED_IDS = {
    "resnet-50",
    "ssd300",
    "yolov8-l",
    "bert-base",
    "bert-large",
    "gpt-2",
    "gpt-j-6b",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "gpt-3-175b",
}


def test_preset_ids_and_architecture() -> None:
    assert set(PRESETS) == EXPECTED_IDS
    for preset in PRESETS.values():
        d = preset_to_dict(preset)
        assert d["id"] == preset.id and d["source"]
        model = preset.model
        if isinstance(model, TransformerModel):
            w = Workload(
                kind="inference",
                precision="bf16",
                model=model,
                inference=InferenceSpec(
                    prompt_tokens=16, output_tokens=0 if model.encoder_only else 16
                ),
            )
            assert validate_workload(w) == [], preset.id
            # params within 10% of 12*L*h^2 + embeddings for dense models (sanity of the numbers)
            if model.experts == 1:
                approx = (
                    model.layers
                    * (
                        4 * model.hidden_size**2 * (1 + model.kv_heads / model.attention_heads) / 2
                        + (3 if model.intermediate_size < 4 * model.hidden_size else 2)
                        * model.hidden_size
                        * model.intermediate_size
                    )
                    + model.vocab_size * model.hidden_size
                )
                assert approx == pytest.approx(model.params, rel=0.25), preset.id
    mixtral = PRESETS["mixtral-8x7b"].model
    assert isinstance(mixtral, TransformerModel)
    assert (mixtral.experts, mixtral.experts_per_token, mixtral.active_params) == (8, 2, 12.9e9)
