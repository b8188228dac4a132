"""The overview page's drawing: every string traffic wrote is escaped, and empty data draws no chart."""

from __future__ import annotations

from service.overview import ApiTraffic, BarTrack, NamespaceRow, Overview, Savings, Slice
from service.overview_page import render

HOSTILE = '<script>alert("x")</script>'


def overview(**changes: object) -> Overview:
    base: dict[str, object] = dict(
        budget=0.02, decision="guarded", now=1_000.0,
        traffic=(ApiTraffic(HOSTILE, {"hit-exact": 2, "miss": 2}),), savings=(Savings(HOSTILE, 30, 0.01),),
        namespaces=(NamespaceRow(HOSTILE, HOSTILE, 3, 1, 1, 1, 1.0, 1.0, 0.95),),
        bars=(BarTrack(HOSTILE, ((0.0, 0.92), (500.0, 0.96), (1_000.0, 0.96))),),
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
    page = render(overview(traffic=(), savings=(), namespaces=(), bars=(), timeline=()), "n")
    assert "<svg" not in page and "No requests yet" in page
