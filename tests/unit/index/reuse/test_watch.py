"""The reuse report names what splits a namespace's scopes (a system prompt varying by a volatile span, a tool
list in two orders, a sampling parameter split, one prompt sent to two models), and nothing for steady traffic."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from index.request.keys import CanonicalRequest
from index.reuse.shape import mask
from index.reuse.watch import Obstacle, ReuseWatch

QUESTIONS = [f"question number {i} about billing" for i in range(40)]
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("search", "lookup", "book")]


def chat(system: str, question: str, model: str = "gpt-4o-mini", **params: Any) -> CanonicalRequest:
    return CanonicalRequest("chat", model, {"model": model, **params},
                            [{"role": "system", "content": system}, {"role": "user", "content": question}])


def feed(watch: ReuseWatch, namespace: str, requests: list[CanonicalRequest]) -> None:
    for request in requests:
        watch.observe(namespace, request)


def findings(watch: ReuseWatch, namespace: str) -> dict[Obstacle, Any]:
    [found] = [ns for ns in watch.report() if ns.namespace == namespace]
    return {f.obstacle: f for f in found.findings}


@pytest.mark.parametrize("opening", [
    lambda i: f"Current time: 2026-12-05T10:{i % 60:02d}:{i % 60:02d}.{i:03d}Z.",
    lambda i: f"Request id: {uuid.uuid4()}.",
    lambda i: f"Request id: req_{uuid.uuid4().hex[:12]}.",
    lambda i: f"Today is December {1 + i % 28}, 2026.",
    lambda i: f"The user's name is {('Alice', 'Bob', 'Carol')[i % 3]} Smith.",
], ids=["timestamp", "uuid", "request-id", "date", "name"])
def test_a_system_prompt_varying_by_a_volatile_span_is_named_with_where_share_and_fix(opening: Any) -> None:
    watch = ReuseWatch()
    rest = " You are the billing assistant of Acme. Answer briefly and politely."
    feed(watch, "ns", [chat(opening(i) + rest, QUESTIONS[i % 40]) for i in range(200)])
    found = findings(watch, "ns")[Obstacle.VARYING_SYSTEM_PROMPT]
    assert found.share == 1.0 and found.requests == 200 and found.variants >= 3
    assert "at the start of the system prompt" in found.where
    assert found.fix.startswith("Move the") and "prompt cache" in found.fix


def test_a_fixed_system_prompt_is_not_named() -> None:
    watch = ReuseWatch()
    system = "Current time: 2026-12-05T10:00:00.000Z. You are the billing assistant of Acme."
    feed(watch, "ns", [chat(system, QUESTIONS[i % 40]) for i in range(200)])
    assert findings(watch, "ns") == {}


def test_a_tool_list_in_two_orders_is_named_and_one_order_is_not() -> None:
    watch = ReuseWatch()
    feed(watch, "two", [chat("Be brief.", QUESTIONS[i % 40], tools=TOOLS if i % 2 else TOOLS[::-1])
                        for i in range(200)])
    feed(watch, "one", [chat("Be brief.", QUESTIONS[i % 40], tools=TOOLS) for i in range(200)])
    found = findings(watch, "two")[Obstacle.TOOL_ORDER]
    assert (found.share, found.variants) == (1.0, 2) and "3 tools sent in 2 orders" in found.where
    assert findings(watch, "one") == {}


def test_a_sampling_parameter_split_across_values_is_named() -> None:
    watch = ReuseWatch()
    feed(watch, "ns", [chat("Be brief.", QUESTIONS[i % 40], temperature=0.2 if i % 4 else 0.7) for i in range(200)])
    found = findings(watch, "ns")[Obstacle.SAMPLING_SPLIT]
    assert found.requests == 50 and found.share == 0.25 and "temperature" in found.where


def test_one_system_prompt_sent_to_two_models_is_named() -> None:
    watch = ReuseWatch()
    feed(watch, "ns", [chat("Be brief.", QUESTIONS[i % 40], model="gpt-4o" if i % 2 else "gpt-4o-mini")
                       for i in range(100)])
    assert findings(watch, "ns")[Obstacle.MODEL_SPLIT].share == 0.5


def test_the_shape_keeps_no_text() -> None:
    shape = mask("Customer: Alice Jones, order 12345, at 10:42.")
    assert [s.kind for s in shape.spans] == ["name", "number", "time"]
    assert "Alice" not in repr(shape) and "12345" not in repr(shape)


def test_few_requests_name_nothing() -> None:
    watch = ReuseWatch()
    feed(watch, "ns", [chat(f"Request id: {uuid.uuid4()}.", "hi") for _ in range(5)])
    assert findings(watch, "ns") == {}
