"""Loaders for labelled pairs (our JSONL, PAWS/QQP-style TSV or CSV) and request streams.

Every malformed line raises `DatasetError(path, line, problem)`; nothing here prints or exits.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from index.errors import DejaError

# Kinds whose two sides deserve the same answer; every other kind must never be served from the other.
SAME_ANSWER_KINDS = frozenset(
    {"paraphrase", "reworded_context", "irrelevant_turn", "small_talk", "chatter", "irrelevant_history"}
)
MUST_NOT_KINDS = frozenset(
    {"negation", "value_change", "topic_shift", "unrelated", "entity_change", "detail_change", "intent_flip",
     "value_changed", "changed_quantity", "changed_account", "swapped_choice", "option_order", "other_intent",
     "different_context"}
)
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
# Column / field names accepted for each side and for the label (ours first, then PAWS, then QQP).
A_FIELDS = ("a", "sentence1", "question1")
B_FIELDS = ("b", "sentence2", "question2")
LABEL_FIELDS = ("same_answer", "label", "is_duplicate")


class DatasetError(DejaError):
    """A dataset line is malformed: which file, which line (1-based), what is wrong with it."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class DatasetFormat(StrEnum):
    """How a pairs file is encoded; `auto` decides from the file suffix, then from the first character."""

    AUTO = "auto"
    JSONL = "jsonl"
    TSV = "tsv"
    CSV = "csv"


@dataclass(frozen=True)
class Message:
    """One chat message (text only)."""

    role: str
    content: str


@dataclass(frozen=True)
class Conversation:
    """One side of a pair: the messages of a request, ending with the user message the cache compares."""

    messages: tuple[Message, ...]

    @classmethod
    def of(cls, prompt: str) -> Conversation:
        return cls((Message("user", prompt),))

    @property
    def prompt(self) -> str:
        """The last user message: what the semantic tier embeds."""
        return self.messages[-1].content

    @property
    def context(self) -> tuple[Message, ...]:
        """Every message before the prompt; the gateway only compares prompts asked in the same context."""
        return self.messages[:-1]


@dataclass(frozen=True)
class LabeledPair:
    """Two requests and whether one's answer may be served for the other. `a` plays the cached side."""

    id: str
    a: Conversation
    b: Conversation
    kind: str
    same_answer: bool
    domain: str = ""

    @property
    def same_context(self) -> bool:
        return self.a.context == self.b.context


@dataclass(frozen=True)
class StreamRequest:
    """One request of a replay trace and the intent that decides which answer is right for it."""

    seq: int
    intent: str
    prompt: str
    # Which split the request's intent belongs to (`dev`, `test`), or "" for a trace without splits.
    part: str = ""


def load_pairs(path: Path, fmt: DatasetFormat = DatasetFormat.AUTO) -> tuple[LabeledPair, ...]:
    """Read labelled pairs; raises `DatasetError` naming the first bad line."""
    text = _read_text(path)
    resolved = _resolve_format(path, text) if fmt is DatasetFormat.AUTO else fmt
    rows = _jsonl_rows(path, text) if resolved is DatasetFormat.JSONL else _table_rows(path, text, resolved)
    pairs: list[LabeledPair] = []
    first_line: dict[str, int] = {}
    for line, fields in rows:
        try:
            pair = _pair_from(fields, fallback_id=f"{path.name}:{line}")
        except ValueError as exc:
            raise DatasetError(str(path), line, str(exc)) from None
        if pair.id in first_line:
            first = first_line[pair.id]
            raise DatasetError(str(path), line, f"duplicate id {pair.id!r} (first on line {first})")
        first_line[pair.id] = line
        pairs.append(pair)
    if not pairs:
        raise DatasetError(str(path), 0, "no pairs in file")
    return tuple(pairs)


def load_stream(path: Path) -> tuple[StreamRequest, ...]:
    """Read a replay trace (JSONL: seq, intent, prompt, optional part) in file order; `seq` must increase."""
    requests: list[StreamRequest] = []
    for line, fields in _jsonl_rows(path, _read_text(path)):
        try:
            part = _text(fields, "part") if "part" in fields else ""
            request = StreamRequest(_int(fields, "seq"), _text(fields, "intent"), _text(fields, "prompt"), part)
        except ValueError as exc:
            raise DatasetError(str(path), line, str(exc)) from None
        if requests and request.seq <= requests[-1].seq:
            raise DatasetError(str(path), line, f"seq {request.seq} does not follow {requests[-1].seq}")
        requests.append(request)
    if not requests:
        raise DatasetError(str(path), 0, "no requests in file")
    return tuple(requests)


