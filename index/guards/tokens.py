"""Lexical tokens for the value stage: one regex pass keeping numbers, units, quotes, code and words,
with sentence starts marked and hyphenated words split ("two-factor"), unless they hold digits ("gpt-4").
"""

from __future__ import annotations

import re
from typing import NamedTuple

_TOKEN = re.compile(
    r"""
    `(?P<code>[^`]+)`
    | [\"“”](?P<dq>[^\"“”\n]{1,80})[\"“”]
    | (?<![\w'])'(?P<sq>[^'\n]{1,60})'(?![\w'])
    | (?P<url>(?:https?://|www\.)[^\s)\]}>\"']*[^\s)\]}>\"'.,;:?!]|[\w.+-]+@[\w-]+\.\w+(?:\.\w+)*)
    | (?P<time>\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\b\.?)?|\b\d{1,2}\s*[ap]\.?m\b\.?)
    | (?P<date>\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b)
    | (?<![\w-])(?P<flag>--?[A-Za-z][\w-]*)
    | (?<![\w.:/])(?P<field>[A-Za-z_]\w*:[\w.@/-]*\w)
    | (?<![\w.])(?P<path>(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*)
    | (?P<cur>[$€£¥₹₩₽₺])\s?(?P<amount>\d+(?:,\d{3})*(?:\.\d+)?(?:[kK]|bn)?\b)
    | (?P<num>(?:(?<![\w)])[-−](?=\d))?\d+(?:,\d{3})*(?:\.\d+)*)(?P<suffix>[A-Za-z°%℃℉µ²]+)?
    | (?P<per>\b[A-Za-z]{1,5}/[A-Za-z]{1,3}\b)
    | (?P<word>[A-Za-z_][\w']*(?:[.+#-][\w+#]+)*[+#]*)
    | (?P<sym>°[CFcf](?![a-z])|[%°$€£¥₹℃℉])
    | (?<!\S)(?P<op>[-+*/^=×÷−])(?!\S)|(?P<op2>(?<=\w)[+*^=×÷](?=\w))
    | (?P<stop>[.!?:;\n(\[])
    """,
    re.VERBOSE,
)


class Token(NamedTuple):
    """A lexical token (internal; a NamedTuple because thousands are made per second)."""

    kind: str
    text: str
    sentence_start: bool
    # amount for a currency-prefixed number, suffix for a number with letters attached
    extra: str = ""
    # a piece of a hyphenated word ("two" in "two-factor"): a lone capital letter there names nothing
    piece: bool = False


def tokenize(text: str) -> list[Token]:
    """Tokens in order; sentence punctuation only marks where the next sentence starts."""
    tokens: list[Token] = []
    start = True
    for match in _TOKEN.finditer(text.replace("’", "'").replace("‘", "'")):
        kind = match.lastgroup or ""
        if kind == "stop":
            start = True
            continue
        if kind in {"suffix", "amount"}:
            kind = "num" if kind == "suffix" else "cur"
        group = {"dq": "quote", "sq": "quote", "op2": "op", "per": "word"}.get(kind, kind)
        value = match.group(kind)
        if group == "word" and value.endswith("'s"):
            value = value[:-2]  # possessive: Python's -> Python
        extra = match.group("suffix") or "" if kind == "num" else match.group("amount") or ""
        if group == "word" and "-" in value and not any(ch.isdigit() for ch in value):
            # two-factor, Paris-based, docker-compose: the pieces are words (entities still match
            # across them, since multi-word terms are looked up by their words)
            pieces = [piece for piece in value.split("-") if piece]
            tokens.extend(Token("word", piece, start and n == 0, "", True) for n, piece in enumerate(pieces))
        else:
            tokens.append(Token(group, value, start, extra))
        start = False
    return tokens
