"""The OpenAPI document as committed under openapi/ (stable key order, trailing newline)."""

from __future__ import annotations

import json

from fastapi import FastAPI


def openapi_json(app: FastAPI) -> str:
    return json.dumps(app.openapi(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
