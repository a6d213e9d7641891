"""Import every table module so SQLModel.metadata knows the whole schema (for Alembic)."""

from sqlmodel import SQLModel

import service.catalog.models
import service.core.revisions
import service.core.security
import service.quotes.models
import service.workloads.models  # noqa: F401

metadata = SQLModel.metadata
