"""The typed client (sync and async) against a real uvicorn server on a free port, on its own
database."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import uvicorn
import yaml
from sqlmodel import Session

from gpu_advisor_client import (
    AdvisorClient,
    ApiError,
    AsyncAdvisorClient,
    Cost,
    InferenceIn,
    ModelIn,
    Provision,
    RecommendationResult,
    Workload,
    WorkloadSubmission,
)
from service.app.factory import create_app
from service.app.seeding import seed
from service.core.config import Settings
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.core.security import create_key
from tests.conftest import PG_URL, REPO_ROOT, create_pg_database, drop_pg_database
from tests.hardening.live import free_port

EXAMPLE = REPO_ROOT / "examples" / "client_quickstart.py"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    url = (create_pg_database(PG_URL, prefix="gpu_advisor_live") if PG_URL
           else f"sqlite:///{Path(tmp_path_factory.mktemp('live')) / 'live.db'}")
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    with Session(engine) as session:
        _, key = create_key(session, name="bot", role="admin")
        _, submitter = create_key(session, name="portal", role="submitter")
        session.commit()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(database_url=url), engine=engine),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a first start compiles the engine's loops
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}", key, submitter
    server.should_exit = True
    thread.join(10)
    engine.dispose()
    if PG_URL:
        drop_pg_database(PG_URL, url)


def test_client_round_trip(live: tuple[str, str, str]) -> None:
    base, key, _ = live
    with AdvisorClient(base, api_key=key) as api:
        page = api.list_gpus(vendor="NVIDIA", limit=5)
        assert page.total > 5 and len(page.data) == 5
        h100 = api.get_gpu("nvidia-h100-sxm5-80gb")
        patched = api.patch_gpu(h100.slug, {"notes": "checked"}, version=h100.version)
        assert patched.version == h100.version + 1
        quotes = api.list_quotes(gpu="nvidia-h100-sxm5-80gb")
        assert quotes.total >= 3
        models = api.list_models(limit=100)
        assert {m.id for m in models.data} >= {"llama-3.1-8b", "resnet-50"}
        assert models.total == len(models.data)
        workload = Workload(kind="inference", model=ModelIn(preset="llama-3.1-8b"),
                            precision="bf16",
                            inference=InferenceIn(prompt_tokens=512, output_tokens=128))
        est = api.estimate(workload, "nvidia-l4")
        assert est.fits and est.tpot_ms and est.tpot_ms > 0
        submission = WorkloadSubmission(**workload.model_dump(exclude_unset=True), name="bot",
                                        objective="cost")
        result = api.recommend(submission, limit=3)
        assert 0 < len(result.recommendations) <= 3
        # compact by default: the constants once; `full` repeats them in every estimate
        assert result.assumptions
        assert all(c.estimate.assumptions is None for c in result.recommendations)
        full = api.recommend(submission, limit=3, view="full")
        assert full.assumptions == result.assumptions
        assert all(c.estimate.assumptions for c in full.recommendations)
        stored = api.submit_workload(submission, idempotency_key="k1")
        assert api.submit_workload(submission, idempotency_key="k1").id == stored.id
        assert api.recommend_stored(stored.id, limit=2).recommendations
        again = api.recommend_stored(stored.id, limit=2, view="full").recommendations
        assert again and all(c.estimate.assumptions for c in again)
        assert api.list_runs(stored.id).total == 0  # the GET stored nothing
        run = api.create_run(stored.id, limit=3, constraints={"max_gpus": 4})
        assert api.get_run(stored.id, run.id) == run
        assert api.list_runs(stored.id).total == 1
        with pytest.raises(ApiError, match="^404 ") as err:
            api.get_gpu("nope")
        assert err.value.status == 404 and err.value.problem["status"] == 404
        with pytest.raises(ApiError, match="^422 ") as err:
            api.submit_workload({**submission.model_dump(), "model": {"preset": "llama-3-70b"}})
        assert err.value.status == 422 and "llama-3.1-70b" in str(err.value.problem)


def test_submit_without_a_key_stores_one_workload(live: tuple[str, str, str]) -> None:
    """No Idempotency-Key given: the client sets one, so the call is safe to retry."""
    base, _, submitter = live
    body = {"kind": "inference", "model": {"preset": "llama-3.1-8b"}, "name": "auto-key",
            "inference": {"prompt_tokens": 64, "output_tokens": 16}}
    with AdvisorClient(base, api_key=submitter) as api:
        before = api.list_workloads().total
        stored = api.submit_workload(body)
        assert stored.owner_key_id is not None
        assert api.list_workloads().total == before + 1


def test_async_client_round_trip(live: tuple[str, str, str]) -> None:
    base, _, submitter = live

    async def scenario() -> None:
        async with AsyncAdvisorClient(base, api_key=submitter) as api:
            gpus, models = await asyncio.gather(api.list_gpus(limit=3), api.list_models())
            assert len(gpus.data) == 3 and models.total > 10
            stored = await api.submit_workload(WorkloadSubmission(
                kind="inference", model=ModelIn(preset="llama-3.1-8b"), name="async",
                inference=InferenceIn(prompt_tokens=256, output_tokens=64)))
            run = await api.create_run(stored.id, objective="time", limit=2)
            assert run.objective == "time" and run.created_by_key_id == stored.owner_key_id
            assert (await api.get_run(stored.id, run.id)) == run
            await api.delete_workload(stored.id)
            with pytest.raises(ApiError, match="^404 ") as err:
                await api.get_workload(stored.id)
            assert err.value.status == 404
            with pytest.raises(ApiError, match="^403 ") as err:
                await api.delete_gpu("nvidia-h100-sxm5-80gb")
            assert err.value.status == 403  # a submitter may not touch the catalog

    asyncio.run(scenario())


def test_client_without_key_cannot_write(live: tuple[str, str, str]) -> None:
    base, _, _ = live
    with AdvisorClient(base) as api, pytest.raises(ApiError, match="^401 ") as err:
        api.delete_quote(1)
    assert err.value.status == 401


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("client_quickstart", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quickstart_example_reads_typed_cost_and_provision(live: tuple[str, str, str]) -> None:
    """examples/client_quickstart.py against a live server: the #1 candidate's GPU, count, cost
    per hour and SkyPilot task are typed fields equal to the API's JSON, field for field."""
    base, _, _ = live
    example = _example()
    with AdvisorClient(base) as api:
        gpus, best = example.quickstart(api)
    assert gpus.total > 5 and len(gpus.data) == 5
    memory = [g.memory_gb for g in gpus.data]
    assert memory == sorted(memory, reverse=True)

    assert best.rank == 1
    assert isinstance(best.cost, Cost) and isinstance(best.provision, Provision)
    cost, quote = best.cost, best.quote
    assert cost.known and not cost.owned and quote is not None
    assert cost.gpus == best.gpu_count == best.replicas * best.gpus_per_replica
    assert quote.price_usd_per_hour is not None and cost.usd_per_hour is not None
    assert cost.usd_per_hour == pytest.approx(cost.instances * quote.price_usd_per_hour,
                                              rel=1e-5)
    assert cost.usd_per_million_output_tokens and cost.usd_per_million_output_tokens > 0
    assert cost.total_usd is None and cost.usd_per_1k_requests is None  # serving an LLM
    sky = yaml.safe_load(best.provision.skypilot_yaml or "")
    assert sky["resources"]["instance_type"] == quote.instance_type
    assert sky["resources"]["accelerators"].endswith(f":{quote.gpu_count}")
    assert sky["service"]["replicas"] == best.replicas
    assert best.provision.skypilot_note is None
    assert [m["kind"] for m in best.provision.kubernetes] == ["Deployment", "Service"]

    # the typed objects hold exactly what the API sent (no field lost, none invented) ...
    raw = httpx.post(f"{base}/v1/recommendations", params={"limit": 3, "view": "compact"},
                     timeout=60,
                     json=example.WORKLOAD.model_dump(exclude_unset=True)).json()
    top = raw["recommendations"][0]
    assert best.cost.model_dump() == top["cost"]
    assert best.provision.model_dump() == top["provision"]
    assert best.model_dump(mode="json") == RecommendationResult.model_validate(raw) \
        .recommendations[0].model_dump(mode="json")
    # ... and read like dicts too, for callers that index them
    assert best.cost["usd_per_hour"] == cost.usd_per_hour and "gpus" in best.cost
    assert best.provision["kubernetes"] == best.provision.kubernetes
    assert best.cost.get("no_such_field", 0) == 0 and "no_such_field" not in best.cost
    with pytest.raises(KeyError, match="no_such_field"):
        best.cost["no_such_field"]
    newer = Cost.model_validate({**top["cost"], "usd_per_day": 1.0})  # a newer server's field
    assert newer["usd_per_day"] == 1.0 and newer.usd_per_hour == cost.usd_per_hour


def test_quickstart_example_runs_as_a_script(live: tuple[str, str, str]) -> None:
    base, _, _ = live
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("GPU_ADVISOR_API_KEY", None)
    out = subprocess.run([sys.executable, str(EXAMPLE), base], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    with AdvisorClient(base) as api:
        best = api.recommend(_example().WORKLOAD, limit=3).recommendations[0]
    assert best.cost.usd_per_hour is not None
    text = out.stdout
    assert f"best: {best.gpu_count} x {best.gpu.name} " in text
    assert f"${best.cost.usd_per_hour:.2f}/hour" in text
    assert (best.provision.skypilot_yaml or "").strip() in text
    assert "2 Kubernetes manifests: Deployment, Service" in text
