"""Admin authentication in-process: bearer token, label-page sessions that never hold the token, CSRF for every
state-changing admin route, `WWW-Authenticate` on 401s, the optional metrics token and the admin-only schema."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from support.inprocess import ADMIN_TOKEN, InProcessGateway, inprocess_gateway

pytestmark = pytest.mark.asyncio

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CHALLENGE = 'Bearer realm="deja"'
SESSION_LIFETIME = 600.0


@pytest_asyncio.fixture
async def gw(tmp_path: Path) -> AsyncIterator[InProcessGateway]:
    async with inprocess_gateway(tmp_path, admin_session_seconds=SESSION_LIFETIME) as gateway:
        yield gateway


async def sign_in(gw: InProcessGateway) -> str:
    """Trade the token for a session (the client keeps the cookie); returns the page's CSRF token."""
    redirect = await gw.client.get("/deja/label", params={"token": ADMIN_TOKEN})
    assert redirect.status_code == 303
    page = await gw.client.get("/deja/label")
    assert page.status_code == 200
    found = re.search(r'<meta name="deja-csrf" content="([0-9a-f]{64})">', page.text)
    assert found is not None
    return found.group(1)


async def state_changing_admin_routes(gw: InProcessGateway) -> list[tuple[str, str]]:
    """(method, path) of every admin operation that is not a read, from the app's own schema: a new route is
    covered without touching this test."""
    schema = (await gw.client.get("/openapi.json", headers=ADMIN)).json()
    return [(method.upper(), path.replace("{entry_id}", "1")) for path, operations in schema["paths"].items()
            if path.startswith("/deja") for method in operations if method not in ("get", "head")]


async def test_a_401_challenges_for_a_bearer_token_in_openai_shape(gw: InProcessGateway) -> None:
    for method, path in [("GET", "/deja/stats"), ("POST", "/deja/flush"), ("GET", "/deja/label")]:
        response = await gw.client.request(method, path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == CHALLENGE
        assert response.json()["error"]["type"] == "authentication_error"


async def test_the_session_cookie_is_strict_httponly_and_not_the_token(gw: InProcessGateway) -> None:
    response = await gw.client.get("/deja/label", params={"token": ADMIN_TOKEN})
    cookie = response.headers["set-cookie"]
    value = cookie.split(";")[0].removeprefix("deja_admin=")
    assert ADMIN_TOKEN not in cookie and len(value.split(".")) == 3
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered and "path=/deja" in lowered
    assert f"max-age={int(SESSION_LIFETIME)}" in lowered


async def test_the_token_itself_is_no_session(gw: InProcessGateway) -> None:
    gw.client.cookies.set("deja_admin", ADMIN_TOKEN)
    assert (await gw.client.get("/deja/stats")).status_code == 401


async def test_a_session_reads_but_changes_nothing_without_its_csrf_token(gw: InProcessGateway) -> None:
    csrf = await sign_in(gw)
    entry = (await gw.chat("what is a b-tree")).headers["x-deja-entry"]
    assert (await gw.client.get("/deja/stats")).json()["entries"] == 1
    routes = await state_changing_admin_routes(gw)
    assert {("POST", "/deja/flush"), ("POST", "/deja/invalidate"), ("DELETE", "/deja/entries/1"),
            ("POST", "/deja/api/label")} <= set(routes)
    for method, path in routes:
        for headers in ({}, {"X-Deja-CSRF": "0" * 64}, {"X-Deja-CSRF": csrf.upper()}):
            response = await gw.client.request(method, path, headers=headers, json={"model": "gpt-4o-mini"})
            assert response.status_code == 403, (method, path, headers)
            assert response.json()["error"]["type"] == "permission_error"
    assert (await gw.client.get(f"/deja/entries/{entry}")).status_code == 200
    flushed = await gw.client.post("/deja/flush", headers={"X-Deja-CSRF": csrf})
    assert flushed.json() == {"deleted": 1}


async def test_a_csrf_token_works_only_with_its_own_session(gw: InProcessGateway) -> None:
    first = await sign_in(gw)
    await sign_in(gw)  # a second sign-in replaces the cookie with a new session
    response = await gw.client.post("/deja/flush", headers={"X-Deja-CSRF": first})
    assert response.status_code == 403


async def test_a_session_expires(gw: InProcessGateway) -> None:
    await sign_in(gw)
    gw.clock.now += SESSION_LIFETIME + 1
    response = await gw.client.get("/deja/stats")
    assert response.status_code == 401 and response.headers["www-authenticate"] == CHALLENGE


async def test_a_tampered_session_is_refused(gw: InProcessGateway) -> None:
    await sign_in(gw)
    session_id, expiry, mac = gw.client.cookies["deja_admin"].split(".")
    gw.client.cookies.set("deja_admin", f"{session_id}.{int(expiry) + 10**6}.{mac}", path="/deja")
    assert (await gw.client.get("/deja/stats")).status_code == 401


async def test_a_session_of_another_admin_token_is_refused(gw: InProcessGateway, tmp_path: Path) -> None:
    await sign_in(gw)
    session = gw.client.cookies["deja_admin"]
    async with inprocess_gateway(tmp_path / "other", admin_token="rotated-token") as other:
        other.client.cookies.set("deja_admin", session)
        assert (await other.client.get("/deja/stats")).status_code == 401


async def test_the_bearer_token_needs_no_csrf_token(gw: InProcessGateway) -> None:
    assert (await gw.client.post("/deja/flush", headers=ADMIN)).json() == {"deleted": 0}


async def test_a_wrong_bearer_beats_a_valid_session(gw: InProcessGateway) -> None:
    await sign_in(gw)
    response = await gw.client.get("/deja/stats", headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401


async def test_metrics_are_open_without_a_metrics_token(gw: InProcessGateway) -> None:
    assert (await gw.client.get("/metrics")).status_code == 200


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 401),
    ({"Authorization": "Bearer wrong"}, 401),
    ({"Authorization": "Bearer scrape-secret"}, 200),
    (ADMIN, 200),
], ids=["none", "wrong", "metrics-token", "admin-token"])
async def test_a_metrics_token_protects_metrics(tmp_path: Path, headers: dict[str, str], status: int) -> None:
    async with inprocess_gateway(tmp_path, metrics_token="scrape-secret") as gw:
        response = await gw.client.get("/metrics", headers=headers)
        assert response.status_code == status
        if status == 401:
            assert response.headers["www-authenticate"] == CHALLENGE
        else:
            assert "deja_requests" in response.text


async def test_the_openapi_schema_is_for_admins_only(gw: InProcessGateway) -> None:
    assert (await gw.client.get("/openapi.json")).status_code == 401
    schema = (await gw.client.get("/openapi.json", headers=ADMIN)).json()
    assert "/deja/flush" in schema["paths"] and "/openapi.json" not in schema["paths"]


async def test_deja_serves_no_docs_pages(gw: InProcessGateway) -> None:
    # /docs is not Deja's: like any unknown route outside /deja it is the upstream's, passed through uncached.
    response = await gw.client.get("/docs", headers={"Authorization": "Bearer sk-test"})
    assert response.headers["x-deja-cache"] == "bypass"
    assert "swagger" not in response.text.lower()
