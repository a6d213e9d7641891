"""Pages for people: the landing page, the comparison page, offline Swagger UI and ReDoc."""
