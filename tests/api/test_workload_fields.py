"""inference.effective_prompt_tokens and compute.fp64_units through the API."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.workloads.schemas import WorkloadSpec
from tests.helpers import H100, assert_problem

FIELD = "body.workload.inference.effective_prompt_tokens"


def _bert(**inference: Any) -> dict[str, Any]:
    return {
        "workload": {
            "kind": "inference", "model": {"preset": "bert-large"}, "precision": "fp16",
            "inference": {"prompt_tokens": 512, "batch_size": 64, **inference},
        },
        "gpu_slug": H100,
    }


def _dgemm(**compute: Any) -> dict[str, Any]:
    return {
        "workload": {"kind": "compute", "precision": "fp64",
                     "compute": {"total_tflop": 1e6, "memory_gb": 40, **compute}},
        "gpu_slug": H100,
    }


def test_effective_prompt_tokens_accepted(client: TestClient) -> None:
    resp = client.post("/v1/estimates", json=_bert(effective_prompt_tokens=180))
    assert resp.status_code == 200, resp.text
    assert client.post("/v1/estimates", json=_bert(effective_prompt_tokens=512)).status_code == 200


@pytest.mark.parametrize("value", [513, 100_000])
def test_effective_above_prompt_tokens_is_422_naming_the_field(client: TestClient,
                                                               value: int) -> None:
    problem = assert_problem(
        client.post("/v1/estimates", json=_bert(effective_prompt_tokens=value)), 422, FIELD)
    assert "prompt_tokens 512" in problem["errors"][0]["message"]


@pytest.mark.parametrize("value", [0, -3, 2.5, "many"])
def test_malformed_effective_prompt_tokens_is_422(client: TestClient, value: Any) -> None:
    assert_problem(client.post("/v1/estimates", json=_bert(effective_prompt_tokens=value)),
                   422, FIELD)


def test_effective_prompt_tokens_needs_a_transformer(client: TestClient) -> None:
    body = {
        "workload": {"kind": "inference", "model": {"preset": "resnet-50"}, "precision": "fp16",
                     "inference": {"prompt_tokens": 128, "effective_prompt_tokens": 64}},
        "gpu_slug": H100,
    }
    problem = assert_problem(client.post("/v1/estimates", json=body), 422, FIELD)
    assert "transformer" in problem["errors"][0]["message"]


def test_effective_prompt_tokens_checked_on_stored_workloads_too(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    body = {"name": "bert", **_bert(effective_prompt_tokens=600)["workload"]}
    assert_problem(client.post("/v1/workloads", json=body, headers=admin_headers), 422,
                   "body.inference.effective_prompt_tokens")
    body["inference"]["effective_prompt_tokens"] = 200
    created = client.post("/v1/workloads", json=body, headers=admin_headers)
    assert created.status_code == 201, created.text
    stored = client.get(f"/v1/workloads/{created.json()['id']}", headers=admin_headers).json()
    assert stored["workload"]["inference"]["effective_prompt_tokens"] == 200


@pytest.mark.parametrize("units", ["vector", "matrix"])
def test_fp64_units_accepted_by_estimates(client: TestClient, units: str) -> None:
    resp = client.post("/v1/estimates", json=_dgemm(fp64_units=units))
    assert resp.status_code == 200, resp.text
    assert resp.json()["precision_used"] == "fp64"


@pytest.mark.parametrize("units", ["tensor", "MATRIX", "", None, 1])
def test_bad_fp64_units_is_422(client: TestClient, units: Any) -> None:
    assert_problem(client.post("/v1/estimates", json=_dgemm(fp64_units=units)), 422,
                   "body.workload.compute.fp64_units")


def test_new_fields_reach_the_engine_types() -> None:
    bert = WorkloadSpec.model_validate(_bert(effective_prompt_tokens=180)["workload"])
    inference = bert.to_engine().inference
    assert inference is not None and inference.effective_prompt_tokens == 180
    dgemm = WorkloadSpec.model_validate(_dgemm(fp64_units="matrix")["workload"]).to_engine()
    assert dgemm.compute is not None and dgemm.compute.fp64_units == "matrix"
    default = WorkloadSpec.model_validate(_dgemm()["workload"]).to_engine()
    assert default.compute is not None and default.compute.fp64_units == "vector"


def test_schema_examples_include_effective_tokens_and_fp64_units() -> None:
    examples = WorkloadSpec.model_json_schema()["examples"]
    assert any("effective_prompt_tokens" in (e.get("inference") or {}) for e in examples)
    assert any((e.get("compute") or {}).get("fp64_units") == "matrix" for e in examples)
    for example in examples:  # every documented example is a valid workload
        WorkloadSpec.model_validate(example).to_engine()


def test_parallel_efficiency_in_estimates(client: TestClient) -> None:
    body = _dgemm(communication="stencil", steps=1000, serial_fraction=0.001)
    one = client.post("/v1/estimates", json={**body, "gpu_count": 1})
    many = client.post("/v1/estimates", json={**body, "gpu_count": 8})
    assert one.status_code == 200 and many.status_code == 200, many.text
    assert one.json()["parallel_efficiency"] == 1.0
    eff = many.json()["parallel_efficiency"]
    assert 0.5 < eff < 1.0
    assert eff == pytest.approx(1 / (1 + 0.001 * 7), abs=0.02)


@pytest.mark.parametrize("field,value", [("communication", "mesh"), ("steps", 0),
                                         ("serial_fraction", 1.0)])
def test_bad_scaling_fields_are_422(client: TestClient, field: str, value: Any) -> None:
    assert_problem(client.post("/v1/estimates", json=_dgemm(**{field: value})), 422,
                   f"body.workload.compute.{field}")


def _llama(**inference: Any) -> dict[str, Any]:
    return {
        "workload": {
            "kind": "inference", "model": {"preset": "llama-3.1-70b"}, "precision": "fp8",
            "inference": {"prompt_tokens": 1000, "output_tokens": 1000, **inference},
        },
        "gpu_slug": H100, "gpu_count": 8,
    }


def test_a_pinned_tp_pp_split_is_used(client: TestClient) -> None:
    resp = client.post("/v1/estimates", json=_llama(tensor_parallel=4, pipeline_parallel=1))
    assert resp.status_code == 200, resp.text
    p = resp.json()["parallelism"]
    assert (p["tensor_parallel"], p["pipeline_parallel"], p["data_parallel"]) == (4, 1, 2)


def test_a_pinned_tp_must_be_a_power_of_2_dividing_the_heads(client: TestClient) -> None:
    problem = assert_problem(client.post("/v1/estimates", json=_llama(tensor_parallel=128)), 422,
                             "body.workload.inference.tensor_parallel")
    assert "64 attention heads" in problem["errors"][0]["message"]
    problem = assert_problem(client.post("/v1/estimates", json=_llama(tensor_parallel=6)), 422,
                             "body.workload.inference.tensor_parallel")
    assert "power of 2" in problem["errors"][0]["message"]


def _bert_training(**training: Any) -> dict[str, Any]:
    return {
        "workload": {
            "kind": "training", "model": {"preset": "bert-large"}, "precision": "fp16",
            "training": {"batch_size": 32, "seq_len": 384, "samples": 100_000,
                         "flash_attention": False, **training},
        },
        "gpu_slug": H100,
    }


def test_lm_head_fraction_moves_the_step(client: TestClient) -> None:
    # a SQuAD fine-tune (span head, no vocabulary projection) steps faster than the same
    # body with the LM head on every token; the default is the LM head on every token
    rates = {}
    for frac in (None, 1.0, 0.15, 0.0):
        body = _bert_training() if frac is None else _bert_training(lm_head_fraction=frac)
        resp = client.post("/v1/estimates", json=body)
        assert resp.status_code == 200, resp.text
        rates[frac] = resp.json()["throughput"]["samples_per_s"]
    assert rates[None] == rates[1.0] < rates[0.15] < rates[0.0]
    assert rates[0.0] / rates[1.0] > 1.04


@pytest.mark.parametrize("value", [-0.1, 1.5, "half"])
def test_lm_head_fraction_outside_0_1_is_422(client: TestClient, value: Any) -> None:
    assert_problem(client.post("/v1/estimates", json=_bert_training(lm_head_fraction=value)),
                   422, "body.workload.training.lm_head_fraction")


def test_sections_of_another_kind_are_not_read(client: TestClient,
                                              admin_headers: dict[str, str]) -> None:
    """A compute workload that also carries an inference section (the live fuzzer's case, a
    500 before: the engine took the section for a serving workload and built a serving
    context without a model) is ranked and estimated as the compute job it is, stored or
    not; so is a training workload with a compute section."""
    compute = {"kind": "compute", "precision": "fp32", "model": None,
               "inference": {"max_num_seqs": 461414},
               "compute": {"total_tflop": 1.1e5, "communication": "allreduce"}}
    plain = {k: v for k, v in compute.items() if k != "inference"}
    got = client.post("/v1/recommendations?view=full", json={**compute, "limit": 3})
    assert got.status_code == 200, got.text
    want = client.post("/v1/recommendations?view=full", json={**plain, "limit": 3})
    assert [c["gpu"]["slug"] for c in got.json()["recommendations"]] == \
        [c["gpu"]["slug"] for c in want.json()["recommendations"]]
    created = client.post("/v1/workloads", json={**compute, "name": "fuzzed"},
                          headers=admin_headers)
    assert created.status_code == 201, created.text
    ranked = client.get(f"/v1/workloads/{created.json()['id']}/recommendations?limit=3"
                        "&objective=cost&view=full", headers=admin_headers)
    assert ranked.status_code == 200, ranked.text
    estimate = client.post("/v1/estimates", json={"workload": compute, "gpu_slug": H100,
                                                  "gpu_count": 2})
    assert estimate.status_code == 200, estimate.text
    training = {"kind": "training", "precision": "bf16", "model": {"preset": "llama-3.1-8b"},
                "training": {"batch_size": 64, "seq_len": 2048, "tokens": 1e9},
                "compute": {"total_tflop": 5.0}}
    got = client.post("/v1/recommendations", json={**training, "limit": 2})
    assert got.status_code == 200, got.text