def load_clusters(path: Path, seed: int = 0) -> tuple[StreamRequest, ...]:
    """Read question clusters (a JSON list of lists of questions that share an answer, like GPTCache's OSSChat
    set) as a replay trace: each cluster is an intent, every question is asked once, in a seeded shuffle."""
    try:
        clusters = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(str(path), exc.lineno, f"not valid JSON: {exc.msg}") from None
    if not isinstance(clusters, list) or not clusters:
        raise DatasetError(str(path), 0, "expected a non-empty JSON list of question lists")
    asked: list[tuple[str, str]] = []
    for index, cluster in enumerate(clusters):
        if not isinstance(cluster, list) or not all(isinstance(q, str) and q.strip() for q in cluster):
            raise DatasetError(str(path), 0, f"cluster {index} must be a list of non-empty strings")
        asked.extend((f"cluster-{index:04d}", question) for question in dict.fromkeys(cluster))
    random.Random(seed).shuffle(asked)
    return tuple(StreamRequest(seq, intent, prompt) for seq, (intent, prompt) in enumerate(asked, 1))


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(str(path), 0, f"cannot read file: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DatasetError(str(path), line, "not valid UTF-8") from None


def _resolve_format(path: Path, text: str) -> DatasetFormat:
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".json", ".ndjson"}:
        return DatasetFormat.JSONL
    if suffix in {".tsv", ".tab"}:
        return DatasetFormat.TSV
    if suffix == ".csv":
        return DatasetFormat.CSV
    return DatasetFormat.JSONL if text.lstrip().startswith("{") else DatasetFormat.TSV


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[int, Mapping[str, object]]]:
    # split on "\n" only: JSON strings may hold raw U+2028, which str.splitlines() would cut.
    for line, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetError(str(path), line, f"not valid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise DatasetError(str(path), line, "expected a JSON object")
        yield line, value


def _table_rows(path: Path, text: str, fmt: DatasetFormat) -> Iterator[tuple[int, Mapping[str, object]]]:
    lines = text.split("\n")
    if fmt is DatasetFormat.TSV:
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(lines)
    header: list[str] | None = None
    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip().lower() for cell in row]
                _check_header(path, reader.line_num, header)
                continue
            if len(row) != len(header):
                problem = f"expected {len(header)} columns, got {len(row)}"
                raise DatasetError(str(path), reader.line_num, problem)
            yield reader.line_num, dict(zip(header, row, strict=True))
    except csv.Error as exc:
        raise DatasetError(str(path), reader.line_num, f"malformed row: {exc}") from None


def _check_header(path: Path, line: int, header: Sequence[str]) -> None:
    for names, side in ((A_FIELDS, "first"), (B_FIELDS, "second")):
        if not any(name in header for name in names):
            raise DatasetError(str(path), line, f"header has no {side} text column ({', '.join(names)})")


def _pair_from(fields: Mapping[str, object], fallback_id: str) -> LabeledPair:
    a = _conversation(fields, A_FIELDS)
    b = _conversation(fields, B_FIELDS)
    label = next((fields[name] for name in LABEL_FIELDS if fields.get(name) not in (None, "")), None)
    kind_value = fields.get("kind")
    kind = str(kind_value).strip() if kind_value not in (None, "") else None
    if label is not None:
        same = _bool(label)
        kind = kind or ("paraphrase" if same else "unrelated")
    elif kind in SAME_ANSWER_KINDS or kind in MUST_NOT_KINDS:
        same = kind in SAME_ANSWER_KINDS
    else:
        raise ValueError(f"no label: give one of {', '.join(LABEL_FIELDS)} or a known kind")
    assert kind is not None
    raw_id = fields.get("id")
    pair_id = str(raw_id) if raw_id not in (None, "") else fallback_id
    return LabeledPair(pair_id, a, b, kind, same, str(fields.get("domain") or ""))


def _conversation(fields: Mapping[str, object], names: Sequence[str]) -> Conversation:
    name = next((n for n in names if n in fields), names[0])
    value = fields.get(name)
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{name!r} is empty")
        return Conversation.of(value)
    if isinstance(value, list):
        return _messages(name, value)
    raise ValueError(f"{name!r} must be a string or a list of messages")


def _messages(name: str, value: list[object]) -> Conversation:
    messages: list[Message] = []
    for index, item in enumerate(value):
        where = f"{name}[{index}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where} must be an object with role and content")
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise ValueError(f"{where}.role must be one of {', '.join(sorted(ROLES))}")
        if not isinstance(content, str):
            raise ValueError(f"{where}.content must be a string")
        messages.append(Message(str(role), content))
    if not messages or messages[-1].role != "user" or not messages[-1].content.strip():
        raise ValueError(f"{name!r} must end with a non-empty user message")
    return Conversation(tuple(messages))


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes"}:
        return True
    if text in {"0", "false", "no"}:
        return False
    raise ValueError(f"label must be 0/1 or true/false, got {value!r}")


def _text(fields: Mapping[str, object], name: str) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name!r} must be a non-empty string")
    return value


def _int(fields: Mapping[str, object], name: str) -> int:
    value = fields.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name!r} must be an integer")
    return value
