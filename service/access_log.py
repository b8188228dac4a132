"""Log hygiene: secrets in query strings (`?token=` of the labelling page, API keys) are redacted before
uvicorn writes the request line or httpx logs the forwarded URL, so no token reaches a log in clear."""

from __future__ import annotations

import logging
import re

# uvicorn's request lines, and httpx's line per upstream request (the forwarded URL keeps the caller's query).
URL_LOGGERS = ("uvicorn.access", "httpx")
REDACTED = "[redacted]"
# Query parameters whose values are secrets.
_SECRET_PARAM = re.compile(
    r"(?i)([?&;](?:token|access_token|admin_token|api[-_]?key|key|secret|password|auth|authorization)=)[^&;#\s]*")


def redact(text: str) -> str:
    return _SECRET_PARAM.sub(lambda m: m.group(1) + REDACTED, text)


def _redacted_arg(arg: object) -> object:
    """Strings and URL objects (httpx passes its `URL`) with secrets become redacted strings; others stay."""
    if isinstance(arg, int | float | bytes) or arg is None:
        return arg
    text = str(arg)
    clean = redact(text)
    return arg if clean == text else clean


class RedactSecrets(logging.Filter):
    """Rewrites the request line (uvicorn passes it as an argument) and the message itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted_arg(a) for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def install(logger_names: tuple[str, ...] = URL_LOGGERS) -> None:
    """Idempotent: add the filter to each logger once (uvicorn configures its logging before the app's
    lifespan runs, so installing there is after any `dictConfig` that could drop it)."""
    for name in logger_names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
