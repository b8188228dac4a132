"""`eval replay --learn`: a small synthetic trace of near-twin intents (`support.judges`) through the simulated
deployment, with the shipped judge."""

from __future__ import annotations

import random

import pytest

from eval.datasets import StreamRequest
from eval.learn import Deployment, LabeledInput, LearnConfig, run_learn
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


def test_each_part_reports_the_budget_a_gateway_would_show_and_the_label_calls_spent(prior: Judge) -> None:
    report = run_learn("synthetic", _trace(200), BagOfWords(), prior,
                       LearnConfig(0.5, exploration=Exploration(rate=0.0), audit_rate=0.5, seed=6,
                                   labeller_error=0.0))
    before, after = report.before.budget, report.learned.budget
    assert before is not None and after is not None
    # Cumulative, as /deja/budget shows it: the second part's tallies include the first's.
    assert before.served == report.before.semantic
    assert after.served == report.before.semantic + report.learned.semantic
    assert 0 < before.audited <= before.served and after.audited >= before.audited
    assert before.upper >= (before.estimate or 0.0)
    # Each audit re-asks upstream and calls the label judge; shadows call it while the hour's allowance has room.
    assert before.audit_calls == report.labels["audit"]
    assert before.audit_calls <= before.label_calls <= sum(report.labels.values())


def test_extra_audits_and_shadow_label_calls_stop_at_the_hourly_ceiling(prior: Judge) -> None:
    requests = _trace(200)
    judged = {"labeller_error": 0.0}  # shadows call the label judge while the allowance has room
    free = run_learn("synthetic", requests, BagOfWords(), prior, LearnConfig(0.5, audit_rate=0.05, seed=7, **judged))
    capped = run_learn("synthetic", requests, BagOfWords(), prior,
                       LearnConfig(0.5, audit_rate=0.05, audit_calls_per_hour=0, seed=7, **judged))
    for report in (free, capped):
        assert report.before.budget is not None and report.learned.budget is not None
    assert free.before.budget.extra_audits > 0 and free.before.budget.label_calls > free.before.budget.audit_calls
    for part in (capped.before.budget, capped.learned.budget):
        assert part.extra_audits == 0 and part.label_calls == part.audit_calls  # only base-share audits


def _label_errors(report_labels: list[LabeledInput], requests: list[StreamRequest]) -> tuple[int, int]:
    intent = {r.prompt: r.intent for r in requests}
    wrong = sum(label.same != (intent[label.item.query] == intent[label.item.cached]) for label in report_labels)
    return wrong, len(report_labels)


@pytest.mark.parametrize("variation", [False, True], ids=["stable", "varying"])
def test_answer_comparison_does_not_mistake_a_varying_closing_for_another_answer(
        prior: Judge, variation: bool) -> None:
    requests = _trace(200)
    config = LearnConfig(0.5, audit_rate=0.5, seed=8, answer_variation=variation)
    prompts = list(dict.fromkeys(r.prompt for r in requests))
    embedder = BagOfWords()
    vectors = dict(zip(prompts, embedder.embed(prompts), strict=True))
    deployment = Deployment(vectors, prior, config, embedder)
    deployment.serve(requests)
    wrong, total = _label_errors(deployment.labels, requests)
    assert total > 20 and wrong == 0
    assert deployment.baselines.baseline("trace") is not None  # audits measured the upstream's variation


def test_a_label_judge_errs_at_its_rate_and_its_labels_weigh_less(prior: Judge) -> None:
    requests = _trace(300)
    prompts = list(dict.fromkeys(r.prompt for r in requests))
    embedder = BagOfWords()
    vectors = dict(zip(prompts, embedder.embed(prompts), strict=True))
    deployment = Deployment(vectors, prior, LearnConfig(0.5, audit_rate=0.5, seed=9, labeller_error=0.2), embedder)
    deployment.serve(requests)
    wrong, total = _label_errors(deployment.labels, requests)
    assert 0.1 < wrong / total < 0.3
    assert deployment.live.weight == pytest.approx(0.6) and deployment.live.bars.error_rate == 0.2


def test_the_report_says_how_labels_were_made_and_what_the_last_quarter_served(prior: Judge) -> None:
    report = run_learn("synthetic", _trace(120), BagOfWords(), prior,
                       LearnConfig(0.5, seed=1, answer_variation=True, labeller_error=0.1))
    assert report.labeller == "label judge wrong 10% of the time" and report.answer_variation
    assert 0 <= report.last_quarter_semantic <= 30
    assert report.learned.budget is not None and report.learned.budget.audits_to_trust is not None
