"""The glossary holds the manual and the API to one word per thing: every term is defined, and no retired word is
used in the manual (the glossary and the changelog's history aside) or in an API field."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

import service.admin
import service.budget
import service.thresholds

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "glossary.md"
TERM = re.compile(r"^- \*\*(?P<term>[^*]+)\*\*: (?P<definition>.+)$")


def _terms() -> dict[str, str]:
    return {m["term"]: m["definition"] for line in GLOSSARY.read_text().splitlines() if (m := TERM.match(line))}


def _retired() -> list[str]:
    section = GLOSSARY.read_text().split("## Retired words", 1)[1]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    return [word for word in rows if word not in ("Retired", "")]


def _api_fields() -> set[str]:
    models = [obj for module in (service.admin, service.budget, service.thresholds) for obj in vars(module).values()
              if isinstance(obj, type) and issubclass(obj, BaseModel) and obj is not BaseModel]
    return {name for model in models for name in model.model_fields}


def test_every_term_has_a_definition_and_one_entry() -> None:
    terms = _terms()
    assert len(terms) >= 20
    assert all(len(definition.split()) >= 5 for definition in terms.values())
    lines = [m["term"] for line in GLOSSARY.read_text().splitlines() if (m := TERM.match(line))]
    assert len(lines) == len(set(lines)) and lines == sorted(lines)


def test_the_glossary_is_in_the_manual() -> None:
    assert "glossary.md" in (ROOT / "mkdocs.yml").read_text()


def test_no_retired_word_in_the_manual_or_the_api() -> None:
    retired = _retired()
    assert "near-miss" in retired
    pages = [p for p in (ROOT / "docs").glob("*.md") if p.name not in ("glossary.md", "changelog.md")]
    used = [(page.name, word) for page in pages for word in retired if word.lower() in page.read_text().lower()]
    assert used == []
    fields = _api_fields()
    assert "threshold" in fields or "thresholds" in fields  # the models were read
    assert [f for f in fields for word in retired if word.replace(" ", "_") in f] == []
