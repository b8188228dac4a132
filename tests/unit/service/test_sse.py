from __future__ import annotations

import json

from service.sse import StreamAccumulator, replay


def events(*payloads: object) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_accumulator_rebuilds_content_across_split_chunks() -> None:
    raw = events(chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}), chunk({"content": "lo"}),
                 chunk({}, "stop"))
    acc = StreamAccumulator()
    for i in range(0, len(raw), 7):  # bytes arrive in arbitrary pieces
        acc.feed(raw[i:i + 7])
    assert acc.complete
    message = acc.completion()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Hello"}


def test_accumulator_joins_tool_call_arguments() -> None:
    raw = events(chunk({"tool_calls": [{"index": 0, "id": "t1", "function": {"name": "get", "arguments": "{\"a\""}}]}),
                 chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}), chunk({}, "tool_calls"))
    acc = StreamAccumulator()
    acc.feed(raw)
    call = acc.completion()["choices"][0]["message"]["tool_calls"][0]
    assert call["id"] == "t1" and call["function"] == {"name": "get", "arguments": "{\"a\": 1}"}


def test_stream_without_done_or_with_error_is_incomplete() -> None:
    acc = StreamAccumulator()
    acc.feed(b"data: " + json.dumps(chunk({"content": "x"}, "stop")).encode() + b"\n\n")
    assert not acc.complete
    acc2 = StreamAccumulator()
    acc2.feed(events({"error": {"message": "boom"}}))
    assert not acc2.complete


def test_replay_roundtrips_through_the_accumulator() -> None:
    completion = {"id": "x", "object": "chat.completion", "created": 5, "model": "m",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"},
                               "finish_reason": "stop"}], "usage": {"total_tokens": 3}}
    stream = b"".join(replay(completion, include_usage=True))
    assert stream.endswith(b"data: [DONE]\n\n")
    acc = StreamAccumulator()
    acc.feed(stream)
    rebuilt = acc.completion()
    assert acc.complete and rebuilt["choices"][0]["message"]["content"] == "Hi there"
    assert rebuilt["usage"] == {"total_tokens": 3}
