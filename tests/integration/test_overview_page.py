"""The operator overview end to end: a real gateway process, traffic through the stub upstream in two APIs and two
namespaces, two wrong feedback labels the upkeep's budget pass counts, and the page rendered in a real headless
Chromium."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By

from support.browser import chromium
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer admin-secret"}
HOSTILE = "<script>alert('deja')</script>"


@pytest.fixture(scope="module")
def gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("deja-overview")
    # The budget's pass every half second: the page shows what the last one stored.
    env = base_env(stub, data_dir) | {"DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5"}
    process = GatewayProcess(env, data_dir / "gateway.log").start()
    yield process
    process.stop()


def chat(gateway: GatewayProcess, api_key: str, content: str, model: str = "gpt-4o-mini") -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    response = httpx.post(gateway.url + "/v1/chat/completions", json=body, timeout=20,
                          headers={"Authorization": f"Bearer {api_key}"})
    response.raise_for_status()
    return response


def messages(gateway: GatewayProcess, api_key: str, content: str) -> httpx.Response:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": content}]}
    response = httpx.post(gateway.url + "/v1/messages", json=body, timeout=20,
                          headers={"x-api-key": api_key, "anthropic-version": "2023-06-01"})
    response.raise_for_status()
    return response


def test_overview_shows_traffic_budget_and_thresholds_in_chromium(gateway: GatewayProcess, tmp_path: Path) -> None:
    tenant, other = f"sk-a-{uuid.uuid4().hex}", f"sk-b-{uuid.uuid4().hex}"
    chat(gateway, tenant, "How do I reset my password?")
    assert chat(gateway, tenant, "How do I reset my password?").headers["x-deja-cache"] == "hit-exact"
    hit = chat(gateway, tenant, "How can I reset my password?")
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    messages(gateway, other, "How do I delete my account?")
    assert messages(gateway, other, "How can I delete my account?").headers["x-deja-cache"] == "hit-semantic"
    chat(gateway, tenant, "How do I rename a file?")
    second = chat(gateway, tenant, "How can I rename a file?")
    assert second.headers["x-deja-cache"] == "hit-semantic"
    # Two wrong labels on served hits, counted by the next budget pass.
    for served in (hit, second):
        httpx.post(gateway.url + "/v1/deja/feedback", timeout=10, headers={"Authorization": f"Bearer {tenant}"},
                   json={"request_id": served.headers["x-deja-request-id"], "correct": False}).raise_for_status()
    assert wait_for(lambda: any(row["wrong"] == 2 for row in httpx.get(
        gateway.url + "/deja/budget", headers=ADMIN, timeout=10).json()["namespaces"]))
    # The learner's statistic is drawn per namespace and kind with threshold evidence (a cosine hit or a near
    # miss); hits served on their content alone give none.
    learned = httpx.get(gateway.url + "/deja/budget", headers=ADMIN, timeout=10).json()["thresholds"]

    with chromium() as driver:
        driver.get(gateway.url + "/deja/admin/overview?token=admin-secret")
        assert driver.current_url == gateway.url + "/deja/admin/overview"  # the token left the URL
        traffic = {row[0]: row for row in _rows(driver, "traffic")}
        assert traffic["chat"][1] == "5" and traffic["chat"][2:4] == ["20.0%", "40.0%"]
        assert traffic["messages"][1] == "2" and traffic["messages"][3] == "50.0%"
        savings = {(row[1], row[2]): row for row in _rows(driver, "savings")}
        # three hits of the stub's 10 input and 5 output tokens each, at gpt-4o-mini's rates
        assert savings[("chat", "gpt-4o-mini")][3:8] == ["3", "30", "0", "0", "15"]
        assert savings[("chat", "gpt-4o-mini")][8] == f"${3 * (10 * 0.15 + 5 * 0.60) / 1e6:,.6f}"
        budget = {(row[1], row[5]): row for row in _rows(driver, "namespaces")}
        wrong = budget[("chat", "2")]
        assert wrong[3:6] == ["2", "2", "2"]  # served, audited, wrong
        for chart in ("chart-traffic", "chart-thresholds", "chart-timeline", *(["chart-budget"] if learned else [])):
            assert driver.find_element(By.ID, chart).size["height"] > 0
        lines = driver.find_elements(By.CSS_SELECTOR, "#chart-thresholds polyline")
        assert len(lines) == 2  # one line per namespace
        assert driver.find_element(By.ID, "budget-value").text == "2.0%"
        screenshot = tmp_path / "overview.png"
        assert driver.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 0

    evidence = httpx.get(gateway.url + "/deja/budget/evidence", headers=ADMIN, timeout=10).json()
    assert set(evidence) == {"differences", "threshold_moves"}


def _rows(driver: object, table: str) -> list[list[str]]:
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tr")  # type: ignore[attr-defined]
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in rows[1:]]


def test_a_hostile_model_name_is_escaped_on_the_page(gateway: GatewayProcess) -> None:
    api_key = f"sk-h-{uuid.uuid4().hex}"
    chat(gateway, api_key, HOSTILE, model=HOSTILE)
    assert chat(gateway, api_key, HOSTILE, model=HOSTILE).headers["x-deja-cache"] == "hit-exact"
    page = httpx.get(gateway.url + "/deja/admin/overview", headers=ADMIN, timeout=10)
    assert page.status_code == 200
    assert "<script" not in page.text
    assert "&lt;script&gt;alert(&#x27;deja&#x27;)&lt;/script&gt;" in page.text
    assert "script-src" not in page.headers["content-security-policy"]  # the page runs no script at all


@pytest.mark.parametrize("request_kwargs", [
    {}, {"params": {"token": "wrong"}}, {"cookies": {"deja_admin": "admin-secret"}},
    {"headers": {"Authorization": "Bearer wrong"}},
], ids=["no-token", "wrong-token-in-url", "token-as-cookie", "wrong-bearer"])
def test_overview_without_a_valid_token_is_a_401(gateway: GatewayProcess, request_kwargs: dict[str, object]) -> None:
    response = httpx.get(gateway.url + "/deja/admin/overview", **request_kwargs)  # type: ignore[arg-type]
    assert response.status_code == 401
    assert "set-cookie" not in response.headers
