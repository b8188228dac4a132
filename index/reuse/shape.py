"""A request's shape as the reuse report reads it: hashes only, no prompt text. The system prompt (or
instructions) is fingerprinted twice, as sent and with its volatile spans (dates, times, ids, uuids, numbers,
names after "name is"/"user:") masked, and each masked span keeps its kind, its place and a hash of its value: two
requests whose masked prompts agree differ only by such spans."""

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
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
# Most specific first: a timestamp is not read as a date and a time, a uuid not as numbers.
VOLATILE = re.compile("|".join((
    r"(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)",
    r"(?P<timestamp>\b\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)",
    r"(?P<date>\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b" + _MONTH + r" \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b"
    r"|\b\d{1,2} " + _MONTH + r",? \d{4}\b)",
    r"(?P<time>\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?[AaPp][Mm])?)",
    r"(?P<id>\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{8,}\b|\b[0-9a-fA-F]{16,}\b)",
    r"(?P<number>\b\d+(?:[.,]\d+)*\b)",
    r"(?:(?i:my name is|name is|name:|user:|customer:|user name:)\s+)(?P<name>[A-Z][\w'-]+(?: [A-Z][\w'-]+)?)",
)))
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
    sampling: tuple[tuple[str, str], ...]  # (parameter, value as JSON or "unset")


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


def mask(text: str) -> SystemShape:
    spans: list[Span] = []
    pieces: list[str] = []
    last = 0
    for match in VOLATILE.finditer(text):
        kind = match.lastgroup or "name"
        start, end = match.span(kind)
        pieces += [text[last:start], f"\x00{kind}\x00"]
        spans.append(Span(kind, start, _digest(text[start:end])))
        last = end
    pieces.append(text[last:])
    return SystemShape(_digest(text) if text else "", _digest("".join(pieces)), len(text), tuple(spans))


class Shaper:
    """Shapes requests; the masking of a system prompt seen lately is memoised by its hash (bounded)."""

    def __init__(self, memo_size: int = MEMO_SIZE) -> None:
        self._memo: OrderedDict[str, SystemShape] = OrderedDict()
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

    def shape(self, request: CanonicalRequest) -> RequestShape:
        tools = request.params.get("tools")
        tool_hashes = tuple(_digest(json.dumps(t, sort_keys=True, default=str)) for t in tools) \
            if isinstance(tools, list) else ()
        sampling = tuple((name, json.dumps(request.params[name], sort_keys=True, default=str)
                          if name in request.params else UNSET) for name in SAMPLING)
        return RequestShape(request.model, self.system(system_text(request)), tool_hashes, sampling)
