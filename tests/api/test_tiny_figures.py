"""Figures so small that the engine's times overflow are refused at the door (422 naming the
field), and a GPU at the smallest accepted figures still gets an answer, never a 500.

The case behind it: a GPU created with a 5e-324 peak would make a stored training workload's
run divide by zero in the ranking's floors (a 500 on POST /v1/workloads/{id}/runs).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.catalog.models import MIN_BANDWIDTH_GB_S, MIN_TFLOPS
from service.quotes.models import MIN_NETWORK_GBPS
from tests.helpers import assert_problem, new_gpu, new_quote

TRAIN_70B = {"kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
             "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11},
             "objective": "balanced", "constraints": {"max_gpus": 1024}}


@pytest.mark.parametrize(("field", "value"), [
    ("bf16_tflops", 5e-324), ("fp16_tflops", 1e-9), ("fp64_tflops", MIN_TFLOPS / 2),
    ("memory_bandwidth_gb_s", 1e-300), ("memory_bandwidth_gb_s", MIN_BANDWIDTH_GB_S / 2),
    ("interconnect_bandwidth_gb_s", 1e-300),
])
def test_overflowing_gpu_figures_are_422(
    client: TestClient, admin_headers: dict[str, str], field: str, value: float
) -> None:
    resp = client.post("/v1/gpus", json=new_gpu(**{field: value}), headers=admin_headers)
    assert_problem(resp, 422, f"body.{field}")
    # the same figure in a PATCH
    etag = client.get("/v1/gpus/nvidia-a100-sxm4-80gb").headers["etag"]
    resp = client.patch("/v1/gpus/nvidia-a100-sxm4-80gb", json={field: value},
                        headers={**admin_headers, "If-Match": etag})
    assert_problem(resp, 422, f"body.{field}")


def test_overflowing_quote_network_is_422(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    body = new_quote(network_gbps=1e-300, network_fabric="infiniband", multi_node=True)
    assert_problem(client.post("/v1/quotes", json=body, headers=admin_headers), 422,
                   "body.network_gbps")


def test_gpu_at_the_smallest_figures_gets_an_answer(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    tiny: dict[str, Any] = dict.fromkeys(("fp32_tflops", "bf16_tflops", "fp16_tflops"), MIN_TFLOPS)
    body = new_gpu(slug="tiny-gpu", name="Tiny GPU", memory_bandwidth_gb_s=MIN_BANDWIDTH_GB_S,
                   interconnect="nvlink", interconnect_bandwidth_gb_s=MIN_BANDWIDTH_GB_S,
                   form_factor="sxm", **tiny)
    assert client.post("/v1/gpus", json=body, headers=admin_headers).status_code == 201
    quote = new_quote(gpu_slug="tiny-gpu", instance_type="tiny.8x", gpu_count=8,
                      price_usd_per_hour=1.0, network_gbps=MIN_NETWORK_GBPS,
                      network_fabric="ethernet", multi_node=True)
    assert client.post("/v1/quotes", json=quote, headers=admin_headers).status_code == 201
    for objective in ("balanced", "cost", "time", "energy"):
        resp = client.post("/v1/recommendations", json={**TRAIN_70B, "objective": objective,
                                                       "limit": 40})
        assert resp.status_code == 200, resp.text
        ranked = [c["gpu"]["slug"] for c in resp.json()["recommendations"]]
        rejected = {r["gpu"]["slug"] for r in resp.json()["rejected"]}
        assert "tiny-gpu" in set(ranked) | rejected  # judged, not crashed on
    est = client.post("/v1/estimates", json={**TRAIN_70B, "gpu": "tiny-gpu", "gpu_count": 1024})
    assert est.status_code in (200, 422), est.text


VANISHING = {
    "compute": {"kind": "compute", "precision": "fp64", "compute": {"total_tflop": 5e-324}},
    "training": {"kind": "training", "model": {"preset": "llama-3.1-8b"}, "precision": "bf16",
                 "training": {"batch_size": 8, "seq_len": 1024, "tokens": 1}},
    "inference": {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
                  "precision": "bf16", "inference": {"prompt_tokens": 1, "output_tokens": 1,
                                                     "target_requests_per_s": 5e-324}},
}


@pytest.mark.parametrize("kind", sorted(VANISHING))
@pytest.mark.parametrize("objective", ["balanced", "cost", "time", "energy"])
def test_vanishing_job_gets_an_answer(client: TestClient, objective: str, kind: str) -> None:
    """The live fuzz's second 500: a 5e-324 TFLOP job's cost and time underflow to zero, and
    the balanced search (then its explanation) divided by those minima."""
    body = {**VANISHING[kind], "objective": objective}
    resp = client.post("/v1/recommendations", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["recommendations"]
    # the third (live fuzz, energy objective): an energy that underflowed to 0 kWh was taken
    # for an unknown one, ranked as infinite and answered as null where the schema said number.
    # A score is a number or (documented) null when not finite: serving 5e-324 requests/s
    # costs an unbounded amount per request.
    scores = [c["score"] for c in resp.json()["recommendations"]]
    if kind == "inference":
        assert all(s is None or isinstance(s, (int, float)) for s in scores), scores
    else:
        assert all(isinstance(s, (int, float)) for s in scores), scores
