"""`/` (landing), `/ui` (comparison page), `/docs` and `/redoc`, all from packaged assets.

Swagger UI and ReDoc come from the `fastapi-offline` wheel, which ships their JavaScript and
CSS; the comparison page's script and stylesheet live in `service/web/static/`. No page names
another host, so everything works on a machine without internet access.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
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
# Defence in depth: pages may load nothing from another host, whatever a vendored script says.
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
       "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; connect-src 'self'; "
       "font-src 'self' data:; frame-ancestors 'self'; base-uri 'self'; form-action 'self'")

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


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui() -> HTMLResponse:
    return _html(get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="gpu-advisor - Swagger UI",
        oauth2_redirect_url=OAUTH2_REDIRECT_URL,
        swagger_js_url=f"{VENDOR_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{VENDOR_URL}/swagger-ui.css",
        swagger_favicon_url=f"{VENDOR_URL}/favicon.png",
        swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
    ))


@router.get(OAUTH2_REDIRECT_URL, response_class=HTMLResponse)
async def swagger_ui_redirect() -> HTMLResponse:
    return _html(get_swagger_ui_oauth2_redirect_html())


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
