"""`eval replay --learn`: a small synthetic trace of near-twin intents (`support.judges`) through the simulated
deployment, with the shipped judge."""

from __future__ import annotations

import random

import pytest

from eval.datasets import StreamRequest
from eval.learn import LearnConfig, run_learn
from index.judge.model import Judge, load_judge
from index.match.explore import Exploration
from support.judges import WORDINGS, BagOfWords


def _trace(n: int, seed: int = 5) -> list[StreamRequest]:
    rng = random.Random(seed)
    intents = sorted(WORDINGS)
    out = []
    for seq in range(1, n + 1):
        intent = rng.choice(intents)
        # A varying suffix keeps most prompts new to the exact tier, so the judge decides them.
        out.append(StreamRequest(seq, intent, f"{rng.choice(WORDINGS[intent])} {rng.choice(['', 'please', 'thx'])}"
                                 .strip()))
    return out


@pytest.fixture(scope="module")
def prior() -> Judge:
    return load_judge()


def test_the_parts_split_the_trace_at_the_fraction_and_rates_add_up(prior: Judge) -> None:
    requests = _trace(120)
    report = run_learn("synthetic", requests, BagOfWords(), prior, LearnConfig(0.25, seed=1))
    assert (report.before.requests, report.learned.requests) == (30, 90)
    for part in (report.before, report.learned):
        assert part.correct is not None and part.served is not None
        assert part.correct <= part.served <= 1.0
        assert part.exact + part.semantic == round(part.served * part.requests)
    assert report.before.judge_version == prior.version


def test_labels_come_only_from_what_a_gateway_sees(prior: Judge) -> None:
    requests = _trace(200)
    silent = LearnConfig(0.5, exploration=Exploration(rate=0.0), audit_rate=0.0, seed=2)
    report = run_learn("synthetic", requests, BagOfWords(), prior, silent)
    assert set(report.labels) <= {"shadow"} and report.labels.get("shadow", 0) > 0
    eager = LearnConfig(0.5, exploration=Exploration(rate=1.0, band=1.0), audit_rate=1.0, seed=2)
    busy = run_learn("synthetic", requests, BagOfWords(), prior, eager)
    assert sum(busy.labels.values()) > sum(report.labels.values())


def test_the_judge_is_refitted_on_the_labels_and_serves_the_rest(prior: Judge) -> None:
    report = run_learn("synthetic", _trace(300), BagOfWords(), prior,
                       LearnConfig(0.5, exploration=Exploration(rate=0.5), audit_rate=0.2, seed=3))
    assert report.refit.startswith("refitted on")
    assert report.learned.judge_version != report.before.judge_version


def test_one_sided_labels_keep_the_prior(prior: Judge) -> None:
    one_intent = [StreamRequest(i, "freeze_card", f"{WORDINGS['freeze_card'][i % 3]} {i}") for i in range(1, 41)]
    report = run_learn("synthetic", one_intent, BagOfWords(), prior, LearnConfig(0.5, seed=4))
    assert report.refit.startswith("kept the prior")
    assert report.learned.judge_version == prior.version


def test_fraction_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match="fraction"):
        LearnConfig(1.0)
