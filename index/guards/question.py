"""What a question asks for: its focus, read from its question word ("who" asks for a person, "when" for a time,
"where" for a place, "why" for a reason, "how many" for a count, "how long" for a duration, "how often" for a
frequency). Two prompts whose foci differ ask different questions, however alike their other words: "Who founded
the company?" / "When was the company founded?" share every content word and a cosine above most paraphrases.

Manner and thing ("how do I ..." / "what is the way to ...") are too often two wordings of one question to tell
apart, and "what"/"which" followed by a word that names the focus ("what time", "which year", "what place") take
that word's focus. Only the first question word of each prompt is read; a prompt with none has no focus. Pure
function of the two prompts; microseconds per pair.
"""

from __future__ import annotations

import re
from functools import lru_cache

from index.guards.text import CACHE_SIZE, normalize

_WORD = re.compile(r"[a-z]+")
# Question words and the focus each asks for; two-word forms first.
_PAIRS = {("how", "many"): "count", ("how", "much"): "amount", ("how", "long"): "duration",
          ("how", "often"): "frequency", ("how", "far"): "distance", ("how", "old"): "age",
          ("how", "come"): "reason", ("what", "time"): "time", ("what", "year"): "time", ("what", "date"): "time",
          ("what", "day"): "time", ("what", "place"): "place",
          ("what", "country"): "place",
          ("what", "city"): "place", ("what", "reason"): "reason",
          ("what", "person"): "person"}
_SINGLE = {"who": "person", "whom": "person", "whose": "owner", "when": "time", "where": "place", "why": "reason",
           "how": "manner", "what": "thing", "which": "thing"}
# Foci that one question is often worded in both ways.
_INTERCHANGEABLE = frozenset({frozenset({"manner", "thing"})})


@lru_cache(maxsize=CACHE_SIZE)
def focus(text: str) -> str | None:
    """The focus of `text`'s first question word (None when it has none)."""
    words = _WORD.findall(normalize(text))
    for i, word in enumerate(words):
        if word not in _SINGLE:
            continue
        lead = "what" if word == "which" else word  # "which year" asks what "what year" asks
        pair = _PAIRS.get((lead, words[i + 1])) if i + 1 < len(words) else None
        return pair or _SINGLE[word]
    return None


def changed_focus(query: str, cached: str) -> tuple[str, str] | None:
    """The two foci when both prompts ask for something and not for the same thing (query's, cached's)."""
    left, right = focus(query), focus(cached)
    if left is None or right is None or left == right or frozenset({left, right}) in _INTERCHANGEABLE:
        return None
    return left, right
