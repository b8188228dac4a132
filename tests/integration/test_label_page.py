"""The labeling page end to end: a real gateway process, decisions made by real traffic through the stub upstream,
and a real headless Chromium that labels them with the keyboard and the mouse."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from support.browser import chromium, save_screenshot
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer admin-secret"}


@pytest.fixture(scope="module")
def gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A SQLite gateway of this module's own, so the pending list holds only the decisions its tests make."""
    data_dir = tmp_path_factory.mktemp("deja-label")
    # The budget's pass every half second: the page shows what the last one stored.
    env = base_env(stub, data_dir) | {"DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5"}
    process = GatewayProcess(env, data_dir / "gateway.log").start()
    yield process
    process.stop()


def ask(gateway: GatewayProcess, api_key: str, content: str) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}
    response = httpx.post(gateway.url + "/v1/chat/completions", json=body, timeout=20,
                          headers={"Authorization": f"Bearer {api_key}"})
    response.raise_for_status()
    return response


def pending(gateway: GatewayProcess) -> dict[str, Any]:
    response = httpx.get(gateway.url + "/deja/api/pending", headers=ADMIN, timeout=10)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def human_labels(data_dir: Path) -> dict[str, bool]:
    """{prompt: correct} of every human label, read straight from the gateway's SQLite file."""
    with sqlite3.connect(data_dir / "deja.db") as conn:
        rows = conn.execute("SELECT d.prompt, l.correct FROM deja_labels l JOIN deja_decisions d "
                            "ON d.request_id = l.request_id WHERE l.source = 'human'").fetchall()
    return {prompt: bool(correct) for prompt, correct in rows}


def progress_is(text: str) -> Any:
    return lambda driver: driver.find_element(By.ID, "progress").text == text


def test_admin_labels_a_vetoed_near_miss_and_a_semantic_hit_in_the_browser(gateway: GatewayProcess) -> None:
    api_key = f"sk-test-{uuid.uuid4().hex}"
    ask(gateway, api_key, "How do I reset my password?")
    hit = ask(gateway, api_key, "How can I reset my password?")
    ask(gateway, api_key, "Is the API rate limited?")
    near_miss = ask(gateway, api_key, "Is the API not rate limited?")
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    assert near_miss.headers["x-deja-cache"] == "miss" and near_miss.headers["x-deja-veto"]

    before = pending(gateway)
    assert [d["prompt"] for d in before["items"]] == ["Is the API not rate limited?", "How can I reset my password?"]
    assert before["items"][1]["cached_answer"] == hit.json()["choices"][0]["message"]["content"]
    assert before["progress"] == {"labelled": 0, "pending": 2, "pending_capped": False, "total": 2}

    with chromium() as driver:
        driver.get(gateway.url + "/deja/label?token=admin-secret")
        assert driver.current_url == gateway.url + "/deja/label"  # the token left the URL
        wait = WebDriverWait(driver, 30)  # generous: CI machines may be busy
        wait.until(progress_is("0 labelled · 2 pending"))
        prompt, candidate = driver.find_element(By.ID, "prompt"), driver.find_element(By.ID, "candidate-prompt")
        assert (prompt.text, candidate.text) == ("Is the API not rate limited?", "Is the API rate limited?")
        assert prompt.location["y"] == candidate.location["y"]  # side by side, the request on the left
        assert prompt.location["x"] + prompt.size["width"] <= candidate.location["x"]
        assert driver.find_element(By.ID, "vetoed").text == "vetoed by polarity"  # why, at the defaults

        driver.find_element(By.TAG_NAME, "body").send_keys("d")
        wait.until(progress_is("1 labelled · 1 pending"))
        assert driver.find_element(By.ID, "prompt").text == "How can I reset my password?"
        assert driver.find_element(By.ID, "candidate-prompt").text == "How do I reset my password?"
        assert driver.find_element(By.ID, "cached-answer").text.endswith("to: How do I reset my password?")
        save_screenshot(driver, "label-page.png")

        driver.find_element(By.ID, "btn-same").click()
        wait.until(progress_is("2 labelled · 0 pending"))
        assert driver.find_element(By.ID, "empty").is_displayed()
        assert not driver.find_element(By.ID, "decision").is_displayed()
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)  # nothing left: a no-op

    assert human_labels(gateway.data_dir) == {"Is the API not rate limited?": False,
                                              "How can I reset my password?": True}
    after = pending(gateway)
    assert after["items"] == []
    assert after["progress"] == {"labelled": 2, "pending": 0, "pending_capped": False, "total": 2}


