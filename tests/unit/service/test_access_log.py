"""Secrets in query strings never reach a log line."""

from __future__ import annotations

import logging

import httpx
import pytest

from service.access_log import RedactSecrets, redact


@pytest.mark.parametrize(("line", "expected"), [
    ("GET /deja/label?token=abc HTTP/1.1", "GET /deja/label?token=[redacted] HTTP/1.1"),
    ("/x?limit=5&api_key=sk-1&b=2", "/x?limit=5&api_key=[redacted]&b=2"),
    ("/x?API-KEY=sk-1", "/x?API-KEY=[redacted]"),
    ("/x?tokens=1&mytoken=2", "/x?tokens=1&mytoken=2"),
    ("/v1/models", "/v1/models"),
])
def test_redact(line: str, expected: str) -> None:
    assert redact(line) == expected


def test_filter_redacts_uvicorn_and_httpx_arguments() -> None:
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s" %d %s',
                               ("127.0.0.1", "GET", "/deja/label?token=s3cret", 303,
                                httpx.URL("http://up/v1/x?key=s3cret")), None)
    assert RedactSecrets().filter(record)
    assert "s3cret" not in record.getMessage()
    assert "token=[redacted]" in record.getMessage() and "303" in record.getMessage()
