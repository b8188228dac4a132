"""`eval fit --traffic`, `--apply` and `--rollback` against a SQLite decision log migrated to head."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval.cli import app
from eval.fit import FitError, Validation, _compare, fit_traffic
from eval.refit import refit_judge
from index.judge.features import JudgeInput
from index.judge.model import Judge
from index.match.outcome import Reason
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabeledDecision, LabelSource
from index.storage.entries import make_engine
from index.storage.judge_models import JudgeStore
from index.storage.migrate import upgrade

# Same-answer rewordings and one-word flips that need another answer, as a live log would hold them.
SAME = [("how do i freeze my card {}", "freeze my card please {}", 0.90),
        ("sort my files oldest first {}", "order my files oldest first {}", 0.92)]
DIFFERENT = [("how do i freeze my card {}", "how do i unfreeze my card {}", 0.95),
             ("sort my files oldest first {}", "sort my files newest first {}", 0.96)]


@pytest.fixture
def prior(small_prior: Judge) -> Judge:
    return small_prior


def _records(n: int) -> list[tuple[DecisionRecord, bool]]:
    out = []
    for i in range(n):
        same = i % 3 != 0
        prompt, cached, similarity = (SAME if same else DIFFERENT)[i % 2]
        record = DecisionRecord(f"r{i:03d}", "ns", "m", prompt.format(i), i, cached.format(i), similarity, 0.5, (),
                                "miss", Reason.BELOW_THRESHOLD, None, float(i))
        out.append((record, same))
    return out


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'deja.db'}"
    engine = make_engine(url)
    upgrade(engine)
    log = DecisionLog(engine)
    records = _records(90)
    log.record([record for record, _ in records])
    for record, same in records:
        log.label(Label(record.request_id, LabelSource.SHADOW, same, record.created_at))
    engine.dispose()
    return url


def _run(url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["fit", *args], env={"DEJA_DATABASE_URL": url})
    return result.exit_code, result.stdout, result.stderr


def _store(url: str) -> JudgeStore:
    return JudgeStore(make_engine(url))


def test_fit_validates_on_the_most_recent_labels_and_stores_the_refit(url: str) -> None:
    code, out, _ = _run(url, "--traffic", "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["trained_on"], report["validated_on"]) == (63, 27)
    assert report["applied"] is False
    stored = _store(url).history()
    assert [s.version for s in stored] == [report["candidate"]["version"]] and not stored[0].active
    assert _store(url).in_force() is None  # without --apply the shipped prior stays in force


def test_apply_puts_the_refit_in_force_only_when_it_is_better(url: str) -> None:
    code, out, _ = _run(url, "--traffic", "--apply", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["applied"] is report["better"]
    expected = report["candidate"]["version"] if report["better"] else None
    assert _store(url).in_force() == expected


def test_rollback_restores_the_judge_applied_before(url: str, prior: Judge) -> None:
    store = _store(url)
    items = [JudgeInput(p.format(i), c.format(i), s) for i, (p, c, s) in enumerate(SAME * 10 + DIFFERENT * 10)]
    first = refit_judge(items, [True] * 20 + [False] * 20, prior, seed=1)
    second = refit_judge(items, [True] * 20 + [False] * 20, prior, seed=2)
    for at, judge in enumerate((first, second), 1):
        store.save(judge, 40, float(at))
        store.apply(judge.version, float(at))
    assert store.in_force() == second.version
    assert store.load(second.version).version == second.version  # survives the round trip through SQL
    code, out, _ = _run(url, "--rollback")
    assert code == 0 and first.version in out
    assert store.in_force() == first.version
    assert _run(url, "--rollback")[0] == 0 and store.in_force() is None
    code, _, err = _run(url, "--rollback")
    assert code == 1 and "no fitted judge is in force" in err


def test_too_few_labels_fail_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    upgrade(make_engine(url))
    code, _, err = _run(url, "--traffic")
    assert code == 1 and "at least 20 are needed" in err and len(err.strip().splitlines()) == 1


def test_fit_needs_exactly_one_of_traffic_and_rollback(url: str) -> None:
    assert _run(url)[0] == 2
    assert _run(url, "--traffic", "--rollback")[0] == 2


@pytest.mark.parametrize(
    ("new", "old", "better"),
    [(Validation("n", 0.9, 50, 50, 0), Validation("o", 0.9, 20, 20, 0), True),
     (Validation("n", 0.9, 50, 45, 5), Validation("o", 0.9, 20, 20, 0), False),
     (Validation("n", 0.9, 20, 20, 0), Validation("o", 0.9, 30, 30, 0), False),
     (Validation("n", 0.9, 10, 10, 0), Validation("o", 0.9, 40, 30, 10), True),
     (Validation("n", None, 0, 0, 0), Validation("o", 0.9, 10, 10, 0), False)],
    ids=["more-right", "over-budget", "fewer-right", "old-over-budget", "serves-nothing"])
def test_the_refit_must_serve_more_right_answers_within_the_budget(new: Validation, old: Validation,
                                                                   better: bool) -> None:
    assert _compare(new, old, 0.02)[0] is better


def test_one_sided_labels_cannot_be_fitted(prior: Judge) -> None:
    labeled = [LabeledDecision(record, True, LabelSource.SHADOW) for record, _ in _records(40)]
    with pytest.raises(FitError, match="both"):
        fit_traffic(labeled, prior, prior, 0.02)
