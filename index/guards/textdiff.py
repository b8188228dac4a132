"""Word alignment with bounded work: difflib's opcodes and ratio, linear in the length of the two sequences.

difflib's `SequenceMatcher` (autojunk off) is quadratic in the worst case: long near-duplicates with repeated
words cost seconds. Here the common prefix and suffix are trimmed in linear time, and difflib aligns only what
is left when it is at most `MAX_ALIGNED` tokens a side; a longer middle counts as one differing block. That
answer is conservative: it can only report more difference than difflib would, never less. Sequences of at most
`MAX_ALIGNED` tokens get exactly difflib's answer, so features of ordinary prompts are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import TypeVar

T = TypeVar("T")
# Tokens a side that difflib aligns at most (its cost grows with the product of the two lengths).
MAX_ALIGNED = 400
Opcode = tuple[str, int, int, int, int]


def _common_prefix(a: Sequence[T], b: Sequence[T]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: Sequence[T], b: Sequence[T], prefix: int) -> int:
    n = min(len(a), len(b)) - prefix
    k = 0
    while k < n and a[len(a) - 1 - k] == b[len(b) - 1 - k]:
        k += 1
    return k


def _middle(a: Sequence[T], b: Sequence[T], lo: int, a_hi: int, b_hi: int) -> list[Opcode]:
    """Opcodes of a[lo:a_hi] against b[lo:b_hi], offset back to whole-sequence positions."""
    if a_hi == lo and b_hi == lo:
        return []
    if a_hi == lo:
        return [("insert", lo, lo, lo, b_hi)]
    if b_hi == lo:
        return [("delete", lo, a_hi, lo, lo)]
    if a_hi - lo > MAX_ALIGNED or b_hi - lo > MAX_ALIGNED:
        return [("replace", lo, a_hi, lo, b_hi)]
    inner = SequenceMatcher(None, a[lo:a_hi], b[lo:b_hi], autojunk=False).get_opcodes()
    return [(tag, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for tag, i1, i2, j1, j2 in inner]


def opcodes(a: Sequence[T], b: Sequence[T]) -> list[Opcode]:
    """`SequenceMatcher(None, a, b, autojunk=False).get_opcodes()`, bounded (see the module docstring)."""
    if len(a) <= MAX_ALIGNED and len(b) <= MAX_ALIGNED:
        return list(SequenceMatcher(None, a, b, autojunk=False).get_opcodes())
    prefix = _common_prefix(a, b)
    suffix = _common_suffix(a, b, prefix)
    codes: list[Opcode] = [("equal", 0, prefix, 0, prefix)] if prefix else []
    codes += _middle(a, b, prefix, len(a) - suffix, len(b) - suffix)
    if suffix:
        codes.append(("equal", len(a) - suffix, len(a), len(b) - suffix, len(b)))
    return codes


def ratio(a: Sequence[T], b: Sequence[T]) -> float:
    """`SequenceMatcher(...).ratio()`: 2 * matched tokens / total tokens (1.0 for two empty sequences)."""
    total = len(a) + len(b)
    if not total:
        return 1.0
    matched = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes(a, b) if tag == "equal")
    return 2.0 * matched / total
