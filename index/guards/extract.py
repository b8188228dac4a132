"""Value slots of a prompt: numbers with units, dates, times, versions, quoted text, code and named things.

Each slot becomes a `Value` whose `key` is equal for equivalent spellings ("5 km" / "five kilometers",
"Python" / "python", "$5" / "5 USD") so that two prompts can be compared as multisets of keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from index.guards.lexicon import Entity, Lexicon
from index.guards.numbers import (
    NUMBER_WORDS,
    ORDINAL_WORDS,
    SCALES,
    canonical,
    parse_digits,
    parse_words,
    scaled,
)

# Families: a missing or extra value vetoes for strong values; weak values veto only when both prompts
# have an unmatched value of the same family (annual vs monthly; "one" vs "two").
# Tools and platforms (docker, Linux, SQL) are often left implicit by a paraphrase: weak too.
WEAK_ENTITY_KINDS = frozenset({"plan", "reldate", "season", "tech", "operation"})
# Named times of day.
_CLOCK_WORDS = {"midnight": "00:00", "noon": "12:00", "midday": "12:00"}

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
    | (?P<cur>[$€£¥₹₩₽₺])\s?(?P<amount>\d[\d,]*(?:\.\d+)?)
    | (?P<num>(?:(?<![\w)])[-−](?=\d))?\d+(?:,\d{3})*(?:\.\d+)*)(?P<suffix>[A-Za-z°%℃℉µ²]+)?
    | (?P<word>[A-Za-z_][\w']*(?:[.+#-][\w+#]+)*[+#]*)
    | (?P<sym>°[CFcf](?![a-z])|[%°$€£¥₹℃℉])
    | (?<!\S)(?P<op>[-+*/^=×÷−])(?!\S)|(?P<op2>(?<=\w)[+*^=×÷](?=\w))
    | (?P<stop>[.!?:;\n(\[])
    """,
    re.VERBOSE,
)
_ORDINAL_SUFFIX = frozenset({"st", "nd", "rd", "th"})
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'd", "I'll", "OK", "Ok", "Mr", "Mrs", "Ms", "Dr", "Hi", "Hey"})
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m"})
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]|[A-Z][a-z]+[A-Z]")
_VERSION = re.compile(r"^[vV](\d+(?:\.\d+)*)$")
_ACRONYM = re.compile(r"^[A-Z]{2,6}s?$")
_DEGREE_WORDS = frozenset({"degree", "degrees", "deg", "°"})
# Words after which the first value is a role ("convert km TO miles", "cheaper THAN Java"): the same
# values in swapped roles ask a different question.
DIRECTION_MARKERS = frozenset({"to", "into", "from", "than", "in", "per", "by"})
MARKER_WINDOW = 3


@dataclass(frozen=True)
class Value:
    """One value slot. `key` is what is compared; `surface` is what the reason shows."""

    family: str
    canonical: str
    surface: str
    strong: bool
    # where it came from: "list" (a category list), "case" (capitalisation), "acronym", "code",
    # "quote" or "number"; only for rules that trust some sources more than others
    source: str = "number"

    @property
    def key(self) -> tuple[str, str]:
        return (self.family, self.canonical)


@dataclass(frozen=True)
class Analysis:
    """The value slots of a prompt, and for direction markers the first value after each."""

    values: tuple[Value, ...]
    roles: tuple[tuple[str, Value], ...]


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    sentence_start: bool
    # amount for a currency-prefixed number, suffix for a number with letters attached
    extra: str = ""


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    start = True
    for match in _TOKEN.finditer(text.replace("’", "'").replace("‘", "'")):
        kind = match.lastgroup or ""
        if kind == "stop":
            start = True
            continue
        if kind in {"suffix", "amount"}:
            kind = "num" if kind == "suffix" else "cur"
        group = {"dq": "quote", "sq": "quote", "op2": "op"}.get(kind, kind)
        value = match.group(kind)
        if group == "word" and value.endswith("'s"):
            value = value[:-2]  # possessive: Python's -> Python
        extra = match.group("suffix") or "" if kind == "num" else match.group("amount") or ""
        tokens.append(Token(group, value, start, extra))
        start = False
    return tokens


