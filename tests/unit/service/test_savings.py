"""A hit saves what the upstream call it replaced cost: each API's usage read by kind, priced by the model's rates,
labelling's calls subtracted, and a model without a price shown in tokens with "no price"."""

from __future__ import annotations

from typing import Any

import pytest

from index.pricing.prices import PriceTable
from index.pricing.usage import Usage
from index.settings import Settings
from service.dialects import CHAT, MESSAGES, RESPONSES, Dialect
from service.ledger import Account, Ledger, row_json
from service.metrics import Metrics
from support.stub_upstream import CACHED_USAGE

PRICES = Settings(_env_file=None).price_table()  # type: ignore[call-arg]
# (API, its answer's usage, model, the usage by kind, USD by hand: kind x rate per 1M tokens, summed)
CASES: list[tuple[Dialect, dict[str, Any], str, Usage, float]] = [
    (CHAT, CACHED_USAGE["/v1/chat/completions"], "gpt-4o-mini", Usage(200, 1000, 0, 300),
     (200 * 0.15 + 1000 * 0.075 + 300 * 0.60) / 1e6),
    (CHAT, {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}, "gpt-4.1", Usage(10, 0, 0, 5),
     (10 * 2.00 + 5 * 8.00) / 1e6),
    (RESPONSES, CACHED_USAGE["/v1/responses"], "gpt-4o", Usage(200, 1000, 0, 300),
     (200 * 2.50 + 1000 * 1.25 + 300 * 10.00) / 1e6),
    (RESPONSES, {"input_tokens": 50, "output_tokens": 7}, "gpt-5-mini-2025-08-07", Usage(50, 0, 0, 7),
     (50 * 0.25 + 7 * 2.00) / 1e6),
    (MESSAGES, CACHED_USAGE["/v1/messages"], "claude-sonnet-4-5", Usage(200, 1000, 100, 300),
     (200 * 3.00 + 1000 * 0.30 + 100 * 3.75 + 300 * 15.00) / 1e6),
    (MESSAGES, {"input_tokens": 12, "output_tokens": 6}, "claude-haiku-4-5-20251001", Usage(12, 0, 0, 6),
     (12 * 1.00 + 6 * 5.00) / 1e6),
]


@pytest.mark.parametrize(("dialect", "usage", "model", "kinds", "usd"), CASES,
                         ids=[f"{c[0].name}-{c[2]}" for c in CASES])
def test_a_hits_saving_is_the_priced_sum_of_its_kinds(dialect: Dialect, usage: dict[str, Any], model: str,
                                                      kinds: Usage, usd: float) -> None:
    read = dialect.usage({"usage": usage})
    assert read == kinds
    ledger = Ledger(PRICES, Metrics())
    assert ledger.saved(Account("ns", dialect.name, model), read) == pytest.approx(usd)
    [row] = ledger.rows()
    assert row.saved == kinds and row.saved_usd == pytest.approx(usd) and row.hits == 1


@pytest.mark.parametrize("dialect", [CHAT, RESPONSES, MESSAGES], ids=lambda d: d.name)
def test_an_answer_without_usage_saves_nothing_known(dialect: Dialect) -> None:
    assert dialect.usage({"id": "x"}) is None and dialect.usage({"usage": None}) is None


def test_labelling_spend_is_subtracted_at_the_called_models_prices() -> None:
    ledger = Ledger(PRICES, Metrics())
    account = Account("ns", "chat", "gpt-4o")
    saved = ledger.saved(account, Usage(200, 1000, 0, 300))
    audit = ledger.spent(account, "gpt-4o", Usage(1200, 0, 0, 300))  # the audit's re-ask
    label = ledger.spent(account, "gpt-4o-mini", Usage(400, 0, 0, 8))  # a label-model call
    [row] = ledger.rows()
    assert saved is not None and audit is not None and label is not None
    assert row.labelling == Usage(1600, 0, 0, 308)
    assert row.labelling_usd == pytest.approx(audit + label)
    assert row.net_usd == pytest.approx(saved - audit - label)
    assert row_json(row)["net_usd"] == pytest.approx(saved - audit - label, abs=1e-9)


def test_an_unknown_model_shows_its_tokens_and_no_price() -> None:
    metrics = Metrics()
    ledger = Ledger(PRICES, metrics)
    assert ledger.saved(Account("ns", "chat", "my-finetune"), Usage(30, 0, 0, 20)) is None
    shown = row_json(ledger.rows()[0])
    assert shown["saved_tokens"] == {"input": 30, "cached_input": 0, "cache_write": 0, "output": 20}
    assert shown["saved_usd"] == "no price" and shown["net_usd"] == "no price"
    assert metrics.registry.get_sample_value(
        "deja_saved_tokens_total", {"namespace": "ns", "api": "chat", "model": "my-finetune", "kind": "output"}) == 20
    assert metrics.registry.get_sample_value(
        "deja_saved_usd_total", {"namespace": "ns", "api": "chat", "model": "my-finetune"}) is None


def test_the_provider_cache_share_is_cached_input_over_all_forwarded_input() -> None:
    ledger = Ledger(PriceTable({}), Metrics())
    account = Account("ns", "messages", "claude-sonnet-4-5")
    ledger.forwarded(account, Usage(200, 1000, 100, 300))
    ledger.forwarded(account, Usage(1300, 0, 0, 300))
    [row] = ledger.rows()
    assert row.provider_cache_share == pytest.approx(1000 / 2600) and row.hits == 0
