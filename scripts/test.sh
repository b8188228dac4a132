#!/usr/bin/env bash
# The test command: install (idempotent), then every test (unit + integration with real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -m ruff check service index eval support tests bench scripts
.venv/bin/python -m mypy
.venv/bin/python -m pytest -q "$@"
