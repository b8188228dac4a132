"""Strict JSON decoding of request bodies."""

from __future__ import annotations

import pytest

from service.errors import BadRequest
from service.json_input import MAX_JSON_DEPTH, decode_json, json_depth


@pytest.mark.parametrize(("raw", "depth"), [
    pytest.param(b'{"a": 1}', 1, id="flat"),
    pytest.param(b'{"a": [[{"b": []}]]}', 5, id="nested"),
    pytest.param(b'{"a": "[[[[[[{{{{"}', 1, id="brackets-in-string"),
    pytest.param(b'{"a": "\\"[[["}', 1, id="escaped-quote-in-string"),
    pytest.param(b"42", 0, id="scalar"),
])
def test_json_depth_counts_only_structure(raw: bytes, depth: int) -> None:
    assert json_depth(raw) == depth


def test_deep_nesting_is_refused_before_parsing() -> None:
    with pytest.raises(BadRequest, match="nested"):
        decode_json(b"[" * 100_000 + b"]" * 100_000)
    assert decode_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None


def test_many_shallow_brackets_are_fine() -> None:
    raw = b'{"messages": [' + b",".join([b'{"role": "user", "content": "[x]"}'] * 500) + b"]}"
    assert len(decode_json(raw)["messages"]) == 500


@pytest.mark.parametrize("raw", [
    pytest.param(b'"\\ud800"', id="escaped-high"),
    pytest.param(b'"x\\udc00"', id="escaped-low"),
    pytest.param(b'{"\\ud800": 1}', id="escaped-in-key"),
    pytest.param(b'"\xed\xa0\x80"', id="raw-surrogate-bytes"),
    pytest.param(b'"\xff"', id="invalid-utf8"),
])
def test_lone_surrogates_and_invalid_utf8_are_refused(raw: bytes) -> None:
    with pytest.raises(BadRequest):
        decode_json(raw)


def test_surrogate_pair_and_escaped_backslash_are_text() -> None:
    assert decode_json(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert decode_json(b'"\\\\ud800"') == "\\ud800"
