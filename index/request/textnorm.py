"""How text and numbers are read for matching: one Unicode form, no invisible characters, one spelling of a
number. Applied to what keys and decisions read, never to what is forwarded upstream (the gateway forwards the
caller's bytes unchanged)."""

from __future__ import annotations

import unicodedata
from typing import Any

# Characters that change no word a reader sees: zero-width space, non-joiner and joiner, word joiner, byte order
# mark (zero-width no-break space) and soft hyphen. Removed for matching.
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
# Spaces that only forbid a line break (no-break, narrow no-break, figure space): read as a plain space.
NO_BREAK_SPACES = "\u00a0\u202f\u2007"
_TABLE = str.maketrans({**{c: None for c in INVISIBLE}, **{c: " " for c in NO_BREAK_SPACES}})


def matching_text(text: str) -> str:
    """`text` in NFC with invisible characters removed and no-break spaces as spaces.

    Composed and decomposed "café" read alike; so do "co\u200bffee" and "coffee". NFC runs after the removal,
    so a combining mark once separated from its letter by an invisible character composes with it."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", text.translate(_TABLE))


def canonical_value(value: Any) -> Any:
    """A JSON value with every string as `matching_text` and every integral float as an int (0.0 -> 0,
    100.0 -> 100), so that spellings of one request share one key. Booleans stay booleans."""
    if isinstance(value, str):
        return matching_text(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {matching_text(str(k)): canonical_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical_value(v) for v in value]
    return value
