"""`/` (landing), `/ui` (comparison page), `/docs` and `/redoc`, all from packaged assets.

Swagger UI and ReDoc come from the `fastapi-offline` wheel, which ships their JavaScript and
CSS; the comparison page's script and stylesheet live in `service/web/static/`. No page names
another host, so everything works on a machine without internet access.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_redoc_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from service.web.pages import comparison_page, fleet_page, landing_page

STATIC_DIR = Path(__file__).parent / "static"
VENDOR_DIR = Path(fastapi_offline.__file__).parent / "static"
STATIC_URL = "/static"
VENDOR_URL = "/static/vendor"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
# Swagger UI would otherwise send the spec to a public validator for its badge.
SWAGGER_UI_PARAMETERS = {"validatorUrl": None, "displayRequestDuration": True,
                         "defaultModelsExpandDepth": 0, "tryItOutEnabled": False}

# ReDoc's side menu shows Redocly's logo from their CDN (unconditionally, in redoc 2.x); the
# served copy points it at an empty data: URL instead, and the <img> hides itself on error.
REDOC_JS = "redoc.standalone.js"
REDOC_REMOTE_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
# Defence in depth: pages may load nothing from another host, whatever a vendored script says,
# and run no inline script (every page's script is a file under /static; settings travel in
# JSON data blocks, which are never executed): an injected <script> or on* attribute is inert.
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
       "script-src 'self'; worker-src 'self' blob:; connect-src 'self'; "
       "font-src 'self' data:; frame-ancestors 'self'; base-uri 'self'; form-action 'self'; "
       "object-src 'none'")
SWAGGER_UI_CONFIG = {"url": "/openapi.json", "dom_id": "#swagger-ui", "layout": "BaseLayout",
                     "deepLinking": True, "showExtensions": True, "showCommonExtensions": True,
                     **SWAGGER_UI_PARAMETERS, "oauth2RedirectPath": OAUTH2_REDIRECT_URL}
"""What FastAPI's get_swagger_ui_html puts in its inline script, read by static/swagger-init.js."""

router = APIRouter(include_in_schema=False)


def _html(text: str | HTMLResponse) -> HTMLResponse:
    response = text if isinstance(text, HTMLResponse) else HTMLResponse(text)
    response.headers["Content-Security-Policy"] = CSP
    return response


@cache
def _redoc_js() -> bytes:
    text = (VENDOR_DIR / REDOC_JS).read_text(encoding="utf-8")
    return text.replace(REDOC_REMOTE_LOGO, "data:,").encode("utf-8")


@router.get(f"{STATIC_URL}/redoc/{REDOC_JS}")
async def redoc_js() -> Response:
    return Response(_redoc_js(), media_type="text/javascript",
                    headers={"Cache-Control": "public, max-age=86400"})


@router.get("/", response_class=HTMLResponse)
async def landing() -> HTMLResponse:
    return _html(landing_page())


@router.get("/ui", response_class=HTMLResponse)
async def comparison() -> HTMLResponse:
    return _html(comparison_page())


@router.get("/ui/fleet", response_class=HTMLResponse)
async def fleet() -> HTMLResponse:
    return _html(fleet_page())


def _data_block(element_id: str, value: object) -> str:
    """A JSON data block (never executed; '<' escaped so no text can close the element)."""
    data = json.dumps(value).replace("<", "\\u003c")
    return f'<script type="application/json" id="{escape(element_id)}">{data}</script>'


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui() -> HTMLResponse:
    return _html(f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link type="text/css" rel="stylesheet" href="{VENDOR_URL}/swagger-ui.css">
<link rel="shortcut icon" href="{VENDOR_URL}/favicon.png">
<title>gpu-advisor - Swagger UI</title>
</head>
<body>
<div id="swagger-ui"></div>
{_data_block("swagger-ui-config", SWAGGER_UI_CONFIG)}
<script src="{VENDOR_URL}/swagger-ui-bundle.js"></script>
<script src="{STATIC_URL}/swagger-init.js"></script>
</body>
</html>
""")


@router.get(OAUTH2_REDIRECT_URL, response_class=HTMLResponse)
async def swagger_ui_redirect() -> HTMLResponse:
    return _html(f"""<!doctype html>
<html lang="en-US">
<head><title>Swagger UI: OAuth2 Redirect</title></head>
<body>
<script src="{STATIC_URL}/oauth2-redirect.js"></script>
</body>
</html>
""")


@router.get("/redoc", response_class=HTMLResponse)
async def redoc() -> HTMLResponse:
    return _html(get_redoc_html(
        openapi_url="/openapi.json",
        title="gpu-advisor - ReDoc",
        redoc_js_url=f"{STATIC_URL}/redoc/{REDOC_JS}",
        redoc_favicon_url=f"{VENDOR_URL}/favicon.png",
        with_google_fonts=False,
    ))


def install_pages(app: FastAPI) -> None:
    """Mount the pages and their assets (the app is built with docs_url=redoc_url=None)."""
    app.include_router(router)
    app.mount(VENDOR_URL, StaticFiles(directory=VENDOR_DIR), name="vendor")
    app.mount(STATIC_URL, StaticFiles(directory=STATIC_DIR), name="static")
