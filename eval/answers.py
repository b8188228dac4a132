"""Answers of a stub upstream, by intent: the same content for every prompt of one intent, clearly different content
for any other. A sampled model words one answer differently each call; `sampled_answer` stands in for that with
a different closing sentence each call (the content stays)."""

from __future__ import annotations

import random

# Words for intent answers: common, unrelated, so two intents' answers share little meaning.
ANSWER_WORDS = (
    "river", "copper", "lantern", "orbit", "meadow", "cipher", "harbor", "velvet", "granite", "falcon", "quartz",
    "tundra", "saffron", "glacier", "ember", "compass", "willow", "anchor", "prism", "thunder", "canyon", "maple",
    "beacon", "cobalt", "dune", "fjord", "garnet", "hazel", "iris", "jasper", "kelp", "lagoon", "marble",
    "nectar", "opal", "pepper", "quill", "reef", "sierra", "timber", "umber", "violet", "walnut", "yarrow",
    "zephyr", "basalt", "cedar", "delta", "fern", "geyser",
)
# What a sampled model varies between two answers of one content: how it signs off.
CLOSING_SENTENCES = (
    "Thanks for asking!",
    "Thank you, I hope this helps.",
    "Let me know if you have other questions.",
    "Happy to help further if anything is unclear.",
    "Good luck with it!",
    "I hope that answers your question.",
    "Feel free to ask a follow-up.",
    "Cheers, and enjoy.",
)


def intent_answer(intent: str, words: int = 16) -> str:
    """The same text for every prompt of `intent`, clearly different text for any other intent."""
    rng = random.Random(intent)  # seeded by the string: the same words in every process
    return " ".join(rng.choice(ANSWER_WORDS) for _ in range(words)).capitalize() + "."


def sampled_answer(content: str, call: int) -> str:
    """`content` as the `call`-th sample of a model would word it: a different closing sentence each call."""
    return f"{content} {CLOSING_SENTENCES[call % len(CLOSING_SENTENCES)]}"
