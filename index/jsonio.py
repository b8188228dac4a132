"""JSON on the hot paths (exact-tier values, stored responses, served hits): orjson, several times faster than the
standard library, which still encodes what orjson refuses (integers beyond 64 bits), so any body that parsed
also serialises."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    """Parse JSON this module wrote (orjson reads an integer beyond 64 bits as a float; no chat body has one
    outside its strings)."""
    return orjson.loads(data)
