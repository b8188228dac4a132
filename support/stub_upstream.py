"""A real upstream on loopback for tests, speaking Chat Completions, Anthropic Messages and OpenAI Responses
(shapes in `support.stub_dialects`): counts calls, streams, fails on demand, and can answer per intent
(`answers`: prompt -> intent) after an artificial delay, the same text every call or (`vary`) the same content with
a different closing sentence each call, as a sampled model answers (`eval.answers`)."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from eval.answers import intent_answer, sampled_answer
from support.label_stub import LabelStub, is_label_call
from support.stub_dialects import CUT_AFTER, ChatApi, MessagesApi, ResponsesApi, StubApi


@dataclass
class StubState:
    # Configuration, kept across `reset()`: prompt -> intent, and seconds to wait before every chat answer.
    answers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # When set, every answer ends with the credentials the request carried (`[credential: ...]`), so a test
    # can tell whose answer a response is.
    tag_credentials: bool = False
    # When set, an intent's answer ends with a different closing sentence on each call (the content stays).
    vary: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)
    # "500", "429", "hang", "cut" (stream dropped mid-way), "no-done" (stream ends cleanly without its last
    # event: [DONE], message_stop, response.completed), "truncate" (a 200 whose JSON body is cut short, framing
    # intact), "short" (fewer bytes than Content-Length), "unfinished" (an answer that must not be stored)
    failures: deque[str] = field(default_factory=deque)
    chunk_delay: float = 0.0
    streams_finished: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    # The `usage` object each API path answers with instead of the shapes' own (non-stream answers, label calls
    # included): a test sets cached tokens this way (`CACHED_USAGE` has one per API); `reset()` clears it.
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)

    responses: ResponsesApi = field(default_factory=ResponsesApi)
    # Label-judge calls (DEJA_LABEL_MODEL) are answered by this, by intent (`answers`) unless a test sets a rule.
    labels: LabelStub = field(default_factory=LabelStub)

    def chat_calls(self) -> list[dict[str, Any]]:
        return self.calls_to("/v1/chat/completions")

    def calls_to(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [c for c in self.calls if c["path"] == path]


def credential_tag(headers: Mapping[str, str]) -> str:
    """The credentials an upstream would check (bearer token or other scheme, api-key, x-api-key), as a tag."""
    found = set()
    for name in ("authorization", "api-key", "x-api-key"):
        value = (headers.get(name) or "").strip()
        if name == "authorization" and value.lower().startswith("bearer"):
            value = value[6:].strip()
        if value:
            found.add(value)
    return f"[credential: {' + '.join(sorted(found)) or 'none'}]"


# Usage as each API reports it for a call whose prompt the provider's cache mostly served: 1,200 input tokens of
# which 1,000 cached, 300 output (Anthropic: 200 fresh, 1,000 read from the cache, 100 written to it).
CACHED_USAGE: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
                             "prompt_tokens_details": {"cached_tokens": 1000}},
    "/v1/responses": {"input_tokens": 1200, "output_tokens": 300, "total_tokens": 1500,
                      "input_tokens_details": {"cached_tokens": 1000},
                      "output_tokens_details": {"reasoning_tokens": 0}},
    "/v1/messages": {"input_tokens": 200, "output_tokens": 300, "cache_read_input_tokens": 1000,
                     "cache_creation_input_tokens": 100},
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: StubState

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self, body: bytes) -> int:
        with self.state.lock:
            self.state.calls.append({"path": self.path, "method": self.command, "body": body,
                                     "headers": {k.lower(): v for k, v in self.headers.items()}})
            return len(self.state.calls)

    def _json(self, status: int, payload: Any) -> None:
        usage = self.state.usage.get(self.path)
        if status == 200 and usage is not None and isinstance(payload, dict) and "usage" in payload:
            payload = {**payload, "usage": copy.deepcopy(usage)}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "stub-req")
        self.end_headers()
        self.wfile.write(data)

    def _api(self) -> StubApi | None:
        apis: tuple[StubApi, ...] = (ChatApi(), MessagesApi(), self.state.responses)
        return next((api for api in apis if api.path == self.path), None)

    def do_GET(self) -> None:
        self._record(b"")
        stored = self.state.responses.stored.get(self.path.removeprefix("/v1/responses/"))
        if self.path.startswith("/v1/models"):
            self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
        elif stored is not None:
            self._json(200, stored)
        else:
            self._json(404, {"error": {"message": "no such route", "type": "invalid_request_error"}})

    def _read_body(self) -> bytes:
        """The request body, `Content-Length` or chunked (Deja streams pass-through bodies chunked)."""
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline().strip():  # trailers, then the blank line
                    pass
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def _other_method(self) -> None:
        self._record(self._read_body())
        if self.command == "HEAD":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._json(404, {"error": {"message": "no such route", "type": "invalid_request_error"}})

    do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _other_method

    def do_DELETE(self) -> None:
        response_id = self.path.removeprefix("/v1/responses/")
        if response_id == self.path:
            self._other_method()
            return
        self._record(b"")
        if self.state.responses.stored.pop(response_id, None) is None:
            self._json(404, {"error": {"message": "no such response", "type": "invalid_request_error"}})
        else:
            self._json(200, {"id": response_id, "object": "response.deleted", "deleted": True})

    def do_POST(self) -> None:
        raw = self._read_body()
        n = self._record(raw)
        api = self._api()
        if self.path == "/v1/embeddings":
            self._json(200, {"object": "list", "data": [{"embedding": [0.1, 0.2], "index": 0}]})
            return
        if api is None:
            self._json(404, {"error": {"message": "no such route", "type": "invalid_request_error"}})
            return
        with self.state.lock:
            failure = self.state.failures.popleft() if self.state.failures else None
        if self.state.delay:
            time.sleep(self.state.delay)
        body = json.loads(raw)
        if isinstance(api, ChatApi) and is_label_call(body):
            self._json(200, api.answer(body, n, self.state.labels.content(body, self.state.answers), "ok"))
            return
        try:
            text = self._answer(api.last_text(body), n)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):  # a real API refuses it: so do we
            self._json(400, api.error(400, "stub: the request has no text to answer"))
            return
        outcome = failure or "ok"
        if failure in ("500", "429"):
            self._json(int(failure), api.error(int(failure), f"stub failure {failure}"))
        elif failure == "hang":
            time.sleep(3)
            self._json(200, api.answer(body, n, text, outcome))
        elif failure in ("truncate", "short"):
            self._truncated(api.answer(body, n, text, outcome), short=failure == "short")
        elif body.get("stream"):
            self._stream(api.events(body, n, text, outcome), failure)
        else:
            self._json(200, api.answer(body, n, text, outcome))

    def _truncated(self, payload: dict[str, Any], short: bool) -> None:
        data = json.dumps(payload).encode()
        cut = data[: len(data) // 2]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data) if short else len(cut)))
        self.end_headers()
        self.wfile.write(cut)
        self.wfile.flush()
        if short:
            self.connection.shutdown(2)
            self.close_connection = True

    def _answer(self, last: str, n: int) -> str:
        intent = self.state.answers.get(last)
        if intent is None:
            text = f"answer {n} to: {last}"
        else:
            text = sampled_answer(intent_answer(intent), n) if self.state.vary else intent_answer(intent)
        return f"{text} {credential_tag(self.headers)}" if self.state.tag_credentials else text

    def _stream(self, events: list[bytes], failure: str | None) -> None:
        usage = self.state.usage.get(self.path)
        if usage is not None:
            events = [_stream_usage(event, usage) for event in events]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, event in enumerate(events[:-1] if failure == "no-done" else events):
            if failure == "cut" and i == CUT_AFTER:
                self.wfile.flush()
                self.connection.shutdown(2)  # drop the connection mid-stream, no terminating chunk
                self.close_connection = True
                return
            self._chunk(event)
            if self.state.chunk_delay:
                time.sleep(self.state.chunk_delay)
        self._chunk(b"")
        with self.state.lock:
            self.state.streams_finished += 1

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _stream_usage(event: bytes, usage: Mapping[str, Any]) -> bytes:
    """A stream event with `usage` where the API reports it: Anthropic's input counts in `message_start` and its
    output count in `message_delta`, the whole usage in Responses' `response.completed` (a chat stream reports
    none here)."""
    head, marker, payload = event.partition(b"data: ")
    data = json.loads(payload)
    kind = data.get("type")
    if kind == "message_start":
        data["message"]["usage"] = {**{k: v for k, v in usage.items() if k != "output_tokens"}, "output_tokens": 1}
    elif kind == "message_delta":
        data["usage"] = {"output_tokens": usage.get("output_tokens", 0)}
    elif kind == "response.completed":
        data["response"]["usage"] = copy.deepcopy(dict(usage))
    else:
        return event
    return head + marker + json.dumps(data).encode() + b"\n\n"


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of 32 new connections would be refused (a 502 that
    # says nothing about Deja).
    request_queue_size = 256
    daemon_threads = True


class StubUpstream:
    """Start with `with StubUpstream() as stub:`; `stub.url` is the base URL to give Deja.

    `answers` maps prompts (the last message) to intents answered with `intent_answer`; other prompts get
    `answer_for`. `delay` seconds pass before every chat completion is answered. `vary`: intent answers change their
    closing sentence on every call.
    """

    def __init__(self, answers: Mapping[str, str] | None = None, delay: float = 0.0, vary: bool = False) -> None:
        self.state = StubState(answers=dict(answers or {}), delay=delay, vary=vary)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> StubUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self.state.lock:
            self.state.calls.clear()
            self.state.failures.clear()
            self.state.chunk_delay = 0.0
            self.state.streams_finished = 0
            self.state.labels = LabelStub()
            self.state.usage = {}


__all__ = ["CACHED_USAGE", "StubState", "StubUpstream", "credential_tag", "intent_answer"]
