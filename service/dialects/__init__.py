"""API dialects: each translates one API's requests, answers, streams and errors to and from the one cache
pipeline. Adding a dialect touches neither the decision nor the stores: write a module, register it here."""

from __future__ import annotations

from collections.abc import Mapping

from service.dialects.base import Dialect
from service.dialects.chat import ChatDialect
from service.dialects.messages import MessagesDialect
from service.dialects.responses import ResponsesDialect

CHAT: Dialect = ChatDialect()
MESSAGES: Dialect = MessagesDialect()
RESPONSES: Dialect = ResponsesDialect()
DIALECTS: tuple[Dialect, ...] = (CHAT, MESSAGES, RESPONSES)



def dialect_named(name: str) -> Dialect:
    """The dialect a decision was logged with (chat for rows older than the API column)."""
    return next((d for d in DIALECTS if d.name == name), CHAT)


def speaks_anthropic(path: str, headers: Mapping[str, str]) -> bool:
    """Anthropic's routes (messages, token counting, batches), or any request from its SDK, which always sends
    `anthropic-version`: forwarded to the Anthropic upstream and answered in Anthropic's error shape."""
    return path.lstrip("/").startswith(MESSAGES.path.lstrip("/")) or "anthropic-version" in headers


def error_dialect(path: str, headers: Mapping[str, str]) -> Dialect:
    """Whose error shape a route answers in."""
    return MESSAGES if speaks_anthropic(path, headers) else CHAT


__all__ = ["CHAT", "DIALECTS", "MESSAGES", "RESPONSES", "Dialect", "dialect_named", "error_dialect",
           "speaks_anthropic"]
