"""The credential a request carries, and the namespace it maps to."""

from __future__ import annotations

import pytest

from index.request.keys import namespace_for
from service.credentials import CredentialPolicy, credential_of, credential_policy, namespace_of
from service.settings import Settings

SECRET = b"server-secret"


@pytest.mark.parametrize(("headers", "expected"), [
    pytest.param({"Authorization": "Bearer sk-1"}, "sk-1", id="bearer"),
    pytest.param({"authorization": "bearer   sk-1 "}, "sk-1", id="bearer-lowercase-spaces"),
    pytest.param({"Authorization": "Basic dXNlcjpwdw=="}, "Basic dXNlcjpwdw==", id="other-scheme-whole-value"),
    pytest.param({"api-key": "key-A"}, "key-A", id="azure-api-key"),
    pytest.param({"X-Api-Key": "key-C"}, "key-C", id="anthropic-x-api-key"),
    pytest.param({"Authorization": "Bearer "}, None, id="empty-bearer"),
    pytest.param({"Authorization": "Bearer"}, None, id="bare-bearer"),
    pytest.param({"api-key": "  "}, None, id="blank-api-key"),
    pytest.param({"content-type": "application/json"}, None, id="none"),
    pytest.param({"Authorization": "Bearer ", "x-api-key": "key-C"}, "key-C", id="empty-bearer-and-x-api-key"),
])
def test_credential_of_each_header_style(headers: dict[str, str], expected: str | None) -> None:
    assert credential_of(headers) == expected


def test_several_credentials_combine_so_none_alone_names_the_request() -> None:
    both = credential_of({"Authorization": "Bearer key-A", "x-api-key": "key-B"})
    assert both not in (None, "key-A", "key-B")
    assert both == credential_of({"x-api-key": "key-B", "authorization": "Bearer key-A"})


def test_extra_credential_header_counts_only_when_configured() -> None:
    headers = {"X-Tenant-Token": "t-1"}
    assert credential_of(headers) is None
    assert credential_of(headers, ["x-tenant-token"]) == "t-1"
    assert credential_of(headers, [" X-Tenant-Token "]) == "t-1"


def test_repeated_header_uses_the_first_value_like_the_forwarded_request() -> None:
    class Repeated(dict[str, str]):
        def items(self):  # type: ignore[override]
            return [("api-key", "first"), ("api-key", "second")]

    assert credential_of(Repeated()) == "first"


def test_bearer_and_api_key_with_the_same_secret_share_a_namespace_others_do_not() -> None:
    policy = CredentialPolicy()
    namespaces = {
        style: namespace_of(headers, policy, SECRET) for style, headers in {
            "bearer-A": {"Authorization": "Bearer key-A"}, "api-key-A": {"api-key": "key-A"},
            "api-key-B": {"api-key": "key-B"}, "x-api-key-C": {"x-api-key": "key-C"},
        }.items()}
    assert namespaces["bearer-A"] == namespaces["api-key-A"] == namespace_for("key-A", SECRET)
    assert len({namespaces["api-key-A"], namespaces["api-key-B"], namespaces["x-api-key-C"]}) == 3


def test_no_credential_has_no_namespace_unless_a_shared_one_is_configured() -> None:
    assert namespace_of({}, CredentialPolicy(), SECRET) is None
    assert namespace_of({"Authorization": "Bearer "}, CredentialPolicy(), SECRET) is None
    shared = namespace_of({}, CredentialPolicy(shared_namespace="public"), SECRET)
    assert shared is not None
    # The shared namespace is none of the credentials' namespaces, not even one named like it.
    assert shared not in (namespace_for("public", SECRET), namespace_for("", SECRET))


def test_settings_read_credential_headers_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEJA_CREDENTIAL_HEADERS", "X-Tenant-Token, x-other ")
    monkeypatch.setenv("DEJA_SHARED_NAMESPACE", "")
    settings = Settings()
    assert settings.credential_headers == ("x-tenant-token", "x-other")
    assert credential_policy(settings) == CredentialPolicy(("x-tenant-token", "x-other"), None)
