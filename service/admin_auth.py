"""Who may act as admin: the admin token in an `Authorization: Bearer` header, or a label-page session.

A session is a cookie that never holds the token: `<id>.<expiry>.<HMAC(token, id.expiry)>`, HttpOnly and
SameSite=Strict. SameSite does not stop a page on another port of the same host (same site, other origin), so a
session alone only reads; anything that changes state also needs the CSRF token bound to it
(`X-Deja-CSRF: HMAC(token, "csrf" + session)`), which the label page receives inside its HTML and another origin
can neither read nor compute. Rotating the admin token ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import Request

from index.settings import Settings
from service.errors import Forbidden, Unauthorized
from service.requests import bearer_token

SESSION_COOKIE = "deja_admin"
CSRF_HEADER = "X-Deja-CSRF"
# Methods that only read; every other method on an admin route changes state and needs the CSRF token.
SAFE_METHODS = frozenset({"GET", "HEAD"})


def _key(settings: Settings) -> bytes:
    """The admin token as the session key (empty: no admin configured, nothing verifies)."""
    return settings.admin_token.get_secret_value().encode() if settings.admin_token else b""


def _mac(key: bytes, purpose: str, value: str) -> str:
    return hmac.new(key, f"{purpose}\x00{value}".encode(), hashlib.sha256).hexdigest()


def is_admin_token(settings: Settings, given: str) -> bool:
    """Constant-time check of `given` against the configured admin token (none configured: nobody is admin)."""
    expected = _key(settings)
    return bool(expected) and hmac.compare_digest(given.encode(), expected)


def new_session(settings: Settings, now: float) -> str:
    """A fresh session value for the cookie, valid for `admin_session_seconds` from `now`."""
    value = f"{secrets.token_urlsafe(24)}.{int(now + settings.admin_session_seconds)}"
    return f"{value}.{_mac(_key(settings), 'session', value)}"


def session_is_valid(settings: Settings, session: str, now: float) -> bool:
    key = _key(settings)
    value, _, mac = session.rpartition(".")
    _, _, expiry = value.rpartition(".")
    if not key or not expiry.isdigit() or not hmac.compare_digest(mac.encode(), _mac(key, "session", value).encode()):
        return False
    return now < int(expiry)


def csrf_token(settings: Settings, session: str) -> str:
    """The CSRF token of one session (the label page sends it back in `X-Deja-CSRF`)."""
    return _mac(_key(settings), "csrf", session)


def check_admin(request: Request, settings: Settings, now: float) -> None:
    """Raise `Unauthorized` unless the request carries the admin token or a live session, and `Forbidden` when
    a session (not the token) asks to change state without its CSRF token."""
    given = bearer_token(request.headers.get("authorization"))
    if given is not None:
        if not is_admin_token(settings, given):
            raise Unauthorized("A valid admin bearer token is required.")
        return
    session = request.cookies.get(SESSION_COOKIE) or ""
    if not session_is_valid(settings, session, now):
        raise Unauthorized("A valid admin bearer token is required.")
    if request.method in SAFE_METHODS:
        return
    sent = request.headers.get(CSRF_HEADER) or ""
    if not hmac.compare_digest(sent.encode(), csrf_token(settings, session).encode()):
        raise Forbidden(f"A session needs its CSRF token ({CSRF_HEADER}) to change anything; "
                        "scripts use the bearer token.")


def check_metrics(request: Request, settings: Settings) -> None:
    """`/metrics` is open unless `DEJA_METRICS_TOKEN` is set; then it needs that token (or the admin token)."""
    if settings.metrics_token is None:
        return
    given = (bearer_token(request.headers.get("authorization")) or "").encode()
    expected = settings.metrics_token.get_secret_value().encode()
    if not (hmac.compare_digest(given, expected) or is_admin_token(settings, given.decode())):
        raise Unauthorized("A valid metrics bearer token is required.")
