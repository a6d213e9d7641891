"""Strings from clients: no NUL, no other control characters, the same answer on every database.

PostgreSQL cannot store NUL in text (the driver refuses the statement: a 500), SQLite stores it;
no name, filter, note or source has a use for C0 control characters, and an unpaired surrogate
(``"\\ud800"`` in JSON) cannot be encoded to UTF-8 for either database. One rule, three uses:

- query parameters: :data:`Text` (``Annotated[Text | None, Query(...)]``) -> 422 ``query.<name>``;
- request bodies: :func:`no_control_chars` as ``field_validator("*")`` of each input model (not
  of the public models, so rows stored before the rule still read back) -> 422 ``body.<field>``;
- path ids: :func:`is_clean` false -> 404, as no row can have such an id.

Tab, line feed and carriage return stay allowed (free text such as notes has lines).

Every accepted string is also normalized to Unicode NFC (:func:`nfc`): "Zürich" typed as
``u`` + combining diaeresis (NFD, as macOS file names and some keyboards produce it) and as the
precomposed ``ü`` are the same text, so they must be one region, one provider, one unique key,
and one filter value; without this they became two quotes.
"""

from __future__ import annotations

import re
import unicodedata
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


def nfc(value: str) -> str:
    """``value`` in Unicode normalization form C (composed); the same object when it already is
    (every ASCII string is)."""
    return value if unicodedata.is_normalized("NFC", value) else unicodedata.normalize("NFC", value)


def fold(value: str) -> str:
    """``value`` for free-text matching: case-folded, compatibility-decomposed (NFKD) and
    without combining marks, so "tés", "TES" and "Tésla"'s "Tés" all read "tes"."""
    decomposed = unicodedata.normalize("NFKD", value.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def check_text(value: T) -> T:
    """``value`` with every string in it (also inside lists and dicts, keys included) in NFC,
    or a validation error when one has a forbidden character."""
    if isinstance(value, str):
        if not is_clean(value):
            raise PydanticCustomError(ERROR_TYPE, MESSAGE)
        return nfc(value)  # type: ignore[return-value]
    if type(value) in (list, tuple, set, frozenset):
        return type(value)(check_text(item) for item in value)  # type: ignore[attr-defined,call-arg]
    if isinstance(value, list | tuple | set | frozenset):  # a subclass (named tuple): checked
        for item in value:
            check_text(item)
        return value
    if isinstance(value, dict):
        return {check_text(key): check_text(item)  # type: ignore[return-value]
                for key, item in value.items()}
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
