"""The service assembled from its domains: the ASGI app, how `serve` runs it (uvicorn, the
warm-up and collector tuning), the whole schema for Alembic, and the seed data loader."""
