"""Long prompts: a candidate that differs from the request past the embedder's window is never served."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Reason
from index.match.policy import DecisionMode, MatchPolicy
from index.match.window import beyond_window, differs_past_window
from support.inprocess import inprocess_gateway

DOCUMENT = " ".join(f"Clause {i}: the tenant pays the rent on the first day of each month." for i in range(40))


@pytest.mark.parametrize("policy", [MatchPolicy(0.5), MatchPolicy(0.9, decision=DecisionMode.THRESHOLD)],
                         ids=["guarded", "threshold"])
def test_a_different_question_behind_a_shared_document_is_not_served(policy: MatchPolicy) -> None:
    cached = Candidate(1, DOCUMENT + " Who pays for repairs?", 1.0)
    decision = decide(DOCUMENT + " Can the tenant sublet?", [cached], policy, Deciders())
    assert decision.reason is Reason.BEYOND_WINDOW and not decision.hit


def test_a_readable_candidate_is_still_decided_beside_a_long_one() -> None:
    long = Candidate(1, DOCUMENT + " Who pays for repairs?", 0.99)
    short = Candidate(2, "who pays the rent", 0.95)
    decision = decide("who pays the rent?", [long, short], MatchPolicy(0.9), Deciders())
    assert decision.hit and decision.chosen == 1


def test_the_window_counts_words_and_characters() -> None:
    assert not beyond_window("How do I reset my password?")
    assert beyond_window(DOCUMENT) and beyond_window("x" * 1001)
    assert not differs_past_window(DOCUMENT, "  " + DOCUMENT.upper())  # case and spacing only


@pytest.mark.asyncio
async def test_an_exact_repeat_of_a_long_prompt_is_a_hit_and_another_question_is_not(tmp_path: Path) -> None:
    # Threshold mode: the lexical embedder's cosine of the two long prompts is near 1.0, so only the window
    # rule keeps the second question from being served.
    async with inprocess_gateway(tmp_path, decision="threshold") as gw:
        await gw.chat(DOCUMENT + " Who pays for repairs?")
        again = await gw.chat(DOCUMENT + " Who pays for repairs?")
        other = await gw.chat(DOCUMENT + " Can the tenant sublet?")
        assert again.headers["x-deja-cache"] == "hit-exact"
        assert (other.headers["x-deja-cache"], other.headers["x-deja-reason"]) == ("miss", "beyond_window")
        assert gw.upstream.chat_calls == 2
