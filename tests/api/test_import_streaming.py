"""A large quote import is read row by row from a spooled upload, and its answer is streamed:
memory follows the quotes the file makes, not the file's size."""

from __future__ import annotations

import json
import tempfile
import tracemalloc

from fastapi.testclient import TestClient
from sqlmodel import Session

from service.core.times import utcnow
from service.quotes.imports import import_file, parse_file
from tests.helpers import CSV, SKYPILOT_HEADER, T4_GPU_INFO, do_import, t4_file

ZONE_ROWS = 200_000
"""Rows of one (region, instance type) in as many zones: ~20 MB that make one quote."""


def _zones_file() -> tempfile.SpooledTemporaryFile[bytes]:
    spool = tempfile.SpooledTemporaryFile(max_size=1 << 20)
    spool.write((SKYPILOT_HEADER + "\n").encode())
    for zone in range(ZONE_ROWS):
        spool.write(f"t.0,T4,1.0,4.0,16.0,{T4_GPU_INFO},{1 + zone % 7},,test-1,az{zone}\n"
                    .encode())
    spool.seek(0)
    return spool


def test_a_large_csv_is_parsed_without_holding_the_file(session: Session) -> None:
    """Parsing a ~20 MB upload from its spool file allocates a small fraction of its size at
    peak (the whole body as bytes, as a str, and StringIO's 4-byte-per-character copy was
    several times its size)."""
    with _zones_file() as spool:
        spool.seek(0, 2)
        size = spool.tell()
        spool.seek(0)
        tracemalloc.start()
        try:
            parsed = parse_file(session, body=spool, content_type="text/csv", fmt="skypilot",
                                provider="testcloud", source="test", captured_at=utcnow())
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert not spool.closed  # the parser leaves the caller's file open
    assert parsed.rows_read == ZONE_ROWS and len(parsed.quotes) == 1
    assert parsed.quotes[0].price_usd_per_hour == 1.0  # the lowest over all zones
    assert size > 15_000_000 and peak < size / 10, (size, peak)


def test_streamed_answer_is_the_import_result(client: TestClient, session: Session,
                                              admin_headers: dict[str, str]) -> None:
    """The route's streamed JSON is exactly ImportResult's, lists included (added, updated,
    skipped, unmatched), and the file's rows are committed before it is sent."""
    do_import(client, admin_headers, t4_file("1.5", "2.0"))
    body = t4_file("1.5", "2.5", "3.0") + (
        b"u.0,NoSuchGPU,1.0,4.0,16.0,,1.0,,test-1,az9\n"
        b"v.0,T4,0.5,4.0,16.0," + T4_GPU_INFO.encode() + b",1.0,,test-1,az8\n")
    streamed = do_import(client, admin_headers, body, dry_run="true")
    assert streamed["added"] == 1 and len(streamed["updated"]) == 1
    assert len(streamed["skipped"]) == 1 and len(streamed["unmatched"]) == 1
    outcome = import_file(session, body=body, content_type="text/csv", fmt="skypilot",
                          provider="testcloud", dry_run=True, source="import",
                          captured_at=None, who="test")
    expected = json.loads(outcome.result().model_dump_json())
    assert json.loads(b"".join(outcome.json_chunks())) == expected
    ignore = {"duration_ms", "captured_at", "observed_at"}
    assert {k: v for k, v in streamed.items() if k not in ignore} == {
        k: v for k, v in expected.items() if k not in ignore}
    # an error still answers a problem, not a broken stream
    bad = client.post("/v1/quotes/import", content=t4_file("oops"),
                      params={"format": "skypilot", "provider": "testcloud"},
                      headers={**admin_headers, **CSV})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith(
        "application/problem+json")
