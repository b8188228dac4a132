#!/usr/bin/env bash
# Install Deja into ./.venv (idempotent) at the exact versions a lock names, hashes checked, nothing resolved
# (regenerate the locks with scripts/lock.sh), then the project itself, editable:
#   bash scripts/install.sh         the product (requirements/product.lock.txt): `deja serve`, `deja eval`; PyPI only
#   bash scripts/install.sh --dev   what the tests need (requirements/lock.txt: the product, every extra, dev tools)
# The one package not on PyPI (--dev only): torch's CPU build, from https://download.pytorch.org/whl/cpu.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=requirements/product.lock.txt
[ "${1:-}" = "--dev" ] && lock=requirements/lock.txt
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if grep -q '^torch==' "$lock"; then
  # torch alone first, its locked CPU build and hash: from a wheel folder pip's configuration names (find-links)
  # when one holds it, else from PyTorch's CPU index (PyPI has only the CUDA build).
  torch_lock="$(mktemp)"
  awk '/^[a-z0-9]/ { keep = /^torch==/ } keep' "$lock" >"$torch_lock"
  .venv/bin/python -m pip install -q --require-hashes --no-deps --no-index -r "$torch_lock" 2>/dev/null \
    || .venv/bin/python -m pip install -q --require-hashes --no-deps \
      --index-url https://download.pytorch.org/whl/cpu -r "$torch_lock"
  rm -f "$torch_lock"
fi
.venv/bin/python -m pip install -q --require-hashes --no-deps -r "$lock"
# The project itself, editable; its dependencies are all in the lock above, so nothing else is resolved here.
.venv/bin/python -m pip install -q --no-deps -e .
[ "$lock" = requirements/lock.txt ] || exit 0
# Headless Chromium and its driver for the browser tests (support/browser.py), from Debian, never a download.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
