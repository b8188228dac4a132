"""Same content, other form: plain rewordings are recognised; any change of content, order or value is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.guards.form import same_content
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Reason
from index.match.policy import MatchPolicy
from support.inprocess import inprocess_gateway


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I reset my password?", "How can I reset my password?"),
        ("What is the capital of France?", "what's the capital of france"),
        ("How do I export my contacts", "Hi, how can I export my contacts? Thanks!"),
        ("Please tell me how to delete a branch in git", "how do i delete a branch in git"),
        ("Is the API rate limited?", "is the API rate-limited"),
        ("How do I take a screenshot on Windows 11?", "On Windows 11, how do I take a screenshot?"),
        ("How do I connect my printer to Wi-Fi?", "How do I connect my printer to WiFi?"),
        ("What time zone is Chicago in?", "Which time zone is Chicago in?"),
    ],
)
def test_plain_rewordings_have_the_same_content(a: str, b: str) -> None:
    assert same_content(a, b) and same_content(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I install Docker?", "How do I uninstall Docker?"),
        ("How do I pin a message?", "How do I unpin a message?"),
        ("Convert 30 degrees Celsius to Fahrenheit", "Convert -30 degrees Celsius to Fahrenheit"),
        ("Convert Celsius to Fahrenheit", "Convert Fahrenheit to Celsius"),
        ("Should I back up before the upgrade?", "Should I back up after the upgrade?"),
        ("Is the API rate limited?", "Is the API not rate limited?"),
        ("How do I reset my password?", "How do I reset your password?"),
        ("How do I compress a folder on Windows?", "How do I compress a folder on Mac?"),
        ("Solve 2x + 6 = 14", "Solve 2x - 6 = 14"),
        ("hi", "thanks"),
        ("Does Python support Java libraries?", "Does Java support Python libraries?"),
        ("Is a dog faster than a cat?", "Is a cat faster than a dog?"),
    ],
)
def test_a_change_of_content_order_or_value_is_not_the_same_content(a: str, b: str) -> None:
    assert not same_content(a, b)


GUARDED = MatchPolicy(0.98)  # the default decision, its threshold above every candidate here


def test_a_plain_rewording_is_served_below_the_threshold_and_says_why() -> None:
    decision = decide("How can I reset my password?", [Candidate(1, "How do I reset my password?", 0.97)], GUARDED,
                      Deciders())
    assert decision.hit and decision.basis == "same content"


def test_a_contrast_below_the_threshold_stays_a_miss() -> None:
    decision = decide("How do I zip a folder on Mac?", [Candidate(1, "How do I zip a folder on Windows?", 0.95)],
                      GUARDED, Deciders())
    # Not served on its content: a miss below the threshold (a near miss, labelled as the threshold's evidence).
    assert decision.reason is Reason.BELOW_THRESHOLD and decision.basis != "same content"


@pytest.mark.asyncio
async def test_at_the_defaults_a_cold_cache_serves_a_plain_rewording_and_not_a_contrast(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path) as gw:  # the default decision, the shipped judge
        await gw.chat("How do I reset my password?")
        reworded = await gw.chat("How can I reset my password?")
        assert (reworded.headers["x-deja-cache"], reworded.headers["x-deja-reason"]) == ("hit-semantic", "hit")
        await gw.chat("How do I install Docker?")
        contrast = await gw.chat("How do I uninstall Docker?")
        assert contrast.headers["x-deja-cache"] == "miss"


@pytest.mark.parametrize(
    ("cached", "asked"),
    [("How do I pin a message in Slack?", "unpin a slack message"),
     ("How do I compress a folder?", "decompress folder"),
     ("How to encrypt a file with gpg", "How to decrypt a file with gpg"),
     ("upload a file to s3", "download a file from s3")],
)
def test_a_candidate_that_asks_the_opposite_is_vetoed_however_sure_the_judge(cached: str, asked: str) -> None:
    decision = decide(asked, [Candidate(1, cached, 0.93)], MatchPolicy(0.9), Deciders())
    assert decision.reason is Reason.VETOED and decision.vetoed_by == "contrast"


def test_a_vetoed_candidate_leaves_the_others_to_the_next_steps() -> None:
    candidates = [Candidate(1, "How do I install Docker?", 0.96), Candidate(2, "Docker uninstall steps?", 0.9)]
    decision = decide("How do I uninstall Docker?", candidates, MatchPolicy(0.9), Deciders())
    assert decision.hit and decision.chosen == 1
