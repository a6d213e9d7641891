"""What every table shares: the constraint naming convention and the row lock.

Table modules import this module before defining a table, so the naming convention is on
``SQLModel.metadata`` when their constraints are named.
"""

from __future__ import annotations

from typing import TypeVar

from sqlmodel import Session, SQLModel

from service.core.errors import NotFound

M = TypeVar("M", bound=SQLModel)

SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Named constraints, so migrations can drop them on every database (Alembic docs)."""


def lock_row(session: Session, model: type[M], key: object, *, missing: str,
             shared: bool = False) -> M:
    """The row, re-read and locked until the transaction ends; 404 (``missing``, the detail)
    when a concurrent transaction deleted it first. PostgreSQL: SELECT ... FOR UPDATE waits for
    that transaction, so of two racing DELETEs one is 204 and the other 404, as on SQLite,
    whose writers hold the database lock from BEGIN IMMEDIATE (SQLAlchemy's SQLite dialect
    renders no FOR UPDATE).
    ``shared``: FOR KEY SHARE, for a row that must outlive rows inserted to refer to it (it
    blocks a DELETE, not other readers or sharers)."""
    lock: bool | dict[str, bool] = {"read": True, "key_share": True} if shared else True
    row = session.get(model, key, with_for_update=lock, populate_existing=True)
    if row is None:
        raise NotFound(missing)
    return row
