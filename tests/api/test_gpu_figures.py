"""SM count, clocks, L2 and tensor-core generation: seeded, served, validated, patched."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from service.app.seeding import seed_gpus
from service.catalog.service import get_gpu, to_spec
from tests.helpers import H100, assert_problem, new_gpu

FIGURES = ("sm_count", "boost_clock_mhz", "base_clock_mhz", "l2_cache_mb",
           "tensor_core_generation")
SEED_SLUGS = sorted(g.slug for g in seed_gpus())


def test_h100_sxm_figures_are_served(client: TestClient) -> None:
    h100 = client.get(f"/v1/gpus/{H100}").json()
    # NVIDIA H100: 132 SMs, 50 MB L2, fourth-generation tensor cores; 1980 MHz max boost.
    assert {k: h100[k] for k in FIGURES} == {
        "sm_count": 132, "boost_clock_mhz": 1980, "base_clock_mhz": 1590, "l2_cache_mb": 50,
        "tensor_core_generation": 4,
    }


def test_amd_and_pre_tensor_rows(client: TestClient) -> None:
    mi300x = client.get("/v1/gpus/amd-mi300x").json()
    # AMD ROCm GPU specs: 304 CUs, 32 MB L2 (4 per XCD); the 256 MB Infinity Cache is not L2.
    assert mi300x["sm_count"] == 304 and mi300x["l2_cache_mb"] == 32
    assert mi300x["boost_clock_mhz"] == 2100 and mi300x["tensor_core_generation"] == 3
    p6000 = client.get("/v1/gpus/nvidia-quadro-p6000").json()
    assert p6000["tensor_core_generation"] == 0  # Pascal: no tensor cores


@pytest.mark.parametrize("slug", SEED_SLUGS)
def test_every_seeded_gpu_has_all_five_figures(client: TestClient, slug: str) -> None:
    gpu = client.get(f"/v1/gpus/{slug}").json()
    missing = [k for k in FIGURES if gpu[k] is None]
    assert missing == [], f"{slug} lacks {missing}"
    assert gpu["base_clock_mhz"] <= gpu["boost_clock_mhz"]
    assert "new columns" in gpu["source"] and "New columns:" in gpu["notes"], slug


def test_seed_file_has_every_figure_for_all_33_rows() -> None:
    gpus = seed_gpus()
    assert len(gpus) == 33
    assert [g.slug for g in gpus if any(getattr(g, k) is None for k in FIGURES)] == []


def test_catalog_row_reaches_the_engine(session: Session) -> None:
    spec = to_spec(get_gpu(session, slug=H100))
    assert (spec.sm_count, spec.boost_clock_mhz, spec.base_clock_mhz, spec.l2_cache_mb,
            spec.tensor_core_generation) == (132, 1980, 1590, 50, 4)


def test_sort_by_sm_count(client: TestClient) -> None:
    rows = client.get("/v1/gpus", params={"sort": "-sm_count", "limit": 3}).json()["data"]
    assert rows[0]["slug"] == "amd-mi300x"  # 304 CUs
    counts = [g["sm_count"] for g in rows]
    assert counts == sorted(counts, reverse=True)


def test_create_with_figures(client: TestClient, admin_headers: dict[str, str]) -> None:
    body = new_gpu(sm_count=142, boost_clock_mhz=2520, base_clock_mhz=1110, l2_cache_mb=96,
                   tensor_core_generation=4)
    created = client.post("/v1/gpus", json=body, headers=admin_headers)
    assert created.status_code == 201, created.text
    assert {k: created.json()[k] for k in FIGURES} == {k: body[k] for k in FIGURES}
    # Omitted figures are unknown (null), not zero.
    bare = client.post("/v1/gpus", json=new_gpu(slug="test-gpu-2"), headers=admin_headers)
    assert bare.status_code == 201 and all(bare.json()[k] is None for k in FIGURES)


def test_base_above_boost_is_422_naming_the_field(client: TestClient,
                                                   admin_headers: dict[str, str]) -> None:
    body = new_gpu(boost_clock_mhz=1500, base_clock_mhz=1600)
    problem = assert_problem(client.post("/v1/gpus", json=body, headers=admin_headers), 422,
                             "body.base_clock_mhz")
    assert "boost_clock_mhz" in problem["errors"][0]["message"]
    replace = {k: v for k, v in body.items() if k != "slug"}
    assert_problem(client.put(f"/v1/gpus/{H100}", json=replace,
                              headers={**admin_headers, "If-Match": '"1"'}),
                   422, "body.base_clock_mhz")
    # Equal clocks are allowed (a part with no boost headroom).
    ok = new_gpu(boost_clock_mhz=1500, base_clock_mhz=1500)
    assert client.post("/v1/gpus", json=ok, headers=admin_headers).status_code == 201


@pytest.mark.parametrize(
    ("field", "value"),
    [("sm_count", 0), ("sm_count", 100_001), ("sm_count", 1.5), ("boost_clock_mhz", 0),
     ("boost_clock_mhz", 10_001), ("base_clock_mhz", -5), ("l2_cache_mb", -1),
     ("l2_cache_mb", 10_001), ("tensor_core_generation", -1), ("tensor_core_generation", 21)],
)
def test_out_of_range_figures_are_422(client: TestClient, admin_headers: dict[str, str],
                                      field: str, value: float) -> None:
    resp = client.post("/v1/gpus", json=new_gpu(**{field: value}), headers=admin_headers)
    assert_problem(resp, 422, f"body.{field}")


def test_patch_sm_count_with_if_match(client: TestClient, admin_headers: dict[str, str]) -> None:
    etag = client.get(f"/v1/gpus/{H100}").headers["etag"]
    assert_problem(client.patch(f"/v1/gpus/{H100}", json={"sm_count": 130},
                                headers=admin_headers), 428)
    patched = client.patch(f"/v1/gpus/{H100}", json={"sm_count": 130},
                           headers={**admin_headers, "If-Match": etag})
    assert patched.status_code == 200, patched.text
    assert patched.json()["sm_count"] == 130
    assert patched.json()["boost_clock_mhz"] == 1980  # untouched
    assert patched.headers["etag"] != etag
    assert client.get(f"/v1/gpus/{H100}").json()["sm_count"] == 130
    # A figure may be cleared back to unknown.
    cleared = client.patch(f"/v1/gpus/{H100}", json={"l2_cache_mb": None},
                           headers={**admin_headers, "If-Match": patched.headers["etag"]})
    assert cleared.status_code == 200 and cleared.json()["l2_cache_mb"] is None


def test_patch_clock_checked_against_the_stored_row(client: TestClient,
                                                    admin_headers: dict[str, str]) -> None:
    etag = {**admin_headers, "If-Match": client.get(f"/v1/gpus/{H100}").headers["etag"]}
    # Stored: base 1590, boost 1980.
    assert_problem(client.patch(f"/v1/gpus/{H100}", json={"base_clock_mhz": 2000}, headers=etag),
                   422, "body.base_clock_mhz")
    assert_problem(client.patch(f"/v1/gpus/{H100}", json={"boost_clock_mhz": 1500},
                                headers=etag), 422, "body.boost_clock_mhz")
    assert_problem(client.patch(f"/v1/gpus/{H100}",
                                json={"boost_clock_mhz": 1500, "base_clock_mhz": 1600},
                                headers=etag), 422, "body.base_clock_mhz")
    moved = client.patch(f"/v1/gpus/{H100}",
                         json={"boost_clock_mhz": 2100, "base_clock_mhz": 2000}, headers=etag)
    assert moved.status_code == 200, moved.text
    assert (moved.json()["base_clock_mhz"], moved.json()["boost_clock_mhz"]) == (2000, 2100)
