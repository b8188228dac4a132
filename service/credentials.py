"""Which credential the upstream will see for a request, and the cache namespace it maps to.

Every API dialect calls `namespace_of`: answers are only ever shared between requests that carry the same
credential. A request with no credential has no namespace (it is not cached) unless the operator opted in to
one shared namespace for such requests (`DEJA_SHARED_NAMESPACE`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from index.request.keys import namespace_for
from index.settings import Settings

# Headers an upstream authenticates with: OpenAI (`Authorization: Bearer`, any other scheme too), Azure OpenAI
# (`api-key`), Anthropic (`x-api-key`). Deployments add more with `DEJA_CREDENTIAL_HEADERS`.
CREDENTIAL_HEADERS = ("authorization", "api-key", "x-api-key")

# Joins several credentials into one; header values cannot contain NUL, so no credential collides with a join.
_SEPARATOR = "\x00"
_SHARED_PREFIX = "\x00shared-namespace:"


@dataclass(frozen=True)
class CredentialPolicy:
    """Where credentials are looked for, and what happens to requests without one."""

    extra_headers: tuple[str, ...] = ()
    # Name of the one namespace that requests without a credential share; None = such requests are not cached.
    shared_namespace: str | None = None

    @property
    def headers(self) -> tuple[str, ...]:
        extra = tuple(h.strip().lower() for h in self.extra_headers if h.strip())
        return CREDENTIAL_HEADERS + tuple(h for h in extra if h not in CREDENTIAL_HEADERS)


def credential_policy(settings: Settings) -> CredentialPolicy:
    return CredentialPolicy(settings.credential_headers, settings.shared_namespace)


def _header_value(name: str, value: str) -> str | None:
    """The secret part of one header: the token of `Bearer <token>`, the whole value of any other scheme."""
    value = value.strip()
    if name == "authorization":
        scheme, _, token = value.partition(" ")
        if scheme.lower() == "bearer":
            value = token.strip()
    return value or None


def _first_values(headers: Mapping[str, str]) -> dict[str, str]:
    """Lower-cased names, first value of a repeated header (the one the upstream client forwards)."""
    first: dict[str, str] = {}
    for name, value in headers.items():
        first.setdefault(name.lower(), value)
    return first


def credential_of(headers: Mapping[str, str], extra_headers: Iterable[str] = ()) -> str | None:
    """The credential the upstream will see, or None when the request carries none.

    `Authorization: Bearer X` and `api-key: X` give the same credential `X` (the same secret is the same
    caller). Several credential headers at once give a combination of all of them, so a request is never
    filed under a credential the upstream did not check alone. `Bearer ` with nothing after it is none.
    """
    present = _first_values(headers)
    names = CredentialPolicy(tuple(extra_headers)).headers
    values = sorted({v for name in names if name in present
                     and (v := _header_value(name, present[name])) is not None})
    if not values:
        return None
    return _SEPARATOR.join(values)


def namespace_of(headers: Mapping[str, str], policy: CredentialPolicy, secret: bytes) -> str | None:
    """The cache namespace of a request (HMAC of its credential), or None: do not cache it."""
    credential = credential_of(headers, policy.extra_headers)
    if credential is not None:
        return namespace_for(credential, secret)
    if policy.shared_namespace:
        return namespace_for(_SHARED_PREFIX + policy.shared_namespace, secret)
    return None


# The `X-Deja-Policy` reason of a request that is not cached because it carries no credential.
NO_CREDENTIAL = "no credential (Authorization, api-key, x-api-key or DEJA_CREDENTIAL_HEADERS)"
