"""Value slots of a prompt (numbers with units, dates, times, versions, quotes, code, named things), each
with a canonical key so that equivalent spellings compare equal ("5 km" / "five kilometers", "$5" / "5 USD").
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
from index.guards.tokens import Token, tokenize

# Families: a missing or extra value vetoes for strong values; weak values veto only when both prompts
# have an unmatched value of the same family (annual vs monthly; "one" vs "two").
# Tools and platforms (docker, Linux, SQL) are often left implicit by a paraphrase: weak too.
WEAK_ENTITY_KINDS = frozenset({"plan", "reldate", "season", "tech", "operation"})
# Named times of day.
_CLOCK_WORDS = {"midnight": "00:00", "noon": "12:00", "midday": "12:00"}

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
        # Every lowercase word that can open a value; any other plain lowercase word is skipped at once.
        self._cues = frozenset(
            {key.split()[0] for key in lexicon.entities}
            | {key.split()[0] for key in lexicon.units}
            | lexicon.unit_starts
            | _NUMBER_STARTS
            | set(ORDINAL_WORDS)
            | set(_CLOCK_WORDS)
            | set(_OPERATOR_WORDS)
        )

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
        """A digit string with an optional scale word after it (5 million) or letter on it ($18k, $2bn)."""
        for suffix, factor in (("bn", 1_000_000_000), ("k", 1_000)):
            if digits.lower().endswith(suffix):
                return 1, scaled(digits[: -len(suffix)], factor)
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
            surface = token.text + suffix if suffix else f"{token.text} {unit.surface}"
            return used + unit_used, [_quantity(number, unit.canonical, surface)]
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
        token = tokens[i]
        text = token.text
        if text.islower() and text.isalpha() and text not in self._cues and text[:-1] not in self._cues:
            return 1, []  # the common case: a plain word that starts no value (checked in O(1))
        entity, used = self._entity(tokens, i)
        if entity is not None:
            surface = " ".join(t.text for t in tokens[i : i + used])
            strong = entity.kind not in WEAK_ENTITY_KINDS
            family = "name" if strong else entity.kind
            return used, [Value(family, entity.canonical, surface, strong, "list")]
        lower = text.lower()
        if lower in _NUMBER_STARTS:
            found = self._number_words(tokens, i)
            if found is not None:
                return found
        if lower in _CLOCK_WORDS:
            return 1, [Value("time", _CLOCK_WORDS[lower], text, True)]
        if lower in _OPERATOR_WORDS:
            return 1, [Value("op", _OPERATOR_WORDS[lower], text, False, "op")]
        if text in _ROMAN and _after_name(tokens, i):  # World War II, Louis XIV
            return 1, [Value("number", str(_ROMAN[text]), text, True)]
        if lower in ORDINAL_WORDS:
            return 1, [Value("ordinal", str(ORDINAL_WORDS[lower]), text, False)]
        unit_used, unit = self._unit_words(tokens, i)
        if unit is not None:
            return self._currency_first(tokens, i, unit_used, unit) or (unit_used, [unit])
        version = _VERSION.match(text)
        if version:
            return 1, [Value("number", parse_digits(version.group(1)), text, True)]
        return 1, self._name(token, names_by_case)

    def _number_words(self, tokens: list[Token], i: int) -> tuple[int, list[Value]] | None:
        """A run of number words ("twenty five", "two dozen", "a hundred"), with its unit if one follows."""
        words = [t.text.lower() for t in tokens[i : i + 8] if t.kind == "word"]
        run = parse_words(words)
        if run is None or (run[1] == 1 and words[0] in {"a", "an"}):
            return None
        value, length = run
        surface = " ".join(words[:length])
        unit, unit_used = self._unit_after(tokens, i + length - 1, "")
        if unit is not None:
            return length + unit_used, [_quantity(canonical(value), unit.canonical, f"{surface} {unit.surface}")]
        return length, [Value("number", canonical(value), surface, surface != "one")]

    def _currency_first(self, tokens: list[Token], i: int, width: int, unit: Value) -> tuple[int, list[Value]] | None:
        """A currency named before its amount ("USD 5", "Rs 500"): `width` words at `i`, then the number."""
        nxt = tokens[i + width] if i + width < len(tokens) else None
        if unit.canonical not in self._currencies or nxt is None or nxt.kind != "num" or nxt.extra:
            return None
        used, number = self._scaled(tokens, i + width, nxt.text)
        return width + used, [_quantity(number, unit.canonical, f"{unit.surface} {nxt.text}")]

    def _unit_words(self, tokens: list[Token], i: int) -> tuple[int, Value | None]:
        """A unit named without a number ("in kilometers per hour", "degrees F", "monthly"): weak."""
        widths = (3, 2, 1) if tokens[i].text.lower() in self._lex.unit_starts else (1,)
        for width in widths:
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
        if token.piece and len(text) == 1:
            return []  # big-O, X-ray: a lone letter in a compound names nothing
        capital = text[0].isupper() and not token.sentence_start
        if names_by_case and capital:
            return [Value("name", lower.split("'")[0], text, True, "case")]
        return []

    def _entity(self, tokens: list[Token], i: int) -> tuple[Entity | None, int]:
        first = tokens[i].text
        longest = self._lex.max_entity_words if first.lower() in self._lex.entity_starts else 1
        for width in range(min(longest, len(tokens) - i), 0, -1):
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
