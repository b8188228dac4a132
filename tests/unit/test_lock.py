"""The install installs what the lock names: every distribution in the test venv is in requirements/lock.txt at
the version the lock pins, and every locked package is installed (what `pip freeze` would show, read through
importlib.metadata). The lock is uv's, with hashes; scripts/install.sh installs it with `--require-hashes`."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements" / "lock.txt"
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


def test_every_locked_line_pins_one_version_with_a_hash() -> None:
    text = LOCK.read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    assert len(entries) > 50
    for entry in entries:
        assert _PIN.match(entry), entry[:80]
        assert "--hash=sha256:" in entry, entry[:80]


def test_torch_is_locked_to_its_cpu_build() -> None:
    assert locked()["torch"] == "2.13.0+cpu"


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
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = locked()
    for spec in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        requirement = Requirement(spec)
        version = pins[_name(requirement.name)]
        assert requirement.specifier.contains(version, prereleases=True), f"{spec} vs {version}"


def test_the_image_lock_is_the_product_part_of_the_tested_lock() -> None:
    image = locked(REPO / "requirements" / "product.lock.txt")
    full = locked()
    assert "torch" in image and "pytest" not in image
    assert {n: v for n, v in image.items() if full.get(n) != v} == {}


def test_the_image_and_the_install_script_install_from_the_locks_with_hashes() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    script = (REPO / "scripts" / "install.sh").read_text()
    assert "--require-hashes --no-deps -r requirements/product.lock.txt" in dockerfile
    assert "--require-hashes --no-deps -r requirements/lock.txt" in script
    assert "pip install --no-deps ." in dockerfile and "pip install -q --no-deps -e ." in script
