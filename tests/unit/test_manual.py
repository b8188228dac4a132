"""The front page and the manual: the README stays a front page with both set-up commands, every `DEJA_` name and
every `index/`, `service/`, `eval/` module the documents name exists, the generated pages carry what they are
generated from, and no document speaks of issue numbers."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from index.settings import RETIRED, Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SETUP_COMMANDS = (
    "bash scripts/install.sh && .venv/bin/deja serve --host 127.0.0.1 --port 8080",
    "bash scripts/test.sh",
)
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)
DEJA_NAME = re.compile(r"DEJA_[A-Z0-9_]*[A-Z0-9]")
MODULE_PATH = re.compile(r"(?<![\w/.-])((?:index|service|eval)/[\w/.-]*\w)")
MODULE_NAME = re.compile(r"(?<![\w/.-])((?:index|service|eval)\.[a-z_]\w*(?:\.\w+)*)")
# Variables the test harness reads (not the gateway): named in the manual for whoever runs the suites.
HARNESS_NAMES = {"DEJA_TEST_PGVECTOR_URL", "DEJA_SHARED_DATASETS"}
# Retired settings (`index.settings.RETIRED`) are named only where the manual says why they left.
RETIRED_NAMES = {f"DEJA_{name.upper()}" for name in RETIRED}
RETIRED_PAGES = ("changelog.md", "learned-veto.md")
# The documents that state the false-hit budget, and how they quote its one statistic's confidence.
BUDGET_DOCUMENTS = ("README.md", "docs/index.md", "docs/getting-started.md", "docs/budget.md", "docs/operations.md")
QUOTED_BOUND = re.compile(r"(\d+)% (?:posterior )?upper bound")
QUOTED_PROBABILITY = re.compile(r"with probability at least (0\.\d+)")
RETIRED_BAR = re.compile(r"\bbar levels?\b|bar_book|deja_bar|\bBarBook\b|bar_level", re.IGNORECASE)


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _module_exists(name: str) -> bool:
    """`index.match.steps` or `index.match.steps.STEPS`: a module file, or an attribute of the longest module."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return end == len(parts) or hasattr(importlib.import_module(".".join(parts[:end])), parts[end])
    return False


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_setting_the_document_names_exists(document: Path) -> None:
    if document.name == "changelog.md":
        pytest.skip("the changelog records retired names")
    known = {f"DEJA_{name.upper()}" for name in Settings.model_fields} | HARNESS_NAMES
    known |= RETIRED_NAMES if document.name in RETIRED_PAGES else set()
    assert sorted(set(DEJA_NAME.findall(document.read_text(encoding="utf-8"))) - known) == []


def test_the_harness_names_are_read_by_the_harness() -> None:
    sources = "\n".join(p.read_text(encoding="utf-8") for folder in ("support", "tests/integration")
                        for p in (ROOT / folder).rglob("*.py"))
    assert [name for name in sorted(HARNESS_NAMES) if name not in sources] == []


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_the_document_names_exists(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    missing = [path for path in sorted(set(MODULE_PATH.findall(text))) if not (ROOT / path).exists()]
    missing += [name for name in sorted(set(MODULE_NAME.findall(text))) if not _module_exists(name)]
    assert missing == []


def test_the_path_check_would_catch_a_module_that_left() -> None:
    assert MODULE_PATH.findall("see `index/match/judged.py`.") == ["index/match/judged.py"]
    assert not (ROOT / "index/match/judged.py").exists()
    assert not _module_exists("index.match.judged") and _module_exists("index.match.steps.STEPS")


def test_every_setting_says_what_it_steers() -> None:
    vague = [name for name, field in Settings.model_fields.items()
             if not field.description or field.description.startswith("Judge mode")]
    assert vague == []


def test_the_settings_page_carries_the_generated_reference() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    hook = _hook("settings_ref")
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page)
    assert "| `DEJA_GUARDED_CANDIDATES` |" in rendered
    # A retired setting is listed apart, with why it left (and what reads its value, if it was renamed).
    assert all(f"| `{name}` |" in rendered.split("Retired settings")[1] for name in RETIRED_NAMES)


def test_the_decision_page_carries_the_steps_the_decision_runs() -> None:
    from index.match.steps import STEPS

    page = (ROOT / "docs" / "decision.md").read_text(encoding="utf-8")
    hook = _hook("decision_steps")
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page)
    rows = [line for line in rendered.splitlines() if re.match(r"\| \d+ \| `", line)]
    assert [row.split("`")[1] for row in rows] == [step.name for step in STEPS]


