"""A request's shape as the reuse report reads it: hashes only, no prompt text. The system prompt (or
instructions) is fingerprinted twice, as sent and with its volatile spans masked (uuids, timestamps, dates, times,
numbers, ids: any run that holds a digit; a capitalised name after "name is" or "user:"), and each masked span
keeps its kind, its place and a hash of its value: two requests whose masked prompts agree differ only by such
spans."""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from index.request.keys import CanonicalRequest

# Parameters that split a cache by value without changing what is asked (each value keys a cache of its own).
SAMPLING = ("temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty", "max_tokens",
            "max_completion_tokens", "max_output_tokens", "reasoning_effort", "n")
UNSET = "unset"
# A volatile span is a run of letters, digits and the punctuation inside ids, dates and times that holds a digit,
# read as the most specific kind that matches it; only the first MAX_MASKED_CHARS of a prompt are read (a span past
# them splits the masked fingerprint too, and goes unnamed), so the CPU a request costs stays bounded.
_DIGIT = re.compile(r"\d")
_INNER = frozenset("_:./+-")
MAX_MASKED_CHARS = 8192
KINDS = (
    ("uuid", re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")),
    ("timestamp", re.compile(r"\d{4}-\d{2}-\d{2}T\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")),
    ("date", re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4}")),
    ("time", re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?")),
    ("number", re.compile(r"[+-]?\d+(?:[.,]\d+)*%?")),
)
# A capitalised name after one of these (lower-cased) words.
NAME_MARKERS = ("name is ", "name: ", "user: ", "customer: ")
_NAME = re.compile(r"\s*([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)")
MEMO_SIZE = 4096


@dataclass(frozen=True)
class Span:
    """A volatile span of a system prompt: its kind, where it starts (characters) and a hash of its value."""

    kind: str
    offset: int
    value: str


@dataclass(frozen=True)
class SystemShape:
    exact: str  # hash of the system prompt as sent ('' when there is none)
    masked: str  # hash with every volatile span masked
    length: int
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class RequestShape:
    model: str
    system: SystemShape
    tools: tuple[str, ...]  # a hash per tool, in the order sent
    sampling: tuple[tuple[str, str], ...]  # (parameter, its value's repr) of the sampling parameters sent


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def system_text(request: CanonicalRequest) -> str:
    """The system prompt, developer messages and instructions of any API, joined."""
    parts = [_text(m.get("content")) for m in request.messages if m.get("role") in ("system", "developer")]
    parts += [_text(request.params.get(name)) for name in ("system", "instructions")]
    return "\n".join(p for p in parts if p)


def _kind(token: str) -> str:
    return next((kind for kind, pattern in KINDS if pattern.fullmatch(token)), "id")


def _in_token(char: str) -> bool:
    return char.isalnum() or char in _INNER


def _spans(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each volatile span, in order."""
    found = []
    at = _DIGIT.search(text)
    while at is not None:
        start, end = at.start(), at.end()
        while start > 0 and _in_token(text[start - 1]):
            start -= 1
        while end < len(text) and _in_token(text[end]):
            end += 1
        token = text[start:end].rstrip(".,:;/-")
        found.append((_kind(token), start, start + len(token)))
        at = _DIGIT.search(text, end)
    lower = text.lower()
    for marker in NAME_MARKERS:
        at_name = lower.find(marker)
        while at_name >= 0:
            name = _NAME.match(text, at_name + len(marker))
            if name is not None:
                found.append(("name", name.start(1), name.end(1)))
            at_name = lower.find(marker, at_name + 1)
    return sorted(found, key=lambda span: span[1])


def mask(text: str) -> SystemShape:
    spans: list[Span] = []
    pieces: list[str] = []
    last = 0
    for kind, start, end in _spans(text[:MAX_MASKED_CHARS]):
        if start < last:  # inside a span already masked
            continue
        pieces += [text[last:start], f"\x00{kind}\x00"]
        spans.append(Span(kind, start, _digest(text[start:end])))
        last = end
    pieces.append(text[last:])
    return SystemShape(_digest(text) if text else "", _digest("".join(pieces)), len(text), tuple(spans))


class Shaper:
    """Shapes requests; the masking of a system prompt seen lately is memoised by its hash (bounded)."""

    def __init__(self, memo_size: int = MEMO_SIZE) -> None:
        self._memo: OrderedDict[str, SystemShape] = OrderedDict()
        self._tools: dict[str, tuple[str, ...]] = {}
        self._size = memo_size

    def system(self, text: str) -> SystemShape:
        key = _digest(text)
        found = self._memo.get(key)
        if found is None:
            found = mask(text)
            self._memo[key] = found
            if len(self._memo) > self._size:
                self._memo.popitem(last=False)
        else:
            self._memo.move_to_end(key)
        return found

    def tools(self, tools: list[Any]) -> tuple[str, ...]:
        """A hash per tool, in the order sent; memoised by the list as sent (its `repr`, the cheapest whole
        spelling: an application sends its tools the same way each time)."""
        key = _digest(repr(tools))
        found = self._tools.get(key)
        if found is None:
            found = self._tools[key] = tuple(_digest(json.dumps(t, sort_keys=True, default=str)) for t in tools)
            if len(self._tools) > self._size:
                self._tools.pop(next(iter(self._tools)))
        return found

    def shape(self, request: CanonicalRequest) -> RequestShape:
        tools = request.params.get("tools")
        tool_hashes = self.tools(tools) if isinstance(tools, list) and tools else ()
        params = request.params
        sampling = tuple((name, repr(params[name])) for name in SAMPLING if name in params)
        return RequestShape(request.model, self.system(system_text(request)), tool_hashes, sampling)