def _is_title_case(tokens: list[Token]) -> bool:
    """Headline or all-caps styling, where capitals say nothing about names."""
    words = [t.text for t in tokens if t.kind == "word" and t.text.isalpha()]
    if len(words) >= 2 and all(w.isupper() for w in words):
        return True
    long_words = [w for w in words if len(w) >= 3]
    capitals = sum(1 for w in long_words if w[0].isupper())
    return capitals >= 2 and capitals >= 0.8 * len(long_words)


class Extractor:
    """Turns a prompt into its value slots; holds only read-only lookup tables, so it is thread-safe."""

    def __init__(self, lexicon: Lexicon) -> None:
        self._lex = lexicon
        self._currencies = frozenset(u.canonical for u in lexicon.units.values() if u.dimension == "currency")

    def analyze(self, text: str) -> Analysis:
        tokens = tokenize(text)
        names_by_case = not _is_title_case(tokens)
        values: list[Value] = []
        roles: dict[str, Value] = {}
        pending: list[tuple[str, int]] = []  # direction markers waiting for their value
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.kind == "word" and token.text.lower() in DIRECTION_MARKERS:
                pending.append((token.text.lower(), i))
                i += 1
                continue
            consumed, found = self._at(tokens, i, names_by_case)
            if token.kind == "quote":  # a quoted span is also read for the values inside it
                found = found + list(self.analyze(token.text).values)
            if found:
                for marker, at in pending:
                    if i - at <= MARKER_WINDOW:
                        roles.setdefault(marker, found[0])
                pending = []
            values.extend(found)
            i += consumed
        return Analysis(tuple(values), tuple(roles.items()))

    def _at(self, tokens: list[Token], i: int, names_by_case: bool) -> tuple[int, list[Value]]:
        token = tokens[i]
        if token.kind in {"code", "url", "flag", "path", "field"}:
            return 1, [Value("name", token.text.strip().lower(), token.text, True, "code")]
        if token.kind == "quote":
            return 1, [Value("quote", " ".join(token.text.lower().split()), token.text, True, "quote")]
        if token.kind in {"time", "date"}:
            return 1, [Value(token.kind, _clock(token.text) if token.kind == "time" else token.text, token.text, True)]
        if token.kind == "cur":
            unit = self._lex.units.get(token.text)
            currency = unit.canonical if unit else token.text
            used, number = self._scaled(tokens, i, token.extra)
            return used, [_quantity(number, currency, token.text + token.extra)]
        if token.kind == "num":
            return self._number(tokens, i)
        if token.kind == "op":
            symbol = _OPERATORS.get(token.text, token.text)
            return 1, [Value("op", symbol, token.text, False, "op")]
        if token.kind == "sym":
            unit = self._lex.units.get(token.text.lower())
            return 1, [Value("unit", unit.canonical, token.text, False)] if unit else []
        return self._word(tokens, i, names_by_case)

    def _scaled(self, tokens: list[Token], i: int, digits: str) -> tuple[int, str]:
        """A digit string with an optional scale word after it (5 million, 2.5k)."""
        nxt = tokens[i + 1].text.lower() if i + 1 < len(tokens) and tokens[i + 1].kind == "word" else ""
        if nxt in SCALES and nxt not in {"k", "bn", "mn"}:
            return 2, scaled(digits, SCALES[nxt])
        return 1, parse_digits(digits)

    def _number(self, tokens: list[Token], i: int) -> tuple[int, list[Value]]:
        token = tokens[i]
        suffix = token.extra
        if suffix.lower() in _ORDINAL_SUFFIX:
            return 1, [Value("ordinal", parse_digits(token.text), token.text + suffix, False)]
        if suffix.lower() in {"k", "bn"}:
            factor = {"k": 1_000, "bn": 1_000_000_000}[suffix.lower()]
            return 1, [Value("number", scaled(token.text, factor), token.text + suffix, True)]
        if suffix.lower() == "s" and len(token.text) == 4:  # the 1990s
            return 1, [Value("number", token.text + "s", token.text + suffix, True)]
        if len(suffix) == 1 and suffix.islower() and self._lex.units.get(suffix) is None:
            suffix = ""  # 2x, 3n: a coefficient on a variable; 5x: a multiplier
        used, number = (1, parse_digits(token.text)) if suffix else self._scaled(tokens, i, token.text)
        unit, unit_used = self._unit_after(tokens, i + used - 1, suffix)
        if unit is not None:
            return used + unit_used, [_quantity(number, unit.canonical, f"{token.text}{suffix} {unit.surface}")]
        if suffix:  # 64bit, 4K ...: keep the whole thing as one value
            return used, [Value("name", (token.text + suffix).lower(), token.text + suffix, True)]
        return used, [Value("number", number, token.text, True)]

    def _unit_after(self, tokens: list[Token], i: int, suffix: str) -> tuple[Value | None, int]:
        """The unit attached to the number at `i` (as suffix, or in the next one or two words)."""
        if suffix:
            unit = self._unit_named(suffix)
            nxt = tokens[i + 1].text.lower() if i + 1 < len(tokens) else ""
            if unit is not None and unit.family == "unit" and suffix in _DEGREE_WORDS and nxt:
                better = self._unit_named(nxt)
                return (better, 1) if better is not None else (unit, 0)
            return unit, 0
        for width in (3, 2, 1):
            words = [t.text for t in tokens[i + 1 : i + 1 + width] if t.kind in {"word", "sym"}]
            if len(words) != width:
                continue
            if words[0].lower() in _DEGREE_WORDS and width == 1 and len(tokens) > i + 2:
                continue
            unit = self._unit_named(" ".join(words))
            if unit is not None:
                return unit, width
        return None, 0

    def _unit_named(self, text: str) -> Value | None:
        key = text.lower().replace("-", " ")
        if key.startswith(("degree ", "degrees ", "deg ", "° ")):
            key = key.split(" ", 1)[1]
        unit = self._lex.units.get(key) or self._lex.units.get("°" + key)
        if unit is None:
            return None
        return Value("unit", unit.canonical, text, True)

    def _word(self, tokens: list[Token], i: int, names_by_case: bool) -> tuple[int, list[Value]]:
        entity, used = self._entity(tokens, i)
        token = tokens[i]
        if entity is not None:
            surface = " ".join(t.text for t in tokens[i : i + used])
            strong = entity.kind not in WEAK_ENTITY_KINDS
            family = "name" if strong else entity.kind
            return used, [Value(family, entity.canonical, surface, strong, "list")]
        lower = token.text.lower()
        words = [t.text.lower() for t in tokens[i : i + 8] if t.kind == "word"]
        run = parse_words(words) if lower in _NUMBER_STARTS else None
        if run is not None and (run[1] > 1 or lower != "a"):
            value, length = run
            surface = " ".join(words[:length])
            unit, unit_used = self._unit_after(tokens, i + length - 1, "")
            if unit is not None:
                return length + unit_used, [_quantity(canonical(value), unit.canonical, f"{surface} {unit.surface}")]
            return length, [Value("number", canonical(value), surface, surface != "one")]
        if lower in _CLOCK_WORDS:
            return 1, [Value("time", _CLOCK_WORDS[lower], token.text, True)]
        if lower in _OPERATOR_WORDS:
            return 1, [Value("op", _OPERATOR_WORDS[lower], token.text, False, "op")]
        if token.text in _ROMAN and _after_name(tokens, i):  # World War II, Louis XIV
            return 1, [Value("number", str(_ROMAN[token.text]), token.text, True)]
        if lower in ORDINAL_WORDS and not self._unit_follows_number(tokens, i):
            return 1, [Value("ordinal", str(ORDINAL_WORDS[lower]), token.text, False)]
        unit_used, unit = self._unit_words(tokens, i)
        if unit is not None:
            nxt = tokens[i + unit_used] if i + unit_used < len(tokens) else None
            if unit.canonical in self._currencies and nxt is not None and nxt.kind == "num" and not nxt.extra:
                used, number = self._scaled(tokens, i + unit_used, nxt.text)  # USD 5, Rs 500
                return unit_used + used, [_quantity(number, unit.canonical, f"{unit.surface} {nxt.text}")]
            return unit_used, [unit]
        version = _VERSION.match(token.text)
        if version:
            return 1, [Value("number", parse_digits(version.group(1)), token.text, True)]
        return 1, self._name(token, names_by_case)

    def _unit_words(self, tokens: list[Token], i: int) -> tuple[int, Value | None]:
        """A unit named without a number ("in kilometers per hour", "degrees F", "monthly"): weak."""
        for width in (3, 2, 1):
            span = tokens[i : i + width]
            if len(span) != width or any(t.kind != "word" for t in span):
                continue
            text = " ".join(t.text for t in span)
            key = text.lower()
            unit = self._lex.units.get(key) or self._lex.units.get(key.removesuffix("s"))
            if unit is None and width == 2 and span[0].text.lower() in _DEGREE_WORDS:
                unit = self._lex.units.get("°" + span[1].text.lower())
            if unit is not None and (not unit.after_number_only or width > 1):
                return width, Value("unit", unit.canonical, text, False)
        return 1, None

    def _unit_follows_number(self, tokens: list[Token], i: int) -> bool:
        return i > 0 and tokens[i - 1].kind == "num"

    def _name(self, token: Token, names_by_case: bool) -> list[Value]:
        text = token.text
        lower = text.lower().rstrip(".")
        if lower in _ABBREVIATIONS or text in _NOT_NAMES or ("'" in text and text.split("'")[0] in _NOT_NAMES):
            return []
        if _ACRONYM.match(text):
            # API, DBs, PTO: often a common noun; vetoes only against another unmatched name
            return [Value("name", lower.removesuffix("s"), text, False, "acronym")]
        code_like = "_" in text or "." in text.strip(".") or any(c.isdigit() for c in text) or _CAMEL.search(text)
        if code_like:
            return [Value("name", lower, text, True, "code")]
        if "-" in text:  # a name inside a compound: Paris-based, Python-only
            parts = text.split("-")
            found = (
                self._name(Token("word", part, token.sentence_start and n == 0), names_by_case)
                for n, part in enumerate(parts)
                if len(part) > 1  # big-O: a lone letter names nothing
            )
            return [value for values in found for value in values]
        capital = text[0].isupper() and not token.sentence_start
        if names_by_case and capital:
            return [Value("name", lower.split("'")[0], text, True, "case")]
        return []

    def _entity(self, tokens: list[Token], i: int) -> tuple[Entity | None, int]:
        for width in range(min(self._lex.max_entity_words, len(tokens) - i), 0, -1):
            span = tokens[i : i + width]
            if any(t.kind != "word" for t in span):
                continue
            words = [p for t in span for p in t.text.replace("-", " ").split()]
            exact = " ".join(words)
            found = self._lex.cased_entities.get(exact) or self._lex.entities.get(exact.lower())
            if found is None and width == 1 and exact.lower().endswith("s"):
                found = self._lex.entities.get(exact.lower()[:-1])  # plurals: "premium plans"
            if found is not None:
                return found, width
        return None, 1