def test_the_readme_lists_the_steps_the_decision_runs_in_their_order() -> None:
    """The front page's list of steps names each step of `index.match.steps.STEPS` in backticks, in order."""
    from index.match.steps import STEPS

    text = README.read_text(encoding="utf-8")
    section = text.split("## How a hit is decided", 1)[1].split("\n## ", 1)[0]
    items = "\n".join(line for line in section.splitlines() if re.match(r"\s*(\d+\.|\s{2,}\S)", line))
    names = {step.name for step in STEPS}
    listed = [name for name in re.findall(r"`([^`]+)`", items) if name in names]
    assert listed == [step.name for step in STEPS]


def test_readme_is_a_front_page_with_both_setup_commands() -> None:
    assert README.stat().st_size <= 15_000
    text = README.read_text(encoding="utf-8")
    for command in SETUP_COMMANDS:
        assert command in text


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_speaks_of_issue_numbers(document: Path) -> None:
    assert ISSUE_NUMBER.findall(document.read_text(encoding="utf-8")) == []


def test_the_manual_states_the_budgets_one_statistic_at_the_learners_confidence() -> None:
    """The budget is one ratio with one statistic, the learner's: every confidence the manual quotes for it is
    `index.match.live_threshold.CONFIDENCE`, and the budget page names the constant."""
    from index.match.live_threshold import CONFIDENCE

    percent = f"{CONFIDENCE:.0%}"

    def words(path: str) -> str:
        return " ".join((ROOT / path).read_text(encoding="utf-8").split())

    assert f"at its confidence of **{percent}** (`CONFIDENCE`)" in words("docs/budget.md")
    quoted = {path: (QUOTED_BOUND.findall(words(path)), QUOTED_PROBABILITY.findall(words(path)))
              for path in BUDGET_DOCUMENTS}
    assert sum(len(bounds) for bounds, _ in quoted.values()) >= len(BUDGET_DOCUMENTS)
    assert {path: (bounds, probabilities) for path, (bounds, probabilities) in quoted.items()
            if any(f"{b}%" != percent for b in bounds) or any(float(p) != CONFIDENCE for p in probabilities)} == {}


def test_the_budget_page_quotes_the_learners_constants_as_the_code_sets_them() -> None:
    """Every number the budget page's statistics quote is the constant the learner runs with."""
    from index.match import evidence, live_threshold
    from index.settings import Settings

    text = " ".join((ROOT / "docs" / "budget.md").read_text(encoding="utf-8").split())
    interval = Settings.model_fields["threshold_interval_seconds"].default
    quoted = {
        f"band of {evidence.BAND_WIDTH:g}": evidence.BAND_WIDTH,
        f"every {evidence.HALF_LIFE_REQUESTS:,} newer requests": evidence.HALF_LIFE_REQUESTS,
        f"every {evidence.HALF_LIFE_LABELS:,} newer would-serve requests": evidence.HALF_LIFE_LABELS,
        f"every {live_threshold.PRIOR_SCALE:g} of cosine": live_threshold.PRIOR_SCALE,
        f"{live_threshold.PRIOR_LABELS:g} pseudo-labels at {live_threshold.PRIOR_RATE_SHARE:.0%} of the budget":
            live_threshold.PRIOR_LABELS,
        f"fewer than {live_threshold.TARGET_SUPPORT:g} labels": live_threshold.TARGET_SUPPORT,
        f"strength {live_threshold.PRIOR_STRENGTH:g} labels": live_threshold.PRIOR_STRENGTH,
        f"{live_threshold.DRAWS:,} seeded draws": live_threshold.DRAWS,
        f"at least {live_threshold.MIN_LABELS_BELOW_PRIOR} labels": live_threshold.MIN_LABELS_BELOW_PRIOR,
        f"holding {live_threshold.PSEUDO_MASS_SHARE:.0%} of the traffic": live_threshold.PSEUDO_MASS_SHARE,
        f"`DEJA_THRESHOLD_INTERVAL_SECONDS` ({interval:g})": interval,
    }
    assert [phrase for phrase in quoted if phrase not in text] == []


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_describes_the_retired_bar_levels(document: Path) -> None:
    if document.name == "changelog.md":
        pytest.skip("the changelog records what was retired")
    assert RETIRED_BAR.findall(document.read_text(encoding="utf-8")) == []
