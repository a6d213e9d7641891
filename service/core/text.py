"""Strings from clients: no NUL, no other control characters, the same answer on every database.

PostgreSQL cannot store NUL in text (the driver refuses the statement: a 500), SQLite stores it;
no name, filter, note or source has a use for C0 control characters, and an unpaired surrogate
(``"\\ud800"`` in JSON) cannot be encoded to UTF-8 for either database. One rule, three uses:

- query parameters: :data:`Text` (``Annotated[Text | None, Query(...)]``) -> 422 ``query.<name>``;
- request bodies: :func:`no_control_chars` as ``field_validator("*")`` of each input model (not
  of the public models, so rows stored before the rule still read back) -> 422 ``body.<field>``;
- path ids: :func:`is_clean` false -> 404, as no row can have such an id.

Tab, line feed and carriage return stay allowed (free text such as notes has lines).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

T = TypeVar("T")

_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
ERROR_TYPE = "control_characters"
MESSAGE = ("must not contain control characters (U+0000-U+001F other than tab, line feed, "
           "carriage return) or unpaired surrogates")


def is_clean(value: str) -> bool:
    """True when ``value`` has no forbidden character."""
    return _FORBIDDEN.search(value) is None


def check_text(value: T) -> T:
    """``value`` unchanged, or a validation error when a string in it (also inside lists and
    dicts, keys included) has a forbidden character."""
    if isinstance(value, str):
        if not is_clean(value):
            raise PydanticCustomError(ERROR_TYPE, MESSAGE)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            check_text(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key)
            check_text(item)
    return value


def no_control_chars(cls: type, value: T) -> T:
    """For ``field_validator("*")(no_control_chars)``: every field of an input model."""
    return check_text(value)


Text = Annotated[str, AfterValidator(check_text)]
"""A string without control characters (tab, line feed, carriage return allowed)."""


def control_char_errors(values: dict[str, Any]) -> list[str]:
    """Names of the ``values`` (column -> text) that have a forbidden character."""
    return [name for name, text in values.items()
            if isinstance(text, str) and not is_clean(text)]
