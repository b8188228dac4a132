#!/usr/bin/env bash
# Install Deja into ./.venv (idempotent) at the exact versions requirements/lock.txt names, hashes checked
# (regenerate it with scripts/lock.sh). torch is pinned and installed first: an unpinned torch pulls CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q --require-hashes --no-deps -r requirements/lock.txt
# The project itself, editable; its dependencies are all in the lock above, so nothing else is resolved here.
.venv/bin/python -m pip install -q --no-deps -e .
# Headless Chromium and its driver for the browser tests (support/browser.py), from Debian, never a download.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
