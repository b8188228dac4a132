"""No forged admin action: an admin signed in to the label page in a real headless Chromium visits a page of
another origin on the same host (another loopback port: the same site, so the SameSite=Strict session cookie
does travel), which tries every way a page can to flush, invalidate, delete and label. Nothing changes."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.support.wait import WebDriverWait

from support.browser import chromium
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer admin-secret"}

# Every request a page of another origin can send without reading the answer: a form post into a hidden frame,
# `no-cors` fetches (simple methods and content types only), and CORS fetches that need a preflight Deja never
# grants. The page's title says when all of them have settled.
ATTACK = """<!doctype html><html><head><title>loading</title></head><body>
<iframe name="sink" id="sink"></iframe>
<form id="form" method="POST" action="{gw}/deja/flush" target="sink" enctype="text/plain">
  <input name='{{"x":"' value='"}}'>
</form>
<script>
const gw = "{gw}";
const simple = (path, body) => fetch(gw + path, {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body}});
const framed = new Promise((resolve) => {{
  document.getElementById("sink").addEventListener("load", resolve, {{once: true}});
  document.getElementById("form").submit();
}});
Promise.allSettled([
  framed,
  simple("/deja/flush", ""),
  simple("/deja/invalidate", JSON.stringify({{model: "gpt-4o-mini"}})),
  simple("/deja/api/label", JSON.stringify({{request_id: "{request_id}", same: false}})),
  fetch(gw + "/deja/entries/{entry}", {{method: "DELETE", credentials: "include"}}),
  fetch(gw + "/deja/flush", {{method: "POST", credentials: "include", headers: {{"X-Deja-CSRF": "guess"}}}}),
]).then(() => {{ document.title = "attacked"; }});
</script></body></html>"""


class AttackerSite:
    """A loopback HTTP server on a port of its own, serving one page."""

    def __init__(self, page: str) -> None:
        body = page.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> AttackerSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway(stub: StubUpstream, tmp_path: Path) -> Iterator[GatewayProcess]:
    # Info level: uvicorn's access lines show which status each forged request got.
    env = base_env(stub, tmp_path) | {"DEJA_LOG_LEVEL": "info"}
    process = GatewayProcess(env, tmp_path / "gateway.log").start()
    yield process
    process.stop()


def ask(gateway: GatewayProcess, api_key: str, content: str) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}
    response = httpx.post(gateway.url + "/v1/chat/completions", json=body, timeout=30,
                          headers={"Authorization": f"Bearer {api_key}"})
    response.raise_for_status()
    return response


def label_count(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "deja.db") as conn:
        return int(conn.execute("SELECT count(*) FROM deja_labels").fetchone()[0])


def test_a_page_of_another_origin_on_the_same_host_cannot_flush_invalidate_delete_or_label(
        gateway: GatewayProcess) -> None:
    api_key = f"sk-test-{uuid.uuid4().hex}"
    entry = ask(gateway, api_key, "How do I reset my password?").headers["x-deja-entry"]
    hit = ask(gateway, api_key, "How can I reset my password?")
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    request_id = hit.headers["x-deja-request-id"]
    pending = httpx.get(gateway.url + "/deja/api/pending", headers=ADMIN, timeout=10).json()
    assert [d["request_id"] for d in pending["items"]] == [request_id]

    page = ATTACK.format(gw=gateway.url, entry=entry, request_id=request_id)
    with AttackerSite(page) as attacker, chromium() as driver:
        driver.get(gateway.url + "/deja/label?token=admin-secret")  # the admin is signed in...
        assert driver.get_cookie("deja_admin") is not None
        driver.get(attacker.url)  # ...and opens the other page
        assert attacker.url.split(":")[2] != gateway.url.split(":")[2]  # same host, another port
        WebDriverWait(driver, 30).until(lambda d: d.title == "attacked")

    stats = httpx.get(gateway.url + "/deja/stats", headers=ADMIN, timeout=10).json()
    assert stats["entries"] == 1 and stats["indexed"] == 1
    assert httpx.get(f"{gateway.url}/deja/entries/{entry}", headers=ADMIN, timeout=10).status_code == 200
    assert ask(gateway, api_key, "How do I reset my password?").headers["x-deja-cache"] == "hit-exact"
    assert label_count(gateway.data_dir) == 0
    log = gateway.log_path.read_text()
    # The control: each simple request reached the gateway with the session cookie (without it: 401) and was
    # refused for want of the CSRF token; the DELETE and the header-carrying POST never left the browser.
    for line in ('"POST /deja/flush HTTP/1.1" 403', '"POST /deja/invalidate HTTP/1.1" 403',
                 '"POST /deja/api/label HTTP/1.1" 403'):
        assert line in log, line
    assert f'"DELETE /deja/entries/{entry} HTTP/1.1"' not in log
    assert log.count('"POST /deja/flush HTTP/1.1"') == 2  # the form and the no-cors fetch; not the preflighted one
