"""The label model's protocol as the test upstreams speak it (`service.label_model`): a chat completion whose system
message is Deja's label prompt is answered {"same": ...} by a rule the test controls (by default: the two
questions have the same intent in `answers`, or are the same text), or by a fixed reply (`reply`). With `error_rate`
set it errs as a real label model does: each verdict is flipped with that probability (seeded, so reproducible)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.label_model import SYSTEM_PROMPT

# (question, cached_question, cached_answer, fresh_answer or None) -> same?
LabelRule = Callable[[str, str, str, str | None], bool]


def is_label_call(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages")
    return (isinstance(messages, list) and len(messages) >= 2 and isinstance(messages[0], dict)
            and messages[0].get("role") == "system" and messages[0].get("content") == SYSTEM_PROMPT)


@dataclass
class LabelStub:
    """Answers label calls. `rule` decides; `reply`, when set, is sent as the message content instead."""

    answers: Mapping[str, str] = field(default_factory=dict)
    rule: LabelRule | None = None
    reply: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    error_rate: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def same(self, question: str, cached_question: str, cached_answer: str, fresh: str | None,
             answers: Mapping[str, str]) -> bool:
        if self.rule is not None:
            return self.rule(question, cached_question, cached_answer, fresh)
        a, b = answers.get(question), answers.get(cached_question)
        return a == b if a is not None and b is not None else question == cached_question

    def content(self, body: Mapping[str, Any], answers: Mapping[str, str] | None = None) -> str:
        """The reply's message content for one label call (`answers`: prompt -> intent, else `self.answers`)."""
        case = json.loads(body["messages"][-1]["content"])
        self.calls.append(case)
        if self.reply is not None:
            return self.reply
        same = self.same(case["question"], case["cached_question"], case["cached_answer"], case.get("fresh_answer"),
                         self.answers if answers is None else answers)
        if self.error_rate and self.rng.random() < self.error_rate:
            same = not same
        return json.dumps({"same": same})
