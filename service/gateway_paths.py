"""Upstream paths Deja treats specially."""

CHAT_PATH = "/v1/chat/completions"
