"""The overview page's drawing: every string traffic wrote is escaped, and empty data draws no chart."""

from __future__ import annotations

from index.pricing.usage import Usage
from service.ledger import Account, SavingsRow
from service.overview import ApiTraffic, NamespaceRow, Overview, Slice, ThresholdTrack
from service.overview_page import render
from service.thresholds import BandRow, NamespaceThreshold

HOSTILE = '<script>alert("x")</script>'
SAVED = SavingsRow(Account(HOSTILE, HOSTILE, HOSTILE), 2, Usage(20, 0, 0, 10), 0.01, Usage(), 0.0, Usage(5, 0, 0, 1))


def overview(**changes: object) -> Overview:
    base: dict[str, object] = dict(
        budget=0.02, decision="guarded", now=1_000.0,
        traffic=(ApiTraffic(HOSTILE, {"hit-exact": 2, "miss": 2}),), savings=(SAVED,),
        namespaces=(NamespaceRow(HOSTILE, HOSTILE, 3, 1, 1, 1),),
        tracks=(ThresholdTrack(HOSTILE, ((0.0, 0.92), (500.0, 0.96), (1_000.0, 0.96))),),
        timeline=(Slice(0.0, 500.0, 1, 2), Slice(500.0, 1_000.0, 0, 1)))
    base.update(changes)
    return Overview(**base)  # type: ignore[arg-type]


def test_hostile_strings_from_traffic_are_escaped_everywhere() -> None:
    page = render(overview(), "nonce")
    assert "<script" not in page
    assert page.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") >= 5


def test_exact_and_semantic_rates_are_shown_per_api() -> None:
    page = render(overview(traffic=(ApiTraffic("chat", {"hit-exact": 1, "hit-semantic": 1, "miss": 2}),)), "n")
    assert "<td>chat</td><td>4</td><td>25.0%</td><td>25.0%</td>" in page


def test_an_empty_deployment_draws_no_chart() -> None:
    page = render(overview(traffic=(), savings=(), namespaces=(), tracks=(), timeline=()), "n")
    assert "<svg" not in page and "No requests yet" in page


def _threshold_row(namespace: str) -> NamespaceThreshold:
    bands = [BandRow(low=round(0.80 + i / 100, 2), requests=2.0, right=1.0, wrong=float(i == 3), wrong_rate=0.01)
             for i in range(20)]
    return NamespaceThreshold(namespace=namespace, kind="cosine", threshold=0.86, prior=0.92, estimate=0.012,
                              upper=0.018, holds=True, labels=40, next_down=0.85, labels_to_move=12,
                              requests_to_move=60,
                              bands=bands)


def test_the_learned_threshold_is_shown_with_its_evidence_per_band_and_escaped() -> None:
    page = render(overview(thresholds=(_threshold_row(HOSTILE),)), "n")
    assert "<script" not in page
    assert '<table id="thresholds">' in page
    assert "<td>cosine</td><td>0.86</td><td>0.92</td><td>1.20%</td><td>1.80%</td><td>yes</td>" in page
    assert page.count('class="chart-bands"') == 1 and "<td>12</td><td>60</td>" in page


def test_a_deployment_without_evidence_says_every_namespace_serves_at_the_prior() -> None:
    assert "serves at the prior" in render(overview(thresholds=()), "n")


def test_the_budget_is_drawn_as_the_learners_statistic_per_namespace_and_kind() -> None:
    row = _threshold_row("ns-a").model_copy(update={"upper": 0.031, "holds": False})
    page = render(overview(thresholds=(row,)), "n")
    assert '<svg id="chart-budget"' in page and "ns-a · cosine" in page and "95% upper bound" in page
    assert 'fill="#ef9a9a"><title>upper bound 3.1%</title>' in page  # over the budget: red
    assert "bar" not in page.lower()  # the word names nothing on the page


def test_savings_by_kind_the_provider_cache_and_reuse_findings_are_drawn_and_escaped() -> None:
    from index.reuse.watch import Finding, NamespaceReuse, Obstacle

    finding = Finding(Obstacle.VARYING_SYSTEM_PROMPT, 200, 1.0, 200, HOSTILE, HOSTILE)
    unpriced = SavingsRow(Account("ns", "chat", "x"), 1, Usage(1, 0, 0, 1), None, Usage(), 0.0, Usage())
    page = render(overview(savings=(SAVED, unpriced), reuse=(NamespaceReuse(HOSTILE, 200, (finding,)),)), "n")
    assert "<script" not in page
    assert '<table id="savings">' in page and "no price" in page and '<table id="provider-cache">' in page
    assert "<td>varying_system_prompt</td>" in page and "<td>100.0%</td><td>200 of 200</td>" in page
