#!/usr/bin/env bash
# The test command: install (idempotent), then every test (unit + integration with real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -m ruff check service index eval support tests bench scripts docs/hooks
.venv/bin/python -m mypy
# The manual: a broken link, anchor or settings reference fails the build.
NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict -q -d "$(mktemp -d)"
.venv/bin/python -m pytest -q "$@"
