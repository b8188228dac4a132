"""Hostile values that reach storage and logs: NUL in prompts on PostgreSQL, one bad decision-log row among
good ones, secrets in query strings and the access log (issue 12)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.services import GatewayProcess, PgDatabase
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pg_gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """PostgreSQL, and upkeep rare enough that decisions wait for the feedback route's flush in one batch."""
    data_dir = tmp_path_factory.mktemp("deja-nul")
    with PgDatabase() as db:
        env = base_env(stub, data_dir) | {"DEJA_DATABASE_URL": db.url, "DEJA_SYNC_INTERVAL_SECONDS": "600"}
        gateway = GatewayProcess(env, data_dir / "gateway.log").start()
        yield gateway
        gateway.stop()


def ask(gateway: GatewayProcess, key: str, prompt: str) -> httpx.Response:
    response = httpx.post(gateway.url + "/v1/chat/completions", timeout=30,
                          headers={"Authorization": f"Bearer {key}"},
                          json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]})
    assert response.status_code == 200, response.text
    return response


def feedback(gateway: GatewayProcess, key: str, request_id: str) -> httpx.Response:
    return httpx.post(gateway.url + "/v1/deja/feedback", timeout=30, headers={"Authorization": f"Bearer {key}"},
                      json={"request_id": request_id, "correct": True})


def test_nul_in_prompt_is_cached_on_postgres(pg_gateway: GatewayProcess) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    prompt = "Tell me a fact about\u0000 octopuses?"
    verdicts = [ask(pg_gateway, key, prompt).headers["x-deja-cache"] for _ in range(2)]
    assert verdicts == ["miss", "hit-exact"]


def test_nul_decision_does_not_drop_other_tenants_decisions(pg_gateway: GatewayProcess) -> None:
    tenant_x, tenant_y = f"sk-x-{uuid.uuid4().hex}", f"sk-y-{uuid.uuid4().hex}"
    ask(pg_gateway, tenant_x, "How do I reset my password?")
    ask(pg_gateway, tenant_y, "What is the best way to learn French?")
    # Both decisions wait in the same pending batch; X's carries a NUL, which PostgreSQL text refuses.
    x_id = ask(pg_gateway, tenant_x, "How can I reset my\u0000 password?").headers["x-deja-request-id"]
    y_id = ask(pg_gateway, tenant_y, "What's the best way to learn French?").headers["x-deja-request-id"]
    for key, request_id in ((tenant_y, y_id), (tenant_x, x_id)):
        response = feedback(pg_gateway, key, request_id)
        assert response.status_code == 200, response.text
        assert response.json()["recorded"] is True


def test_nul_in_feedback_is_an_unknown_id_not_a_500(pg_gateway: GatewayProcess) -> None:
    response = feedback(pg_gateway, f"sk-{uuid.uuid4().hex}", "abc\u0000def")
    assert response.status_code == 404, response.text


@pytest.fixture(scope="module")
def info_gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("deja-log")
    gateway = GatewayProcess(base_env(stub, data_dir) | {"DEJA_LOG_LEVEL": "info"}, data_dir / "gateway.log")
    yield gateway.start()
    gateway.stop()


def test_admin_token_and_query_secrets_never_reach_the_access_log(info_gateway: GatewayProcess) -> None:
    page = httpx.get(info_gateway.url + "/deja/label?token=admin-secret", timeout=30)
    assert page.status_code in (302, 303, 307)
    models = httpx.get(info_gateway.url + "/v1/models?api_key=sk-query-secret&limit=5", timeout=30,
                       headers={"Authorization": "Bearer sk-header"})
    assert models.status_code == 200
    info_gateway.stop()  # flush and close the log
    log = Path(info_gateway.log_path).read_text()
    assert "GET /deja/label?token=[redacted]" in log
    assert "api_key=[redacted]&limit=5" in log
    assert "admin-secret" not in log and "sk-query-secret" not in log
