"""Answers a bot can deploy, through the API on each database: quote network fields with
sourced defaults, provisioning specs checked by the real validators, typed fixes, coded
warnings, and stored runs that read back in the same shape."""

from __future__ import annotations

from typing import Any

import yaml
from fastapi.testclient import TestClient

from tests.helpers import assert_problem, do_import, new_quote, t4_file
from tests.provisioning.validators import validate_kubernetes, validate_skypilot

SERVE_70B: dict[str, Any] = {
    "kind": "inference", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
    "inference": {"prompt_tokens": 1024, "output_tokens": 256, "target_requests_per_s": 5},
}
TRAIN_70B: dict[str, Any] = {
    "kind": "training", "model": {"preset": "llama-2-70b"}, "precision": "bf16",
    "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11,
                 "activation_checkpointing": True},
}


def test_seeded_quotes_carry_sourced_network_fields(client: TestClient) -> None:
    rows = client.get("/v1/quotes", params={"limit": 500}).json()["data"]
    by_type = {(q["provider"], q["instance_type"]): q for q in rows}
    p5 = by_type[("aws", "p5.48xlarge")]
    assert (p5["network_fabric"], p5["network_gbps"], p5["multi_node"]) == ("efa", 3200, True)
    assert "docs.aws.amazon.com" in p5["network_source"]
    nd = by_type[("azure", "Standard_ND40rs_v2")]
    assert nd["network_fabric"] == "infiniband" and nd["multi_node"]
    lam = by_type[("lambda", "gpu_8x_h100_sxm5")]
    assert lam["network_fabric"] is None and lam["multi_node"] is False  # unknown
    assert sum(q["multi_node"] for q in rows) >= 15


def test_quote_network_fields_default_validate_and_patch(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    # omitted: the instance family's default
    created = client.post("/v1/quotes", json=new_quote(provider="aws", instance_type="p5.48xlarge",
                                                       region="us-test-9"), headers=admin_headers)
    assert created.status_code == 201, created.text
    assert created.json()["network_fabric"] == "efa" and created.json()["multi_node"] is True
    # given: kept as given
    mine = client.post("/v1/quotes", json=new_quote(network_fabric="roce", network_gbps=800,
                                                    multi_node=True, network_source="vendor"),
                       headers=admin_headers)
    assert mine.status_code == 201, mine.text
    assert (mine.json()["network_fabric"], mine.json()["network_gbps"]) == ("roce", 800)
    # multi-node needs a known fabric and rate: 422 naming the field, nothing written
    before = client.get("/v1/quotes").json()["total"]
    bad = client.post("/v1/quotes", json=new_quote(instance_type="t.other", multi_node=True),
                      headers=admin_headers)
    assert_problem(bad, 422)
    assert "multi_node" in bad.text
    assert_problem(client.post("/v1/quotes", json=new_quote(
        instance_type="t.x", network_fabric="carrier-pigeon"), headers=admin_headers), 422)
    assert_problem(client.post("/v1/quotes", json=new_quote(
        instance_type="t.y", network_gbps=-1), headers=admin_headers), 422)
    assert client.get("/v1/quotes").json()["total"] == before
    qid = mine.json()["id"]
    etag = client.get(f"/v1/quotes/{qid}").headers["etag"]
    off = client.patch(f"/v1/quotes/{qid}", json={"network_fabric": "none"},
                       headers={**admin_headers, "If-Match": etag})
    assert_problem(off, 422)  # still multi_node: a fabric of none cannot join instances
    ok = client.patch(f"/v1/quotes/{qid}", json={"network_fabric": "none", "multi_node": False},
                      headers={**admin_headers, "If-Match": etag})
    assert ok.status_code == 200, ok.text
    assert ok.json()["network_fabric"] == "none" and ok.json()["multi_node"] is False


def test_imported_skypilot_rows_get_the_family_default(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    do_import(client, admin_headers, t4_file("1.5"), provider="testcloud")
    rows = client.get("/v1/quotes", params={"provider": "testcloud"}).json()["data"]
    assert rows and all(q["network_fabric"] is None and not q["multi_node"] for q in rows)
    line = ("g4dn.12xlarge,T4,4.0,48.0,192.0,\"{'Gpus': [{'Name': 'T4', 'Count': 4, "
            "'MemoryInfo': {'SizeInMiB': 16384}}]}\",3.912,,us-test-1,az1")
    body = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,"
            "SpotPrice,Region,AvailabilityZone\n" + line + "\n").encode()
    do_import(client, admin_headers, body, provider="aws")
    (q,) = client.get("/v1/quotes", params={"provider": "aws", "region": "us-test-1"}).json()[
        "data"]
    assert (q["network_fabric"], q["network_gbps"], q["multi_node"]) == ("efa", 50, True)


def test_provisioning_output_validates_and_runs_read_back(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    tasks: list[tuple[str, bool]] = []
    for body, serving in ((SERVE_70B, True), (TRAIN_70B, False)):
        resp = client.post("/v1/recommendations?view=compact", json={**body, "limit": 5})
        assert resp.status_code == 200, resp.text
        result = resp.json()
        assert result["recommendations"]
        for cand in result["recommendations"]:
            prov = cand["provision"]
            validate_kubernetes(prov["kubernetes"])
            assert prov["skypilot_yaml"] is not None, prov["skypilot_note"]
            assert ("service" in yaml.safe_load(prov["skypilot_yaml"])) == serving
            tasks.append((prov["skypilot_yaml"], serving))
            assert all(w["code"] and w["message"] for w in cand["warnings"])
            quote = cand["quote"]
            if cand["estimate"]["parallelism"]["nodes"] > 1:
                assert quote["multi_node"] and quote["network_fabric"] not in (None, "none")
        for r in result["rejected"]:
            assert r["fix"]["kind"] and r["fix"]["detail"]
    assert validate_skypilot(tasks) == [None] * len(tasks)
    # a stored run reads back unchanged, typed fixes and all
    wid = client.post("/v1/workloads", json={**TRAIN_70B, "name": "t"},
                      headers=admin_headers).json()["id"]
    run = client.post(f"/v1/workloads/{wid}/runs", json={"limit": 3}, headers=admin_headers)
    assert run.status_code == 201, run.text
    again = client.get(f"/v1/workloads/{wid}/runs/{run.json()['id']}", headers=admin_headers)
    assert again.json() == run.json()
    fixes = [r["fix"] for r in again.json()["result"]["rejected"]]
    assert fixes and all(isinstance(f, dict) and f["kind"] for f in fixes)
