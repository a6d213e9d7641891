"""The light client: importable without the server's stack, its models checked against the
committed OpenAPI document, retries with backoff on 503 / Retry-After for idempotent calls only,
and an Idempotency-Key on every workload submission (kept across retries)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from gpu_advisor_client import (
    AdvisorClient,
    ApiError,
    AsyncAdvisorClient,
    Candidate,
    Cost,
    Provision,
    Retry,
)
from gpu_advisor_client.models import SERVER_SCHEMAS
from tests.conftest import REPO_ROOT

SPEC = json.loads((REPO_ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8"))
COMPONENTS = SPEC["components"]["schemas"]
REQUESTS = {"ModelIn", "TrainingIn", "InferenceIn", "ComputeIn", "Constraints", "Workload",
            "WorkloadSubmission", "RunRequest"}


def test_importable_with_httpx_and_pydantic_only() -> None:
    code = ("import sys, time; t = time.perf_counter(); import gpu_advisor_client; "
            "print(time.perf_counter() - t); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'fastapi', 'starlette', 'sqlalchemy', 'sqlmodel', 'alembic', 'service'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO_ROOT).stdout.splitlines()
    assert out[1] == "[]", out


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a (sub)schema allows; a $ref is an object, a missing type is any."""
    if "$ref" in schema:
        target = COMPONENTS.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return {"object"} if "enum" not in target else {target.get("type", "string")}
    if "anyOf" in schema:
        return set().union(*(_types(s) for s in schema["anyOf"]))
    if "type" not in schema:
        return {"any"}
    kind = schema["type"]
    return set(kind) if isinstance(kind, list) else {kind}


def _fits(inner: set[str], outer: set[str]) -> bool:
    """Every type of ``inner`` is allowed by ``outer`` (an integer is a number)."""
    if "any" in outer:
        return True
    return all(t in outer or (t == "integer" and "number" in outer) for t in inner)


@pytest.mark.parametrize("model", list(SERVER_SCHEMAS), ids=lambda m: m.__name__)
def test_client_models_match_the_openapi_document(model: Any) -> None:
    server = COMPONENTS[SERVER_SCHEMAS[model]]
    ours = model.model_json_schema(ref_template="#/components/schemas/{model}")
    server_props, our_props = server.get("properties", {}), ours.get("properties", {})
    missing = set(our_props) - set(server_props)
    assert not missing, f"{model.__name__}: not in the API: {missing}"
    server_required, our_required = set(server.get("required", [])), set(ours.get("required", []))
    request = model.__name__ in REQUESTS
    if request:
        assert set(our_props) == set(server_props), f"{model.__name__}: fields differ"
        assert our_required == server_required, model.__name__
    else:
        assert our_required <= server_required, f"{model.__name__}: requires what may be absent"
    for name, prop in our_props.items():
        mine, theirs = _types(prop), _types(server_props[name])
        if "$ref" in prop or any("$ref" in s for s in prop.get("anyOf", [])):
            mine = {"object"} | ({"null"} if "null" in mine else set())
        ok = _fits(mine, theirs) if request else _fits(theirs - {"any"}, mine)
        assert ok, f"{model.__name__}.{name}: client {mine} vs API {theirs}"
        if request and "enum" in prop:
            assert prop["enum"] == server_props[name].get("enum"), (model.__name__, name)


@pytest.mark.parametrize("model", [Candidate, Cost, Provision], ids=lambda m: m.__name__)
def test_a_candidate_cost_and_provision_are_typed_field_for_field(model: Any) -> None:
    """Every field the API sends in a candidate, its cost and its provisioning is a typed field
    of the client (not a dict to dig in), required and nullable exactly as the API has it."""
    server = COMPONENTS[SERVER_SCHEMAS[model]]
    ours = model.model_json_schema(ref_template="#/components/schemas/{model}")
    assert set(ours["properties"]) == set(server["properties"])
    assert set(ours.get("required", [])) == set(server.get("required", []))
    for name, prop in ours["properties"].items():
        assert ("null" in _types(prop)) == ("null" in _types(server["properties"][name])), name
        assert prop.get("additionalProperties") is not True or name == "kubernetes", name


class _Server:
    """An httpx transport that answers from a script and records the requests."""

    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answers.pop(0)


