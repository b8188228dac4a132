#!/usr/bin/env bash
# The test command: install (idempotent), then every test (unit + integration with real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python -m ruff check service index eval support tests bench training docs/hooks
.venv/bin/python -m mypy
# The manual: a broken link, anchor or settings reference fails the build. Not `-q`: it hides the warnings
# that --strict counts, and the build then passes with broken links.
site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict -d "$site" >"$site.log" 2>&1 || { cat "$site.log"; exit 1; }
if [ "$#" -eq 0 ]; then
  # The unit suite on two workers (its tests share nothing); the integration suite in order (real services).
  .venv/bin/python -m pytest -q -n 2 tests/unit
  .venv/bin/python -m pytest -q tests/integration
else
  .venv/bin/python -m pytest -q "$@"
fi
