"""The typed client against a real uvicorn server on a free port, on its own database."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from sqlmodel import Session

from service.client import AdvisorClient, ApiError
from service.config import Settings
from service.db import make_engine
from service.main import create_app
from service.migrate import upgrade
from service.security import create_key
from service.seeding import seed
from tests.conftest import PG_URL, create_pg_database, drop_pg_database


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    url = (create_pg_database(PG_URL, prefix="gpu_advisor_live") if PG_URL
           else f"sqlite:///{Path(tmp_path_factory.mktemp('live')) / 'live.db'}")
    upgrade(url)
    engine = make_engine(url)
    seed(engine)
    with Session(engine) as session:
        _, key = create_key(session, name="bot", role="admin")
        session.commit()
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(database_url=url), engine=engine),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}", key
    server.should_exit = True
    thread.join(10)
    engine.dispose()
    if PG_URL:
        drop_pg_database(PG_URL, url)


def test_client_round_trip(live: tuple[str, str]) -> None:
    base, key = live
    with AdvisorClient(base, api_key=key) as api:
        page = api.list_gpus(vendor="NVIDIA", limit=5)
        assert page.total > 5 and len(page.data) == 5
        h100 = api.get_gpu("nvidia-h100-sxm5-80gb")
        patched = api.patch_gpu(h100.slug, {"notes": "checked"}, version=h100.version)
        assert patched.version == h100.version + 1
        quotes = api.list_quotes(gpu="nvidia-h100-sxm5-80gb")
        assert quotes.total >= 3
        assert {m["id"] for m in api.list_models()} >= {"llama-3.1-8b", "resnet-50"}
        workload = {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
                    "precision": "bf16",
                    "inference": {"prompt_tokens": 512, "output_tokens": 128}}
        est = api.estimate(workload, "nvidia-l4")
        assert est.fits and est.tpot_ms and est.tpot_ms > 0
        result = api.recommend(workload, objective="cost", limit=3)
        assert 0 < len(result.recommendations) <= 3
        stored = api.submit_workload({**workload, "name": "bot"}, idempotency_key="k1")
        assert api.submit_workload({**workload, "name": "bot"}, idempotency_key="k1").id == \
            stored.id
        run = api.run_recommendations(stored.id, limit=3)
        assert api.get_run(stored.id, run.id) == run
        assert api.list_runs(stored.id).total == 1
        with pytest.raises(ApiError) as err:
            api.get_gpu("nope")
        assert err.value.status == 404 and err.value.problem["status"] == 404


def test_client_without_key_cannot_write(live: tuple[str, str]) -> None:
    base, _ = live
    with AdvisorClient(base) as api, pytest.raises(ApiError) as err:
        api.delete_quote(1)
    assert err.value.status == 401
