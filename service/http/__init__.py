"""HTTP plumbing the routes share: middleware (guards, observability), health and metrics,
ETags and conditional requests, pagination, the OpenAPI text. Imports no domain."""
