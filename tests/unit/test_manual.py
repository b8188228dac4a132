"""The front page and the manual: the README stays a front page with both set-up commands, the settings reference
generated for the manual names every `Settings` field, and no document speaks of issue numbers."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from index.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SETUP_COMMANDS = (
    "bash scripts/install.sh && .venv/bin/deja serve --host 127.0.0.1 --port 8080",
    "bash scripts/test.sh",
)
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)


def _settings_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("settings_ref", ROOT / "docs" / "hooks" / "settings_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_settings_field_is_in_the_generated_reference() -> None:
    reference = _settings_hook().render()
    missing = [name for name in Settings.model_fields if f"`DEJA_{name.upper()}`" not in reference]
    assert missing == []


def test_the_settings_page_carries_the_generated_reference() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    hook = _settings_hook()
    assert hook.MARKER in page
    assert "DEJA_VETO_BELOW" in hook.on_page_markdown(page)


def test_readme_is_a_front_page_with_both_setup_commands() -> None:
    assert README.stat().st_size <= 15_000
    text = README.read_text(encoding="utf-8")
    for command in SETUP_COMMANDS:
        assert command in text


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_speaks_of_issue_numbers(document: Path) -> None:
    assert ISSUE_NUMBER.findall(document.read_text(encoding="utf-8")) == []
