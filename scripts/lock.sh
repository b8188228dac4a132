#!/usr/bin/env bash
# Regenerate the locks with uv, exact versions with hashes: requirements/lock.txt (the product and the dev extra,
# what scripts/install.sh installs) and requirements/product.lock.txt (the product alone, what the image installs).
#   bash scripts/lock.sh            re-resolve, keeping every version the lock already names where it still fits
#   bash scripts/lock.sh --upgrade  take the newest release of everything, install it, and run the whole suite
# torch stays the pinned CPU build (requirements/torch-cpu.txt), found in TORCH_FIND_LINKS (this machine's disk).
set -euo pipefail
cd "$(dirname "$0")/.."
upgrade=()
[ "${1:-}" = "--upgrade" ] && upgrade=(--upgrade)
[ -x .venv/bin/uv ] || bash scripts/install.sh
links=${TORCH_FIND_LINKS:-/opt/wheels}
old="$(mktemp)"
cp requirements/lock.txt "$old"
.venv/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --quiet \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  --find-links "$links" --override requirements/torch-cpu.txt "${upgrade[@]}" \
  --custom-compile-command "bash scripts/lock.sh" -o requirements/lock.txt
# The image's lock: the product alone, at the versions the full lock names (so both were tested together).
.venv/bin/uv pip compile pyproject.toml --generate-hashes --quiet \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  --find-links "$links" --override requirements/torch-cpu.txt --constraint requirements/lock.txt \
  --custom-compile-command "bash scripts/lock.sh" -o requirements/product.lock.txt
echo "lock: what changed" >&2
diff <(grep -E '^[a-z0-9_.-]+==' "$old" | cut -d' ' -f1) <(grep -E '^[a-z0-9_.-]+==' requirements/lock.txt | cut -d' ' -f1) >&2 || true
[ ${#upgrade[@]} -eq 0 ] && exit 0
# An upgrade is proven by the suite on it; on failure the new lock stays for you to mend (git diff shows it),
# and `git checkout requirements/lock.txt && bash scripts/install.sh` goes back.
if ! bash scripts/test.sh; then
  echo "lock: the suite fails on the upgraded lock (the first failure above names what broke)" >&2
  exit 1
fi
echo "lock: the upgraded lock passes the suite; commit requirements/lock.txt" >&2
