"""The upstream client: one shared httpx.AsyncClient with explicit timeouts; header hygiene both ways."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping

import httpx

from service.errors import BadRequest, UpstreamError, UpstreamTimeout

# Never forwarded in either direction: hop-by-hop and framing headers, which each hop sets itself.
_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "content-encoding", "accept-encoding",
})


# Methods a request of which may be sent twice when the first try failed before any response byte.
_REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS"})


def _wire(text: str) -> bytes:
    """A header as it came over the wire: the server decoded its bytes as Latin-1, so this restores them
    exactly (a non-ASCII byte is forwarded as sent, never re-encoded or refused)."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def request_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """Caller headers to send upstream (auth included), minus hop-by-hop and Deja's own controls."""
    return [(_wire(k), _wire(v)) for k, v in headers.items()
            if k.lower() not in _HOP and not k.lower().startswith("x-deja-")]


def response_headers(headers: httpx.Headers) -> dict[str, str]:
    """Upstream headers for the caller, decoded as Latin-1 so the bytes reach the caller unchanged."""
    decoded = ((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.raw)
    return {k: v for k, v in decoded if k.lower() not in _HOP and k.lower() not in ("date", "server")}


class Upstream:
    """Forwards requests to the OpenAI-compatible upstream. Transport errors become `UpstreamError`."""

    def __init__(self, base_url: str, timeout: httpx.Timeout, limits: httpx.Limits,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout, limits=limits,
                                         transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def send(self, method: str, path: str, headers: Mapping[str, str],
                   content: bytes | AsyncIterator[bytes], params: str = "") -> httpx.Response:
        """Open a streamed response; the caller must `aclose()` it."""
        url = path + (f"?{params}" if params else "")
        try:
            request = self._client.build_request(method, url, headers=request_headers(headers), content=content)
        except httpx.InvalidURL as exc:
            raise BadRequest(f"The request path or query cannot be forwarded: {exc}") from exc
        try:
            try:
                return await self._client.send(request, stream=True)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                # A pooled keep-alive connection the upstream had closed fails before any response byte: a request
                # that is safe to send twice (no body, an idempotent method) goes once more on a fresh connection.
                if method.upper() not in _REPLAYABLE or not isinstance(content, bytes):
                    raise
                request = self._client.build_request(method, url, headers=request_headers(headers), content=content)
                return await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(f"upstream timed out: {type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream unreachable: {type(exc).__name__}: {exc}") from exc

    async def read(self, response: httpx.Response) -> bytes:
        """The whole body of a response from `send`, which it closes."""
        try:
            return await response.aread()
        except httpx.HTTPError as exc:
            raise _mid_response(exc) from exc
        finally:
            await response.aclose()

    async def stream(self, response: httpx.Response) -> AsyncGenerator[bytes, None]:
        """The body of a response from `send`, chunk by chunk as it arrives; closes it when done or abandoned.
        A transport failure mid-body raises `UpstreamError` (`UpstreamTimeout`), never an httpx error."""
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        except httpx.HTTPError as exc:
            raise _mid_response(exc) from exc
        finally:
            await response.aclose()


def _mid_response(exc: httpx.HTTPError) -> UpstreamError:
    if isinstance(exc, httpx.TimeoutException):
        return UpstreamTimeout(f"upstream timed out: {type(exc).__name__}")
    return UpstreamError(f"upstream failed mid-response: {type(exc).__name__}")