def _busy(retry_after: str | None = "2") -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return httpx.Response(503, headers=headers, json={"type": "x", "title": "Busy",
                                                       "status": 503})


GPU = {"slug": "g", "name": "G", "vendor": "V", "form_factor": "pcie", "memory_gb": 1,
       "memory_bandwidth_gb_s": 1, "tdp_w": 1, "interconnect": "pcie", "source": "s",
       "version": 3, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
WORKLOAD = {"id": "w1", "name": "n", "objective": "cost", "kind": "inference",
            "created_at": "2026-01-01T00:00:00Z", "workload": {}}


def test_idempotent_calls_retry_after_503_honouring_retry_after() -> None:
    server = _Server(_busy("2"), _busy(None), httpx.Response(200, json=GPU))
    waits: list[float] = []
    with AdvisorClient("http://x", transport=httpx.MockTransport(server), sleep=waits.append,
                       retry=Retry(attempts=4, backoff_s=0.25)) as api:
        assert api.get_gpu("g").version == 3
    assert waits == [2.0, 0.5]  # Retry-After, then backoff 0.25 x 2^1
    assert len(server.requests) == 3


def test_retries_stop_after_the_attempts_and_cap_the_wait() -> None:
    server = _Server(_busy("3600"), _busy("3600"), _busy("3600"))
    waits: list[float] = []
    with AdvisorClient("http://x", transport=httpx.MockTransport(server), sleep=waits.append,
                       retry=Retry(attempts=3, max_wait_s=5)) as api, \
            pytest.raises(ApiError, match="^503 ") as err:
        api.list_gpus()
    assert err.value.status == 503 and waits == [5, 5] and len(server.requests) == 3


def test_client_survives_a_retry_after_too_large_for_a_float() -> None:
    """A `Retry-After: 999...9` (400 digits, from a proxy or a hostile server) parses as an int
    too large for a float: the client waits its capped maximum and retries, and no
    OverflowError escapes an idempotent GET."""
    server = _Server(_busy("9" * 400), httpx.Response(200, json=GPU))
    waits: list[float] = []
    with AdvisorClient("http://x", transport=httpx.MockTransport(server), sleep=waits.append,
                       retry=Retry(attempts=2, max_wait_s=7)) as api:
        assert api.get_gpu("g").version == 3
    assert waits == [7] and len(server.requests) == 2


def test_writes_that_are_not_idempotent_are_sent_once() -> None:
    server = _Server(_busy())
    waits: list[float] = []
    with AdvisorClient("http://x", transport=httpx.MockTransport(server),
                       sleep=waits.append) as api, pytest.raises(ApiError, match="^503 "):
        api.create_run("w1", limit=1)
    assert len(server.requests) == 1 and waits == []


def test_workload_submission_is_keyed_and_the_key_survives_retries() -> None:
    server = _Server(_busy("1"), httpx.Response(201, json=WORKLOAD))
    with AdvisorClient("http://x", transport=httpx.MockTransport(server),
                       sleep=lambda _: None) as api:
        stored = api.submit_workload({"kind": "inference", "model": {"preset": "gpt-2"},
                                      "inference": {"prompt_tokens": 8}})
    assert stored.id == "w1"
    keys = [r.headers.get("idempotency-key") for r in server.requests]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]
    assert json.loads(server.requests[0].content) == {
        "kind": "inference", "model": {"preset": "gpt-2"}, "inference": {"prompt_tokens": 8}}


def test_request_models_refuse_typos_before_sending() -> None:
    server = _Server()
    with AdvisorClient("http://x", transport=httpx.MockTransport(server)) as api, \
            pytest.raises(ValueError, match="promt_tokens"):
        api.estimate({"kind": "inference", "inference": {"promt_tokens": 8}}, "g")
    assert server.requests == []


def test_async_client_retries_too() -> None:
    server = _Server(_busy("1"), httpx.Response(200, json=GPU))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def scenario() -> int:
        async with AsyncAdvisorClient("http://x", transport=httpx.MockTransport(server),
                                      sleep=sleep) as api:
            return (await api.get_gpu("g")).version

    assert asyncio.run(scenario()) == 3 and waits == [1.0]
