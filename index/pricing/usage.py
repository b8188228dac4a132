"""Token usage by kind, as providers bill it: fresh input, input read from the provider's prompt cache, input
written to it, and output. Each API reports these under its own names (`service.dialects` reads them); here they
are one record."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class TokenKind(StrEnum):
    """The four kinds of token a provider prices apart (the `kind` label of the token metrics)."""

    INPUT = "input"  # input billed at the full rate (not read from, nor written to, the provider's cache)
    CACHED_INPUT = "cached_input"  # input the provider served from its prompt cache
    CACHE_WRITE = "cache_write"  # input written to the provider's prompt cache (Anthropic bills it apart)
    OUTPUT = "output"


@dataclass(frozen=True)
class Usage:
    """Tokens of one upstream call (or a sum of calls) by kind; every count is >= 0."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        if any(getattr(self, f.name) < 0 for f in fields(self)):
            raise ValueError(f"token counts cannot be negative: {self}")

    @property
    def prompt_tokens(self) -> int:
        """Every input token, whatever the provider's cache did with it."""
        return self.input_tokens + self.cached_input_tokens + self.cache_write_tokens

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.output_tokens

    def by_kind(self) -> dict[TokenKind, int]:
        return {TokenKind.INPUT: self.input_tokens, TokenKind.CACHED_INPUT: self.cached_input_tokens,
                TokenKind.CACHE_WRITE: self.cache_write_tokens, TokenKind.OUTPUT: self.output_tokens}

    @classmethod
    def of_kinds(cls, counts: dict[TokenKind, int]) -> Usage:
        return cls(counts.get(TokenKind.INPUT, 0), counts.get(TokenKind.CACHED_INPUT, 0),
                   counts.get(TokenKind.CACHE_WRITE, 0), counts.get(TokenKind.OUTPUT, 0))

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.cached_input_tokens + other.cached_input_tokens,
                     self.cache_write_tokens + other.cache_write_tokens, self.output_tokens + other.output_tokens)


def count(value: object) -> int:
    """A token count as an API reported it: a non-negative integer, anything else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
