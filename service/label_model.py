"""The label model (`DEJA_LABEL_MODEL`, an LLM that labels): a label is one chat completion sent to the chat
upstream. Its system message asks whether the cached answer serves the question as well as a fresh answer would;
its last user message is one JSON object {"question", "cached_question", "cached_answer", "fresh_answer" (when one
was fetched)}. The reply must be the JSON object {"same": true|false}; anything else gives no label."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from index.match.labelling import LabelCase as LabelCase  # re-exported: what a label call is about
from service.dialects import CHAT
from service.errors import UpstreamError
from service.ledger import Account, Ledger
from service.metrics import Metrics
from service.upstream import Upstream

log = logging.getLogger("deja.labels")

CHAT_PATH = "/v1/chat/completions"
SYSTEM_PROMPT = (
    "You label a response cache. The user message is a JSON object: `question` (what was asked now), "
    "`cached_question` (an earlier question) and `cached_answer` (the answer given to it), and `fresh_answer` "
    "(an answer to `question` itself) when present. Does the cached answer serve the question as well as a fresh "
    "answer would? Reply with the JSON object {\"same\": true} or {\"same\": false} and nothing else."
)
# Answers are cut to this many characters in the label model's message (the cost of a label stays bounded).
MAX_TEXT = 4000


def label_body(model: str, case: LabelCase, cached_answer: str, fresh_answer: str | None) -> dict[str, Any]:
    content: dict[str, str] = {"question": case.question, "cached_question": case.cached_question,
                               "cached_answer": cached_answer[:MAX_TEXT]}
    if fresh_answer is not None:
        content["fresh_answer"] = fresh_answer[:MAX_TEXT]
    return {"model": model, "temperature": 0, "messages": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(content, ensure_ascii=False)},
    ]}


def parse_verdict(reply: Any) -> bool | None:
    """{"same": bool} from a chat.completion's first message, else None."""
    try:
        text = reply["choices"][0]["message"]["content"]
        verdict = json.loads(text.strip())
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, RecursionError):
        return None
    same = verdict.get("same") if isinstance(verdict, dict) else None
    return same if isinstance(same, bool) else None


class LabelModel:
    """Sends label calls through the chat upstream with the caller's own credentials; metered."""

    def __init__(self, model: str, upstream: Upstream, metrics: Metrics, ledger: Ledger) -> None:
        self.model = model
        self.upstream = upstream
        self.metrics = metrics
        self.ledger = ledger

    async def same(self, case: LabelCase, cached_answer: str, fresh_answer: str | None,
                   headers: Mapping[str, str], account: Account) -> bool | None:
        """`account`: the labelled traffic, which the call's cost is charged to."""
        """The label model's verdict, or None (no label) when the call fails or the reply is not {"same": bool}."""
        body = json.dumps(label_body(self.model, case, cached_answer, fresh_answer)).encode()
        try:
            response = await self.upstream.send("POST", CHAT_PATH, headers, body)
            content = await self.upstream.read(response)
        except UpstreamError as exc:
            self.metrics.label_calls.labels("upstream_error").inc()
            log.info("label call failed: %s", exc)
            return None
        try:
            reply = json.loads(content) if response.status_code == 200 else None
        except (ValueError, RecursionError):
            reply = None
        self._meter(reply, account)
        verdict = parse_verdict(reply)
        self.metrics.label_calls.labels("no_label" if verdict is None else "labelled").inc()
        return verdict

    def _meter(self, reply: Any, account: Account) -> None:
        usage = CHAT.usage(reply) if isinstance(reply, dict) else None
        if usage is None:
            return
        usd = self.ledger.spent(account, self.model, usage)
        if usd is not None:
            self.metrics.label_cost.labels(self.model).inc(usd)
