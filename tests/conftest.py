"""Fixtures for every test: no `DEJA_*` setting leaks from the shell or from one test into another."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from Deja's defaults; a test that needs a setting sets it itself (and says why)."""
    for name in [n for n in os.environ if n.startswith("DEJA_")]:
        monkeypatch.delenv(name)
