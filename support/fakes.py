"""Fakes at the real seams, for tests: a verification stage that vetoes on one word."""

from __future__ import annotations

from index.guards.stages import StepResult


class WordVeto:
    """A `Stage` that vetoes when exactly one of the two prompts contains `word`; remembers what it checked."""

    def __init__(self, name: str, word: str) -> None:
        self.name = name
        self.word = word
        self.checked: list[tuple[str, str]] = []

    def check(self, query: str, cached: str) -> StepResult:
        self.checked.append((query, cached))
        passed = (self.word in query.split()) == (self.word in cached.split())
        return StepResult(self.name, passed, "" if passed else f"{self.word!r} on one side")
