"""Conversation pairs from the Schema-Guided Dialogue dev split (real crowd-written task dialogues, CC BY-SA 4.0),
read in place and labelled by the dialogues' own states, never by us.

- `slot_twin` (must not): one real conversation cut at a user turn and its twin with one slot value the user gave
  earlier (a city, a date, a count, a name) replaced, wherever it appears in the earlier turns, by another value
  the corpus holds for the same slot. The last request is word for word the same; what it depends on is not.
- `other_state` (must not): two different dialogues whose last user requests are the same words but whose
  states (active intent and slot values) differ.
- `same_situation` (same answer, weak labels): two different dialogues cut at a user turn where everything the last
  request depends on agrees by the dialogues' own annotations (the services, the active intent, every slot value by
  its canonical value, the requested slots, the user's acts in the last turn, and the assistant's acts just before
  it: what it last offered or confirmed, with their values), and the last requests are worded differently. The
  clerk's reply can still differ (each dialogue's simulated results are its own): a weak label, reported, not gated.

A pair's family is the domain of its dialogues' first service ("Hotels" for Hotels_1 and Hotels_4); families go to
dev or test whole by a hash of the family (`eval.sources.split_of`), so no service, and no dialogue, is on both
sides; a pair of two dialogues of families on both sides is not made.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from eval.datasets import Conversation, LabeledPair, Message
from eval.sources import split_of

SGD_DEV = "sgd_dialogues/dev"
SLOT_TWIN = "slot_twin"
OTHER_STATE = "other_state"
SAME_SITUATION = "same_situation"
# Turns of context a pair carries at most before its last request (the most recent ones).
MAX_EARLIER = 8


@dataclass(frozen=True)
class Turn:
    """One user turn of a dialogue: the messages up to it, and its state (intent, slot values so far)."""

    dialogue: str
    messages: tuple[Message, ...]
    intent: str
    values: Mapping[str, tuple[str, ...]]
    # the slot values the user gave before this turn, as they were written
    given: Mapping[str, tuple[str, ...]]


def dialogues(shared: Path) -> Iterator[dict[str, Any]]:
    yield from _read(shared)


@lru_cache(maxsize=2)
def _read(shared: Path) -> tuple[dict[str, Any], ...]:
    """The dev dialogues, read once per process (the twins, the other-state pairs and the canonical values)."""
    found: list[dict[str, Any]] = []
    for path in sorted((shared / SGD_DEV).glob("dialogues_*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            found.extend(json.load(handle))
    return tuple(found)


def _state(frames: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, tuple[str, ...]]]:
    intents, values = [], {}
    for frame in frames:
        state = frame.get("state") or {}
        if state.get("active_intent") not in (None, "NONE"):
            intents.append(f"{frame['service']}:{state['active_intent']}")
        for slot, written in (state.get("slot_values") or {}).items():
            values[f"{frame['service']}:{slot}"] = tuple(written)
    return ",".join(sorted(intents)), values


def turns(dialogue: Mapping[str, Any]) -> Iterator[Turn]:
    """Every user turn after the first exchange, with the messages before it."""
    messages: list[Message] = []
    given: dict[str, tuple[str, ...]] = {}
    for raw in dialogue["turns"]:
        user = raw["speaker"] == "USER"
        messages.append(Message("user" if user else "assistant", raw["utterance"]))
        if not user:
            continue
        intent, values = _state(raw["frames"])
        if len(messages) >= 3:
            earlier = messages[:-1][-MAX_EARLIER:]
            while earlier and earlier[0].role != "user":
                earlier = earlier[1:]
            yield Turn(dialogue["dialogue_id"], (*earlier, messages[-1]), intent, values, dict(given))
        given = values


def _mentions(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(value)}(?![\w])", re.IGNORECASE)


def canonical_values(shared: Path) -> dict[str, str]:
    """Each written slot value (lower case) -> the canonical value the dataset's own acts give it ("morning 11" and
    "11 in the morning" -> "11:00")."""
    canon: dict[str, str] = {}
    for dialogue in dialogues(shared):
        for raw in dialogue["turns"]:
            for frame in raw["frames"]:
                for action in frame.get("actions", ()):
                    values, canonical = action.get("values") or [], action.get("canonical_values") or []
                    if len(values) == len(canonical):
                        for written, value in zip(values, canonical, strict=True):
                            canon.setdefault(written.lower(), value.lower())
    return canon


def _differs(value: str, other: str, canon: Mapping[str, str]) -> bool:
    """Two written values that are not one value written another way ("Long beach", "next Monday" / "Monday next
    week"): the corpus writes one value many ways, and a twin must change what was said."""
    def meaning(text: str) -> str:
        return canon.get(text.lower(), " ".join(sorted(set(re.findall(r"[a-z0-9]+", text.lower())) - {"of", "the"})))
    return meaning(value) != meaning(other)


def _twin(turn: Turn, slot: str, value: str, other: str) -> Conversation | None:
    """`turn`'s conversation with `value` replaced by `other` in every earlier turn; None when the last request
    names the value (then the two last requests differ, which is a single-turn pair) or nothing changes."""
    pattern = _mentions(value)
    last = turn.messages[-1]
    if pattern.search(last.content):
        return None
    earlier = [Message(m.role, pattern.sub(other, m.content)) for m in turn.messages[:-1]]
    if earlier == list(turn.messages[:-1]):
        return None
    return Conversation((*earlier, last))


def slot_twins(shared: Path, seed: int, per_dialogue: int = 1) -> list[LabeledPair]:
    """One twin per dialogue (at most `per_dialogue`): a random user turn, a random value the user gave before it,
    replaced by another value of the same slot seen elsewhere in the split."""
    rng = random.Random(seed)
    canon = canonical_values(shared)
    all_turns = [t for d in dialogues(shared) for t in turns(d)]
    seen: dict[str, set[str]] = {}
    for turn in all_turns:
        for slot, written in turn.values.items():
            seen.setdefault(slot, set()).update(written)
    by_dialogue: dict[str, list[Turn]] = {}
    for turn in all_turns:
        by_dialogue.setdefault(turn.dialogue, []).append(turn)
    pairs: list[LabeledPair] = []
    for dialogue_id, candidates in sorted(by_dialogue.items()):
        rng.shuffle(candidates)
        made = 0
        for turn in candidates:
            options = [(slot, v) for slot, written in sorted(turn.given.items()) for v in written if len(v) >= 1]
            rng.shuffle(options)
            twin = None
            for slot, value in options:
                others = sorted(v for v in seen[slot] - set(turn.given.get(slot, ())) if _differs(v, value, canon))
                if others:
                    twin = _twin(turn, slot, value, rng.choice(others))
                if twin is not None:
                    break
            if twin is None:
                continue
            pairs.append(LabeledPair(f"sgd-twin-{dialogue_id}-{len(turn.messages)}", Conversation(turn.messages),
                                     twin, SLOT_TWIN, False, domain=family_of(dialogue_id, shared)))
            made += 1
            if made >= per_dialogue:
                break
    return pairs


def other_states(shared: Path, seed: int, limit: int = 600) -> list[LabeledPair]:
    """Pairs of different dialogues whose last user requests are the same words and whose states differ."""
    by_request: dict[str, list[Turn]] = {}
    for dialogue in dialogues(shared):
        for turn in turns(dialogue):
            key = " ".join(re.findall(r"[a-z0-9']+", turn.messages[-1].content.lower()))
            by_request.setdefault(key, []).append(turn)
    pairs: list[LabeledPair] = []
    for _, group in sorted(by_request.items()):
        for a, b in itertools.pairwise(group):
            family = _common_family(a.dialogue, b.dialogue, shared)
            if family and a.dialogue != b.dialogue and (a.intent, dict(a.values)) != (b.intent, dict(b.values)):
                pairs.append(LabeledPair(f"sgd-other-{a.dialogue}-{b.dialogue}-{len(pairs)}", Conversation(a.messages),
                                         Conversation(b.messages), OTHER_STATE, False, domain=family))
    random.Random(seed).shuffle(pairs)
    return pairs[:limit]


def family_of(dialogue_id: str, shared: Path) -> str:
    """The domain of the dialogue's first service ("Hotels_4" -> "Hotels")."""
    return _families(shared)[dialogue_id]


@lru_cache(maxsize=2)
def _families(shared: Path) -> dict[str, str]:
    return {d["dialogue_id"]: str(d["services"][0]).split("_")[0] for d in dialogues(shared)}


def _common_family(first: str, second: str, shared: Path) -> str:
    """The first dialogue's family where both dialogues' families fall in one split, else ''."""
    one, other = family_of(first, shared), family_of(second, shared)
    return one if split_of(one) == split_of(other) else ""


def _acts(frames: Sequence[Mapping[str, Any]], canon: Mapping[str, str]) -> tuple[tuple[str, ...], ...]:
    """A turn's acts, each as (service, act, slot, canonical values), sorted."""
    return tuple(sorted((frame["service"], action["act"], action.get("slot", ""),
                         *sorted(canon.get(v.lower(), v.lower()) for v in action.get("values") or ()))
                        for frame in frames for action in frame.get("actions", ())))


def _situations(dialogue: Mapping[str, Any], canon: Mapping[str, str]) -> Iterator[tuple[tuple[Any, ...], Turn]]:
    """Every user turn after the first exchange with what its request depends on, as one hashable key."""
    found = {t.messages[-1].content: t for t in turns(dialogue)}
    last_system: tuple[tuple[str, ...], ...] = ()
    for raw in dialogue["turns"]:
        if raw["speaker"] != "USER":
            last_system = _acts(raw["frames"], canon)
            continue
        turn = found.get(raw["utterance"])
        if turn is None or not last_system:
            continue
        requested = tuple(sorted(slot for frame in raw["frames"]
                                 for slot in (frame.get("state") or {}).get("requested_slots", ())))
        values = tuple(sorted((slot, tuple(sorted({canon.get(v.lower(), v.lower()) for v in written})))
                              for slot, written in turn.values.items()))
        key = (tuple(sorted(dialogue["services"])), turn.intent, values, requested, _acts(raw["frames"], canon),
               last_system)
        yield key, turn


def same_situations(shared: Path, seed: int, limit: int = 600) -> list[LabeledPair]:
    """Pairs of different dialogues whose last requests depend on the same situation (the module's docstring) and
    are worded differently."""
    canon = canonical_values(shared)
    by_situation: dict[tuple[Any, ...], list[Turn]] = {}
    for dialogue in dialogues(shared):
        for key, turn in _situations(dialogue, canon):
            by_situation.setdefault(key, []).append(turn)
    pairs: list[LabeledPair] = []
    for _, group in sorted(by_situation.items(), key=lambda item: repr(item[0])):
        for a, b in itertools.pairwise(group):
            family = _common_family(a.dialogue, b.dialogue, shared)
            if not family or a.dialogue == b.dialogue or _words(a.messages[-1].content) == _words(
                    b.messages[-1].content):
                continue
            pairs.append(LabeledPair(f"sgd-same-{a.dialogue}-{b.dialogue}-{len(pairs)}", Conversation(a.messages),
                                     Conversation(b.messages), SAME_SITUATION, True, domain=family))
    random.Random(seed).shuffle(pairs)
    return pairs[:limit]


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"[a-z0-9']+", text.lower()))
