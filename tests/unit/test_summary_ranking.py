"""The ranked summary (the recommendation routes' default view) is computed without what it does
not show: ``rank_for(explained=False)`` builds no reasons, no provisioning specs, no
training parallel efficiency and no outranked GPU's reason (``recommend(explained=False)``).
Its answer must be the summary of the explained ranking byte for byte, over the differential
test's golden bodies (every kind, objective and constraint family it draws), and the
unexplained ranking must refuse the views that show what it left out."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from service.core.config import Settings
from service.core.errors import ProblemError
from service.workloads.answers import to_json
from service.workloads.caches import AppCaches
from service.workloads.models import RecommendationQuery
from service.workloads.service import rank_for
from tests.differential import NOW, load_golden, seeded_catalog

CASES = int(os.environ.get("GPU_ADVISOR_SUMMARY_CASES", "120"))
"""Golden bodies compared (of 300); the full run is ``GPU_ADVISOR_SUMMARY_CASES=300``."""


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Settings]]:
    engine, settings = seeded_catalog(tmp_path_factory.mktemp("summary"))
    yield engine, settings
    engine.dispose()


def _summary(engine: Engine, settings: Settings, body: dict[str, object], caches: AppCaches,
             explained: bool) -> bytes | None:
    query = RecommendationQuery.model_validate(body)
    with Session(engine) as session:
        try:
            answer = rank_for(session, submission=query, objective=query.objective,
                              limit=query.limit, settings=settings, caches=caches, now=NOW,
                              explained=explained)
        except ProblemError:
            return None
    if not explained:
        with pytest.raises(ValueError, match="explained"):
            answer.data("compact")
    return to_json(answer.data("summary"))


def test_summary_without_explanations_is_the_explained_summary(
        catalog: tuple[Engine, Settings]) -> None:
    engine, settings = catalog
    cases = load_golden()["cases"][:CASES]
    explained_caches, plain_caches = AppCaches(), AppCaches()
    answered = 0
    for case in cases:
        want = _summary(engine, settings, case["body"], explained_caches, True)
        got = _summary(engine, settings, case["body"], plain_caches, False)
        assert got == want, case["index"]
        answered += want is not None
    assert answered > CASES // 2


def test_an_unexplained_ranking_is_cached_apart(catalog: tuple[Engine, Settings]) -> None:
    """The rankings cache keys on ``explained``: a summary first, then the full view of the
    same body in the same minute, gets the reasons and provisioning."""
    engine, settings = catalog
    body = next(c["body"] for c in load_golden()["cases"] if c["body"].get("kind") == "training"
                and c["summary"]["candidates"])
    caches = AppCaches()
    query = RecommendationQuery.model_validate(body)
    with Session(engine) as session:
        first = rank_for(session, submission=query, objective=query.objective,
                         limit=query.limit, settings=settings, caches=caches, now=NOW,
                         explained=False)
        second = rank_for(session, submission=query, objective=query.objective,
                          limit=query.limit, settings=settings, caches=caches, now=NOW)
    assert not first.rec.explained and second.rec.explained
    top = second.rec.recommendations[0]
    assert top.reasons and top.estimate.parallel_efficiency is not None
    assert not first.rec.recommendations[0].reasons
    assert first.rec.recommendations[0].estimate.parallel_efficiency is None
    outranked = [r.gpu_slug for r in second.rec.rejected if r.code == "outranked"]
    assert outranked and all(r.reason for r in second.rec.rejected)
    assert [r.gpu_slug for r in first.rec.rejected if r.code == "outranked"] == outranked
    # the summary's rejected GPUs are the explained answer's, code for code; the outranked
    # and memory failures (no memory estimate taken for them) without a reason in words
    assert [(r.gpu_slug, r.code) for r in first.rec.rejected] == [
        (r.gpu_slug, r.code) for r in second.rec.rejected]
    assert any(r.code == "memory" for r in second.rec.rejected)
    assert all(not r.reason for r in first.rec.rejected if r.code in ("outranked", "memory"))
