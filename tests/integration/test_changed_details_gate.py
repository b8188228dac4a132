"""Changed details, kept by the suite: every must-not pair of every split of every set, the public ones the team did
not write (SGD dev dialogues with one slot value replaced, CheckList, CANNOT, SemAntoNeg, Breaking NLI, CondaQA)
and our own, decided at Deja's defaults (`Settings()`, the real MiniLM) from a cold cache; the test fails when a
source's must-not rate (or a kind's, from 50 pairs up) passes the budget. The twin of the real-sources gate. The
known gaps (`eval.changed_details.KNOWN_GAPS`) are an expected failure that fails the suite once it passes.

The public sets are read where they lie (`DEJA_SHARED_DATASETS`, default `../shared/datasets`), never copied.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from eval.changed_details import DetailRow, detail_sources, over_budget, run_details
from eval.embedding import EmbedderName, make_embedder
from eval.product import matcher_for
from eval.sources import Source
from index.match.policy import MatchPolicy
from index.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("DEJA_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
# Our conversation sets' same-answer pairs served at the defaults, all splits together (measured 2026-12-05: see
# docs/evaluation.md "Changed details"); a rule that serves no conversation passes every must-not gate.
MIN_CONVERSATIONS_SERVED = 0.15


@pytest.fixture(scope="module")
def sources() -> list[Source]:
    if not (SHARED / "sgd_dialogues").is_dir():
        pytest.skip(f"the public labelled sets are not at {SHARED} (set DEJA_SHARED_DATASETS)")
    found, notes = detail_sources(SHARED, ROOT / "datasets")
    assert not notes, notes
    return found


def _rows(policy: MatchPolicy, sources: list[Source]) -> list[DetailRow]:
    """Each pair decided through the Matcher a fresh gateway builds (a cold namespace: its learner has no evidence)."""
    return run_details(sources, make_embedder(EmbedderName.MINILM_ONNX), matcher_for(policy))


def test_every_must_not_rate_at_the_defaults_is_within_the_budget(sources: list[Source]) -> None:
    policy = Settings().policy()
    rows = _rows(policy, sources)
    assert {(r.source, r.part) for r in rows if r.kind == "*"} >= {("SGD dialogues", "dev"), ("SGD dialogues", "test")}
    broken = over_budget(rows, policy.max_false_hit_rate)
    assert not broken, "; ".join(broken)
    twins = [r for r in rows if r.source == "SGD dialogues" and r.kind == "slot_twin"]
    assert twins and all(r.must_not >= 500 for r in twins)
    # the positive side: what the safety costs is measured on every split, and conversations are served
    sgd = [r for r in rows if r.source == "SGD dialogues" and r.kind == "*"]
    assert all(r.same >= 100 for r in sgd), [(r.part, r.same) for r in sgd]
    ours = [r for r in rows if r.source.startswith("conversations") and r.kind == "*"]
    served = sum(r.same_served for r in ours) / sum(r.same for r in ours)
    assert served >= MIN_CONVERSATIONS_SERVED, f"our conversations' same-answer pairs served {served:.1%}"


@pytest.mark.xfail(strict=True, reason="CANNOT's negations told by rewording (\"merged with\" / \"remained "
                   "separated from\") are served 4-9%: no rule reads a reworded negation yet (docs/evaluation.md)")
def test_the_known_gaps_are_within_the_budget(sources: list[Source]) -> None:
    policy = Settings().policy()
    rows = _rows(policy, [s for s in sources if s.name == "CANNOT negations"])
    broken = over_budget(rows, policy.max_false_hit_rate, gaps=True)
    assert not broken, "; ".join(broken)


def test_the_gate_catches_a_decision_that_serves_changed_details(sources: list[Source]) -> None:
    """The cosine rule with its rule stages at 0.92 serves a fifth of CheckList's contrasts: the same gate must fail
    it, or it could not fail the default either."""
    checklist = [s for s in sources if s.name.startswith("CheckList")]
    loose = dataclasses.replace(Settings().policy(), slot_similarity=0.92, alternative_similarity=0.92)
    assert over_budget(_rows(loose, checklist), loose.max_false_hit_rate)
