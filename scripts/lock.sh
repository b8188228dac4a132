#!/usr/bin/env bash
# Regenerate the locks with uv, exact versions with hashes, one resolution each:
#   requirements/lock.txt          everything (the product, every extra, dev): what scripts/test.sh installs
#   requirements/product.lock.txt  the product alone: what scripts/install.sh and the image install
#   requirements/<extra>.lock.txt  the product and one extra (torch, plots, train)
# The partial locks are taken at the versions lock.txt names (--constraint), so every lock was tested together.
#   bash scripts/lock.sh            re-resolve, keeping every version the lock already names where it still fits
#   bash scripts/lock.sh --upgrade  take the newest release of everything, install it, and run the whole suite
# torch is its CPU build (requirements/torch-cpu.txt), found in PyTorch's CPU index
# (https://download.pytorch.org/whl/cpu), or in TORCH_FIND_LINKS, a folder holding the same wheel (same hash).
set -euo pipefail
cd "$(dirname "$0")/.."
upgrade=()
[ "${1:-}" = "--upgrade" ] && upgrade=(--upgrade)
[ -x .venv/bin/uv ] || bash scripts/install.sh --dev
torch_source=(--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)
[ -n "${TORCH_FIND_LINKS:-}" ] && torch_source=(--find-links "$TORCH_FIND_LINKS")
[ -z "${TORCH_FIND_LINKS+set}" ] && [ -d /opt/wheels ] && torch_source=(--find-links /opt/wheels)
compile() {
  .venv/bin/uv pip compile pyproject.toml --generate-hashes --quiet \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    "${torch_source[@]}" --override requirements/torch-cpu.txt \
    --custom-compile-command "bash scripts/lock.sh" "$@"
}
old="$(mktemp)"
cp requirements/lock.txt "$old"
compile --all-extras "${upgrade[@]}" -o requirements/lock.txt
compile --constraint requirements/lock.txt -o requirements/product.lock.txt
for extra in torch plots train; do
  compile --extra "$extra" --constraint requirements/lock.txt -o "requirements/$extra.lock.txt"
done
for file in requirements/lock.txt requirements/torch.lock.txt requirements/train.lock.txt; do
  sed -i "2a # torch's CPU build comes from https://download.pytorch.org/whl/cpu (scripts/install.sh installs it first)" "$file"
done
echo "lock: what changed" >&2
diff <(grep -E '^[a-z0-9_.-]+==' "$old" | cut -d' ' -f1) <(grep -E '^[a-z0-9_.-]+==' requirements/lock.txt | cut -d' ' -f1) >&2 || true
[ ${#upgrade[@]} -eq 0 ] && exit 0
# An upgrade is proven by the suite on it; on failure the new locks stay for you to mend (git diff shows them),
# and `git checkout requirements/ && bash scripts/install.sh --dev` goes back.
if ! bash scripts/test.sh; then
  echo "lock: the suite fails on the upgraded lock (the first failure above names what broke)" >&2
  exit 1
fi
echo "lock: the upgraded locks pass the suite; commit requirements/" >&2
