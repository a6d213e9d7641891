"""Import every table module so SQLModel.metadata knows the whole schema (for Alembic)."""

from sqlmodel import SQLModel

import service.catalog.models
import service.quotes.models
import service.revisions
import service.security
import service.workloads.models  # noqa: F401

metadata = SQLModel.metadata
