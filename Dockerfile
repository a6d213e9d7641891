# The API image: every dependency from the committed lock (requirements.lock, `make lock`), the
# app itself installed as a regular (non-editable) package built with the lock's setuptools (no
# build isolation, so nothing unpinned is fetched), and an unprivileged user at run time.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
COPY requirements.lock /tmp/requirements.lock
RUN /opt/venv/bin/pip install -r /tmp/requirements.lock
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
RUN /opt/venv/bin/pip install --no-deps --no-build-isolation . && /opt/venv/bin/pip check

FROM python:3.11-slim
# NUMBA_CACHE_DIR: the engine's compiled loops (service/engine/physics/compiled*.py) are cached
# there, outside the read-only code, so a restarted worker loads them instead of compiling.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH \
    DATABASE_URL=sqlite:////data/gpu_advisor.db NUMBA_CACHE_DIR=/tmp/gpu-advisor-numba
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /app --no-create-home \
      --shell /usr/sbin/nologin app \
 && mkdir /data && chown app:app /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# alembic.ini and migrations/ are read from the working directory by an installed copy
# (service/core/migrate.py); owned by root, so the app cannot change its own code or schema files.
COPY alembic.ini ./
COPY migrations ./migrations
# The default SQLite database lives in /data (the only directory the app may write).
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz').status==200 else 1)"
CMD ["gpu-advisor", "serve", "--host", "0.0.0.0", "--port", "8000"]