def test_token_in_the_url_becomes_a_strict_httponly_session_cookie(gateway: GatewayProcess) -> None:
    response = httpx.get(gateway.url + "/deja/label", params={"token": "admin-secret"})
    assert response.status_code == 303 and response.headers["location"] == "/deja/label"
    cookie = response.headers["set-cookie"].lower()
    assert cookie.startswith("deja_admin=") and "admin-secret" not in cookie  # a derived session, not the token
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/deja" in cookie
    page = httpx.get(gateway.url + "/deja/label", cookies={"deja_admin": response.cookies["deja_admin"]})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Same answer (S / →)" in page.text and "Different (D / ←)" in page.text
    assert "script-src 'nonce-" in page.headers["content-security-policy"]
    assert httpx.get(gateway.url + "/deja/label", cookies={"deja_admin": "admin-secret"}).status_code == 401


@pytest.mark.parametrize("request_kwargs", [
    {},
    {"params": {"token": "wrong"}},
    {"cookies": {"deja_admin": "wrong"}},
    {"cookies": {"deja_admin": "admin-secret"}},
    {"headers": {"Authorization": "Bearer wrong"}},
], ids=["no-token", "wrong-token-in-url", "wrong-cookie", "token-as-cookie", "wrong-bearer"])
def test_page_without_a_valid_token_is_a_401_in_openai_shape(gateway: GatewayProcess,
                                                             request_kwargs: dict[str, Any]) -> None:
    response = httpx.get(gateway.url + "/deja/label", **request_kwargs)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert response.headers["www-authenticate"] == 'Bearer realm="deja"'
    assert "set-cookie" not in response.headers


def test_label_api_needs_the_token(gateway: GatewayProcess) -> None:
    assert httpx.get(gateway.url + "/deja/api/pending").status_code == 401
    assert httpx.post(gateway.url + "/deja/api/label", json={"request_id": "x", "same": True}).status_code == 401


def test_labelling_an_unknown_decision_is_a_404_in_openai_shape(gateway: GatewayProcess) -> None:
    response = httpx.post(gateway.url + "/deja/api/label", headers=ADMIN,
                          json={"request_id": "no-such-request", "same": True})
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_the_page_shows_the_budget_row_of_a_namespace_with_a_wrong_hit(gateway: GatewayProcess) -> None:
    api_key = f"sk-test-{uuid.uuid4().hex}"
    ask(gateway, api_key, "How do I delete my account?")
    hit = ask(gateway, api_key, "How can I delete my account?")
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    feedback = httpx.post(gateway.url + "/v1/deja/feedback", timeout=10, headers={"Authorization": f"Bearer {api_key}"},
                          json={"request_id": hit.headers["x-deja-request-id"], "correct": False})
    feedback.raise_for_status()

    def counted() -> list[dict[str, Any]]:  # once the upkeep's budget pass has counted the label
        report = httpx.get(gateway.url + "/deja/budget", headers=ADMIN, timeout=10).json()
        return [n for n in report["namespaces"] if n["wrong"] == 1]

    [row] = wait_for(counted)
    assert (row["served"], row["audited"]) == (1, 1)

    with chromium() as driver:
        driver.get(gateway.url + "/deja/label?token=admin-secret")
        wait = WebDriverWait(driver, 30)

        def budget_row(d: Any) -> list[str] | None:
            for tr in d.find_elements(By.CSS_SELECTOR, "#budget-rows tr"):
                cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                if cells and cells[0] == row["namespace"][:12]:
                    return cells
            return None

        cells = wait.until(budget_row)
        assert cells[1:5] == ["chat", "1", "1", "1"]
        assert driver.find_element(By.ID, "budget-value").text == "2.0%"
