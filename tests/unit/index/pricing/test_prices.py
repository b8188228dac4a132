"""The price table: shipped rates, dated snapshots, the operator's file and setting over them, the deprecated
blended prices only where nothing else prices a model, and a bad table refused at start-up."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from index.pricing.prices import SHIPPED_PRICES, ModelPrice
from index.pricing.usage import Usage
from index.settings import Settings


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type,call-arg]


def test_a_dated_snapshot_takes_its_familys_price_and_a_name_of_its_own_wins() -> None:
    table = settings().price_table()
    assert table.price_for("gpt-4o-mini-2024-07-18") == table.price_for("gpt-4o-mini")
    assert table.price_for("gpt-4o-2024-08-06") == table.price_for("gpt-4o") != table.price_for("gpt-4o-mini")
    assert table.price_for("claude-sonnet-4-5-20250929") == table.price_for("claude-sonnet-4-5")
    assert table.price_for("llama-3-70b") is None


def test_rates_a_table_leaves_out_default_to_the_input_rate() -> None:
    price = ModelPrice(input=2.0, output=8.0)
    assert price.cost(Usage(1_000_000, 1_000_000, 1_000_000, 1_000_000)) == pytest.approx(2 + 2 + 2 + 8)


def test_the_operators_file_and_setting_override_the_shipped_table(tmp_path: Path) -> None:
    file = tmp_path / "prices.json"
    file.write_text(json.dumps({"gpt-4o": {"input": 1, "output": 2}, "house-model": {"input": 3, "output": 4,
                                                                                      "cached_input": 0.3}}))
    table = settings(prices_file=file, prices={"house-model": {"input": 5, "output": 6}}).price_table()
    assert table.price_for("gpt-4o") == ModelPrice(1, 2)
    assert table.price_for("house-model") == ModelPrice(5, 6)  # DEJA_PRICES over the file
    assert table.price_for("claude-3-haiku") is not None  # shipped, untouched


def test_the_deprecated_blended_prices_are_read_with_a_warning_only_where_nothing_else_prices(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "deja.settings"):
        table = settings(prices_per_1k_tokens={"gpt-4o": 0.00625, "old-model": 0.002}).price_table()
    assert "DEJA_PRICES_PER_1K_TOKENS is deprecated" in caplog.text
    assert table.price_for("gpt-4o") == SHIPPED_PRICES["gpt-4o"]  # the per-kind rates win
    assert table.cost("old-model", Usage(500, 0, 0, 500)) == pytest.approx(1000 / 1000 * 0.002)


@pytest.mark.parametrize("prices", [{"m": {"input": 1}}, {"m": {"input": -1, "output": 1}},
                                    {"m": {"input": 1, "output": 1, "typo": 2}}, {"m": 3}],
                         ids=["no-output", "negative", "unknown-rate", "not-an-object"])
def test_a_bad_price_table_stops_start_up_with_its_reason(prices: object) -> None:
    with pytest.raises(ValidationError, match=r"price of 'm'|prices\.m"):
        settings(prices=prices)


def test_an_unreadable_price_file_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="price file"):
        settings(prices_file=tmp_path / "missing.json")
