"""Numbers in prompts: digits and number words to one canonical string ("five" == "5" == "5.0")."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_ONES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}
SCALES = {
    "dozen": 12, "hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
    "trillion": 1_000_000_000_000, "k": 1_000, "bn": 1_000_000_000, "mn": 1_000_000,
}
ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20, "hundredth": 100,
}
NUMBER_WORDS = frozenset(_ONES) | frozenset(_TENS) | (frozenset(SCALES) - {"k", "bn", "mn"})
_THOUSANDS = re.compile(r"^\d{1,3}(,\d{3})+(\.\d+)?$")


def canonical(number: Decimal) -> str:
    """Integral values print without a fraction; others in plain (non-exponent) notation."""
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def parse_digits(text: str) -> str:
    """Canonical form of a digit string: 1,000 -> 1000; 5.0 -> 5; 3.10 stays 3.10 (versions); 1.2.3 as is.

    A fraction that is not all zeros is kept literally, so "3.1" and "3.10" stay different.
    """
    if text[:1] in {"-", "−"}:
        return "-" + parse_digits(text[1:])
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    parts = text.split(".")
    if len(parts) > 2 or (not parts[0].isdigit() and parts[0]):
        return text
    whole = str(int(parts[0])) if parts[0] else "0"
    if len(parts) == 1 or set(parts[1]) <= {"0"}:
        return whole
    return f"{whole}.{parts[1]}"


def scaled(text: str, scale: int) -> str:
    """`parse_digits(text)` multiplied by `scale` (2.5 million -> 2500000)."""
    try:
        return canonical(Decimal(parse_digits(text)) * scale)
    except InvalidOperation:
        return text


def parse_words(tokens: list[str]) -> tuple[Decimal, int] | None:
    """Value and length of the number-word run opening `tokens` (lowercase): "twenty five" -> (25, 2).

    "and" is allowed inside a run ("one hundred and five"); "a" opens one before a scale ("a hundred").
    """
    total, current, used, seen = 0, 0, 0, False
    for i, token in enumerate(tokens):
        if token in _ONES:
            current += _ONES[token]
        elif token in _TENS:
            current += _TENS[token]
        elif token in {"hundred", "dozen"}:
            current = (current or 1) * SCALES[token]
        elif token in SCALES and token not in {"k", "bn", "mn"}:
            total += (current or 1) * SCALES[token]
            current = 0
        elif _joins(tokens, i, seen):
            continue
        else:
            break
        seen, used = True, i + 1
    if not seen:
        return None
    if tokens[used : used + 3] == ["and", "a", "half"]:  # "three and a half"
        return Decimal(total + current) + Decimal("0.5"), used + 3
    return Decimal(total + current), used


def _joins(tokens: list[str], i: int, seen: bool) -> bool:
    """ "and" after a scale word ("one hundred and five", never "nine and seven"), or "a"/"an" before one."""
    nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
    if tokens[i] == "and":
        return seen and tokens[i - 1] in SCALES and nxt in NUMBER_WORDS
    return tokens[i] in {"a", "an"} and not seen and nxt in SCALES