_NUMBER_STARTS = NUMBER_WORDS | {"a", "an"}
_OPERATORS = {"−": "-", "×": "*", "÷": "/"}
_OPERATOR_WORDS = {"plus": "+", "minus": "-", "times": "*", "multiplied": "*", "divided": "/"}
_ROMAN = {
    numeral: value
    for value, numeral in enumerate(
        ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII", "XIV", "XV", "XVI"),
        start=1,
    )
}


def _after_name(tokens: list[Token], i: int) -> bool:
    """The token before `i` is a capitalised word inside a sentence (a name the numeral belongs to)."""
    if i == 0 or tokens[i].sentence_start:
        return False
    before = tokens[i - 1]
    return before.kind == "word" and before.text[:1].isupper() and not before.sentence_start


def _quantity(number: str, unit: str, surface: str) -> Value:
    """A number with its unit is one slot: "5 km" must not match "5 miles ... in km"."""
    return Value("number", f"{number} {unit}", surface, True)


def _clock(text: str) -> str:
    """5pm, 5 p.m., 17:00 -> "17:00"."""
    compact = text.lower().replace(".", "").replace(" ", "")
    meridiem = compact[-2:] if compact.endswith(("am", "pm")) else ""
    digits = compact[: -2] if meridiem else compact
    hour_text, _, minute = digits.partition(":")
    hour = int(hour_text)
    if meridiem == "pm" and hour < 12:
        hour += 12
    if meridiem == "am" and hour == 12:
        hour = 0
    return f"{hour:02d}:{(minute or '00')[:2]}"
