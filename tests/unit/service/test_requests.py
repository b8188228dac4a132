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


@pytest.mark.parametrize("value", ["inf", "1e999", "nan", "-1", "1.5", "0x10", "", "١"])
def test_max_age_must_be_whole_seconds(value: str) -> None:
    with pytest.raises(BadRequest) as raised:
        parse_cache_control(f"max-age={value}")
    assert raised.value.param == "Cache-Control"


def test_huge_max_age_is_capped_not_an_error() -> None:
    assert parse_cache_control("max-age=" + "9" * 5000).max_age == 2**31
    assert parse_cache_control("max-age=0").max_age == 0


def test_bearer_token() -> None:
    assert bearer_token("Bearer sk-1") == "sk-1"
    assert bearer_token(None) is None
