"""API dialects: each translates one API's requests, answers, streams and errors to and from the one cache
pipeline. Adding a dialect touches neither the decision nor the stores: write a module, register it here."""

from __future__ import annotations

from service.dialects.base import Dialect
from service.dialects.chat import ChatDialect
from service.dialects.messages import MessagesDialect
from service.dialects.responses import ResponsesDialect

CHAT: Dialect = ChatDialect()
MESSAGES: Dialect = MessagesDialect()
RESPONSES: Dialect = ResponsesDialect()
DIALECTS: tuple[Dialect, ...] = (CHAT, MESSAGES, RESPONSES)

__all__ = ["CHAT", "DIALECTS", "MESSAGES", "RESPONSES", "Dialect"]
