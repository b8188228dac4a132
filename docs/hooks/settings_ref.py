"""MkDocs hook: the settings reference is generated from `Settings` at build time (never a hand-kept copy), and
so is the list of retired settings (`index.settings.RETIRED`). `render()` is also what the unit test reads, so every
field's `DEJA_<NAME>` is checked against the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- settings-reference -->"


def _settings_module() -> Any:
    if str(ROOT) not in sys.path:  # mkdocs loads hooks by path; the project's packages live at the root
        sys.path.insert(0, str(ROOT))
    import index.settings

    return index.settings


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
    """One Markdown table row per `Settings` field (the variable, its default and its description), then one per
    retired setting (accepted at start-up and ignored with a warning, or read as the setting it was renamed to)."""
    module = _settings_module()
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in module.Settings.model_fields.items():
        rows.append(f"| `DEJA_{name.upper()}` | {_cell(_default(field))} | {_cell(field.description or '')} |")
    rows += ["", "**Retired settings.** An old deployment that still sets one starts; the log names each once.", "",
             "| variable | now |", "|---|---|"]
    for name, retired in module.RETIRED.items():
        now = (f"read as `DEJA_{retired.renamed_to.upper()}` ({retired.why})" if retired.renamed_to
               else f"ignored: {retired.why}")
        rows.append(f"| `DEJA_{name.upper()}` | {_cell(now)} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
