"""The server `bench_http` measures the floor on: what the stack costs with no engine at all.

The recommendation route's target is a ratio to /healthz. How far any engine could go is
bounded by what the same request costs with the ranking taken away, so `bench_http` starts this
server beside the real one and loads, with the same varied bodies as the headline route:

* ``POST /v1/recommendations``: the production route's code unchanged (body validation, access
  dependencies, session, the catalog and quote revision check, the answer's data and its
  serialization) except that ``service.workloads.service.recommend`` -- the engine's ranking
  -- returns the first answer it computed (bench_http's validity check posts varied bodies
  before the load; only the first is ranked), whatever the body: the ceiling of the route
  with a free engine. The answer's data and serialization then always work on that one
  answer (the real route's answers vary in size with the body: ~5-12 KB in the default
  summary view);
* ``POST /floor/answer``: a plain sync route that validates the same body and sends the bytes
  of the first answer it computed (summary view, the route's default): the least a route
  that answers in the thread pool can do -- no session, no revision check, no ranking, no
  answer to build or serialize;
* ``POST /floor/sync``: a plain sync route that validates the same body and answers
  ``{"ok":true}``: the ceiling of any route that works in the thread pool (every route that
  touches the database does: SQLAlchemy sessions are synchronous);
* ``POST /floor/async``: the same on the event loop: the ceiling of any route with a body.

Nothing here is imported by the service: it is a bench harness, run as
``python -m bench.floor_app DATABASE_URL PORT`` (migrates and seeds like ``gpu-advisor serve``,
then runs uvicorn with the same options, one worker).
"""

from __future__ import annotations

import sys
from typing import Any

from fastapi import FastAPI, Request, Response
from sqlmodel import Session

from service.core.times import utcnow
from service.workloads import service
from service.workloads.models import RecommendationQuery

FLOOR_ROUTES = {
    "POST /v1/recommendations [varied, engine answer fixed]": "/v1/recommendations",
    "POST /floor/answer [varied, validation + fixed answer bytes]": "/floor/answer",
    "POST /floor/sync [varied, validation only]": "/floor/sync",
    "POST /floor/async [varied, validation only]": "/floor/async",
}
"""Label -> path of the floor routes, loaded with bench/varied.py's bodies."""

_OK = b'{"ok":true}'


def _free_engine() -> None:
    """Replace the ranking with its first answer: every later call returns that one,
    whatever it is asked."""
    real = service.recommend
    fixed: list[Any] = []

    def recommend(workload: Any, *args: Any, **kwargs: Any) -> Any:
        if not fixed:
            fixed.append(real(workload, *args, **kwargs))
        return fixed[0]

    service.recommend = recommend  # type: ignore[assignment]


def app_factory() -> FastAPI:
    from service.app.serving import app_factory as production

    _free_engine()
    app = production()

    answer: list[bytes] = []

    @app.post("/floor/answer", include_in_schema=False)
    def floor_answer(body: RecommendationQuery, request: Request) -> Response:
        if not answer:
            with Session(request.app.state.engine) as session:
                ranked = service.rank_for(
                    session, submission=body, objective=body.objective, limit=body.limit,
                    settings=request.app.state.settings, caches=request.app.state.caches,
                    now=utcnow())
            answer.append(bytes(ranked.response("summary").body))
        return Response(answer[0], media_type="application/json")

    @app.post("/floor/sync", include_in_schema=False)
    def floor_sync(body: RecommendationQuery) -> Response:
        return Response(_OK, media_type="application/json")

    @app.post("/floor/async", include_in_schema=False)
    async def floor_async(body: RecommendationQuery) -> Response:
        return Response(_OK, media_type="application/json")

    return app


def main(database_url: str, port: int) -> None:
    import os

    import uvicorn

    from service.app.seeding import seed
    from service.app.serving import uvicorn_options
    from service.core.config import Settings
    from service.core.db import make_engine
    from service.core.migrate import upgrade

    upgrade(database_url)
    engine = make_engine(database_url)
    seed(engine)
    engine.dispose()
    os.environ["DATABASE_URL"] = database_url
    uvicorn.run("bench.floor_app:app_factory", factory=True, host="127.0.0.1", port=port,
                log_level="warning", access_log=False, **uvicorn_options(Settings()))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
