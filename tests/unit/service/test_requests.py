from __future__ import annotations

import pytest

from service.errors import BadRequest
from service.requests import bearer_token, parse_cache_control, parse_chat_body


def test_valid_body_is_returned_unchanged() -> None:
    raw = b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "seed": 3}'
    assert parse_chat_body(raw)["seed"] == 3


@pytest.mark.parametrize("raw", [b"", b"{", b"null", b'{"model": "m"}', b'{"model": "", "messages": []}'])
def test_invalid_bodies_raise_bad_request(raw: bytes) -> None:
    with pytest.raises(BadRequest):
        parse_chat_body(raw)


def test_cache_control_directives() -> None:
    assert parse_cache_control("no-cache").lookup is False
    assert parse_cache_control("No-Store, max-age=60").store is False
    assert parse_cache_control("max-age=60").max_age == 60
    assert parse_cache_control(None).lookup and parse_cache_control(None).store
    with pytest.raises(BadRequest):
        parse_cache_control("max-age=soon")


def test_bearer_token() -> None:
    assert bearer_token("Bearer sk-1") == "sk-1"
    assert bearer_token(None) is None
