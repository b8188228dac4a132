"""MkDocs hook: the steps of "how a hit is decided" are generated from `index.match.steps.STEPS` at build time,
so the manual lists the decision's own steps, in their order, under the names `X-Deja-Veto` shows. `render()` is
also what the unit test reads."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- decision-steps -->"


def render() -> str:
    """One Markdown table row per step: its place, its name, what it does, and whether threshold mode runs it."""
    if str(ROOT) not in sys.path:  # mkdocs loads hooks by path; the project's packages live at the root
        sys.path.insert(0, str(ROOT))
    from index.match.steps import STEPS, THRESHOLD_STEPS

    rows = ["| # | step | what it does | threshold mode |", "|---|---|---|---|"]
    for number, step in enumerate(STEPS, start=1):
        summary = step.summary.replace("|", "\\|")
        rows.append(f"| {number} | `{step.name}` | {summary} | {'yes' if step in THRESHOLD_STEPS else 'no'} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
