"""Conversation pairs from the SGD dev dialogues, labelled by the dialogues' own states and read in place
(`DEJA_SHARED_DATASETS`, default `../shared/datasets`); without them these tests are skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.sgd import OTHER_STATE, SAME_SITUATION, SLOT_TWIN, other_states, same_situations, slot_twins
from eval.sources import split_of

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("DEJA_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
pytestmark = pytest.mark.skipif(not (SHARED / "sgd_dialogues").is_dir(), reason=f"SGD is not at {SHARED}")


@pytest.fixture(scope="module")
def twins() -> list:  # type: ignore[type-arg]
    return slot_twins(SHARED, seed=0)


def test_a_twin_changes_one_earlier_value_and_keeps_the_last_request(twins: list) -> None:  # type: ignore[type-arg]
    assert len(twins) > 1000
    for pair in twins[:200]:
        assert pair.kind == SLOT_TWIN and not pair.same_answer
        assert pair.a.prompt == pair.b.prompt and pair.a.context != pair.b.context
        assert len(pair.a.messages) == len(pair.b.messages)
        changed = [i for i, (x, y) in enumerate(zip(pair.a.messages, pair.b.messages, strict=True)) if x != y]
        assert changed and all(pair.a.messages[i].role == pair.b.messages[i].role for i in changed)


def test_twins_are_seeded(twins: list) -> None:  # type: ignore[type-arg]
    assert [p.id for p in slot_twins(SHARED, seed=0)[:50]] == [p.id for p in twins[:50]]


def test_other_state_pairs_share_the_last_request_and_come_from_two_dialogues() -> None:
    pairs = other_states(SHARED, seed=0, limit=100)
    assert len(pairs) == 100
    for pair in pairs:
        assert pair.kind == OTHER_STATE and not pair.same_answer
        assert pair.a.prompt.lower().strip(" .?!") == pair.b.prompt.lower().strip(" .?!") or pair.a.prompt != ""
        assert pair.a.messages != pair.b.messages


def test_same_situation_pairs_are_two_dialogues_worded_otherwise_in_one_family() -> None:
    pairs = same_situations(SHARED, seed=0)
    assert len(pairs) >= 300
    for pair in pairs:
        assert pair.kind == SAME_SITUATION and pair.same_answer
        assert pair.a.prompt.lower() != pair.b.prompt.lower()
        assert pair.id.split("-")[2] != pair.id.split("-")[3]  # two dialogues
    assert {split_of(p.domain) for p in pairs} == {"dev", "test"}


def test_no_family_is_on_both_sides() -> None:
    pairs = [*slot_twins(SHARED, seed=0), *other_states(SHARED, seed=0), *same_situations(SHARED, seed=0)]
    sides: dict[str, set[str]] = {}
    for pair in pairs:
        for dialogue in pair.id.split("-")[2:4]:
            if "_" in dialogue:
                sides.setdefault(dialogue, set()).add(split_of(pair.domain))
    assert sides and all(len(parts) == 1 for parts in sides.values())
