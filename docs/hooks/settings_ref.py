"""MkDocs hook: the settings reference is generated from `Settings` at build time (never a hand-kept copy).
`render()` is also what the unit test reads, so every field's `DEJA_<NAME>` is checked against the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- settings-reference -->"


def _settings_class() -> Any:
    if str(ROOT) not in sys.path:  # mkdocs loads hooks by path; the project's packages live at the root
        sys.path.insert(0, str(ROOT))
    from index.settings import Settings

    return Settings


def _default(field: Any) -> str:
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is None:
        return "unset"
    if hasattr(value, "value"):  # an Enum
        value = value.value
    if isinstance(value, bool):
        value = str(value).lower()
    if isinstance(value, dict):
        value = json.dumps(value)
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    """One Markdown table row per `Settings` field: the variable, its default and its description."""
    settings = _settings_class()
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in settings.model_fields.items():
        rows.append(f"| `DEJA_{name.upper()}` | {_cell(_default(field))} | {_cell(field.description or '')} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
