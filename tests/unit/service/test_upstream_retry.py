"""A pooled connection the upstream had closed fails before any response byte: a read is sent once more, a write
(or anything with a streamed body) is not, and two failures in a row are the upstream's error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from service.errors import UpstreamError
from service.upstream import Upstream


def _upstream(failures: int) -> tuple[Upstream, list[str]]:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) <= failures:
            raise httpx.ReadError("connection closed by the peer")
        return httpx.Response(200, json={"ok": True})

    upstream = Upstream("http://upstream.test", httpx.Timeout(5.0), httpx.Limits(), httpx.MockTransport(handle))
    return upstream, calls


async def _send(upstream: Upstream, method: str, content: bytes | AsyncIterator[bytes]) -> int:
    response = await upstream.send(method, "/v1/models", {}, content)
    await response.aclose()
    return response.status_code


def test_a_read_is_sent_once_more_after_a_stale_connection() -> None:
    upstream, calls = _upstream(failures=1)
    assert asyncio.run(_send(upstream, "GET", b"")) == 200
    assert calls == ["GET", "GET"]


@pytest.mark.parametrize(("method", "failures"), [("POST", 1), ("GET", 2)], ids=["a-write", "twice"])
def test_a_write_or_a_second_failure_is_the_upstreams_error(method: str, failures: int) -> None:
    upstream, calls = _upstream(failures)
    with pytest.raises(UpstreamError):
        asyncio.run(_send(upstream, method, b"{}"))
    assert calls == ([method] * 2 if method == "GET" else [method])


def test_a_streamed_body_is_never_sent_twice() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"{}"

    upstream, calls = _upstream(failures=1)
    with pytest.raises(UpstreamError):
        asyncio.run(_send(upstream, "GET", body()))
    assert calls == ["GET"]
