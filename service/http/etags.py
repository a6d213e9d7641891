"""ETags and conditional requests (RFC 9110): If-Match on writes, If-None-Match on reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Header, Request, Response

from service.core.errors import PreconditionFailed

ETAG_HEADER_DOC = ('The ETag from the last GET of this resource, e.g. "3" (strong comparison: '
                   'only * or the exact current tag matches; weak W/ tags never do). '
                   'Required for updates.')


def etag_for(version: int) -> str:
    return f'"{version}"'


_ENTITY_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*')
"""RFC 9110 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE."""


@dataclass(frozen=True)
class EntityTags:
    """A parsed If-Match / If-None-Match field: ``*`` or a list of entity tags."""

    raw: str
    any: bool
    tags: tuple[tuple[bool, str], ...]
    """(weak, opaque tag without quotes) per listed tag; malformed members are left out (they
    can never match)."""

    def strong_match(self, etag: str) -> bool:
        """If-Match (RFC 9110 13.1.1): ``*``, or a listed strong tag equal character for
        character to ``etag``; weak tags never match."""
        opaque = etag.strip('"')
        return self.any or any(not weak and tag == opaque for weak, tag in self.tags)

    def weak_match(self, etag: str) -> bool:
        """If-None-Match (RFC 9110 13.1.2): ``*``, or any listed tag with the same opaque tag,
        weak or not."""
        opaque = etag.removeprefix("W/").strip('"')
        return self.any or any(tag == opaque for _, tag in self.tags)


def parse_entity_tags(value: str | None) -> EntityTags | None:
    """None when the header is absent; otherwise ``*`` or the comma-separated tags."""
    if value is None:
        return None
    raw = value.strip()
    if raw == "*":
        return EntityTags(raw=raw, any=True, tags=())
    tags = []
    for member in _split_tags(raw):
        match = _ENTITY_TAG.fullmatch(member)
        if match:
            tags.append((match.group(1) is not None, match.group(2)))
    return EntityTags(raw=raw, any=False, tags=tuple(tags))


def _split_tags(raw: str) -> list[str]:
    """Split on commas outside quotes (an opaque tag may not hold a quote, but may a comma)."""
    members: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in raw:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            members.append("".join(current))
            current = []
        else:
            current.append(ch)
    members.append("".join(current))
    return [m for m in members if m.strip()]


parse_if_match = parse_entity_tags


def check_version(if_match: EntityTags | None, current: int) -> int:
    """The version a conditional write must find: ``current`` when If-Match is absent, ``*``
    or lists the current ETag (strong comparison); else 412 echoing what was sent."""
    if if_match is None or if_match.strong_match(etag_for(current)):
        return current
    sent = if_match.raw if len(if_match.raw) <= 200 else if_match.raw[:200] + "..."
    raise PreconditionFailed(
        f"If-Match {sent} does not match the current ETag {etag_for(current)}"
    )


def conditional_get(request: Request, response: Response, etag: str) -> Response | None:
    """Set ``etag`` on the response; a 304 (no body) when If-None-Match matches it."""
    response.headers["ETag"] = etag
    condition = parse_entity_tags(request.headers.get("if-none-match"))
    if condition is not None and condition.weak_match(etag):
        return Response(status_code=304, headers={"ETag": etag})
    return None


NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not modified: If-None-Match lists the current ETag (no body)"}
}


IfMatch = Annotated[str | None, Header(alias="If-Match", description=ETAG_HEADER_DOC)]
IfNoneMatch = Annotated[str | None, Header(
    alias="If-None-Match", description="ETags the caller holds; 304 when one is current")]
