"""The price table: USD per 1M tokens of each kind, per model. Deja ships the common OpenAI and Anthropic models'
list prices; an operator's table (`DEJA_PRICES_FILE`, then `DEJA_PRICES`) overrides or extends it. A model the table
does not know has no price: its tokens are counted and its dollars reported as "no price", never as $0."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from index.pricing.usage import Usage

PER_TOKENS = 1_000_000  # prices are USD per this many tokens


@dataclass(frozen=True)
class ModelPrice:
    """USD per 1M tokens of each kind. Cached input and cache writes default to the input rate (what a provider
    without a separate rate bills)."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        rates = (self.input, self.output, self.cached_input, self.cache_write)
        if any(r is not None and not r >= 0 for r in rates):
            raise ValueError(f"a price per 1M tokens must be a number >= 0: {self}")

    def cost(self, usage: Usage) -> float:
        """USD of `usage` at these rates: the priced sum of its kinds."""
        cached = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        return (usage.input_tokens * self.input + usage.cached_input_tokens * cached
                + usage.cache_write_tokens * write + usage.output_tokens * self.output) / PER_TOKENS

    @classmethod
    def parse(cls, model: str, value: Any) -> ModelPrice:
        """`{"input": .., "output": .., "cached_input": .., "cache_write": ..}` (the last two optional)."""
        if not isinstance(value, Mapping) or not {"input", "output"} <= value.keys():
            raise ValueError(f"price of {model!r}: give at least \"input\" and \"output\" USD per 1M tokens")
        unknown = set(value) - {"input", "output", "cached_input", "cache_write"}
        if unknown:
            raise ValueError(f"price of {model!r}: unknown rate(s) {sorted(unknown)}")
        def rate(name: str) -> float | None:
            return None if value.get(name) is None else float(value[name])

        try:
            return cls(float(value["input"]), float(value["output"]), rate("cached_input"), rate("cache_write"))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"price of {model!r}: {exc}") from exc


def _openai(input_: float, cached: float, output: float) -> ModelPrice:
    return ModelPrice(input_, output, cached_input=cached, cache_write=input_)  # no charge to write its cache


def _anthropic(input_: float, output: float) -> ModelPrice:
    # Cache reads at a tenth of the input rate, 5-minute cache writes at 1.25x.
    return ModelPrice(input_, output, cached_input=round(input_ * 0.1, 6), cache_write=round(input_ * 1.25, 6))


# List prices (USD per 1M tokens, standard tier) as published when this table was written; an operator's table
# overrides any of them.
SHIPPED_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": _openai(2.50, 1.25, 10.00),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
    "gpt-4.1": _openai(2.00, 0.50, 8.00),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
    "gpt-5": _openai(1.25, 0.125, 10.00),
    "gpt-5-mini": _openai(0.25, 0.025, 2.00),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40),
    "o3": _openai(2.00, 0.50, 8.00),
    "o3-mini": _openai(1.10, 0.55, 4.40),
    "o4-mini": _openai(1.10, 0.275, 4.40),
    "claude-opus-4-1": _anthropic(15.00, 75.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "claude-opus-4-5": _anthropic(5.00, 25.00),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-3-7-sonnet": _anthropic(3.00, 15.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
    "claude-3-haiku": _anthropic(0.25, 1.25),
}


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name. A dated snapshot (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) or an alias
    (`claude-3-5-haiku-latest`) takes the price of the longest model name it extends by `-`; a name of its own in
    the table wins."""

    prices: Mapping[str, ModelPrice]

    def price_for(self, model: str) -> ModelPrice | None:
        found = self.prices.get(model)
        if found is not None:
            return found
        family = [name for name in self.prices if model.startswith(name + "-")]
        return self.prices[max(family, key=len)] if family else None

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD of `usage` on `model`, or None: no price."""
        price = self.price_for(model)
        return None if price is None else price.cost(usage)

    def merged(self, other: Mapping[str, ModelPrice]) -> PriceTable:
        return PriceTable({**self.prices, **other})


def parse_prices(raw: Any, where: str) -> dict[str, ModelPrice]:
    """A JSON object of model -> rates (`ModelPrice.parse`); `where` names the source in errors."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a JSON object of model -> rates is expected")
    try:
        return {str(model): ModelPrice.parse(str(model), value) for model, value in raw.items()}
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc


def read_price_file(path: Path) -> dict[str, ModelPrice]:
    """An operator's price file: the JSON object `parse_prices` reads."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"price file {path}: {exc}") from exc
    return parse_prices(raw, f"price file {path}")


def blended(per_1k: Mapping[str, float]) -> dict[str, ModelPrice]:
    """The retired blended prices (USD per 1K tokens of any kind) as rates per 1M for every kind."""
    return {model: ModelPrice(1000 * price, 1000 * price, 1000 * price, 1000 * price)
            for model, price in per_1k.items()}
