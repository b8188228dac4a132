"""What hits save and what stops reuse, end to end: a real gateway process and a stub upstream on loopback that
reports usage with cached tokens in all three APIs. `/deja/stats` prices each hit as the priced sum of its kinds
(and "no price" for an unknown model), subtracts what audits spent, and shows the provider's cache share; 200
requests whose system prompt opens with the time to the millisecond (or a request id), and a tool list sent in two
orders, are named by `/deja/reuse` and on the overview page in Chromium, while the same traffic held steady is not."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By

from index.request.keys import namespace_for
from index.settings import Settings
from support.browser import chromium
from support.services import GatewayProcess
from support.stub_upstream import CACHED_USAGE, StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer admin-secret"}
SECRET = "savings-and-reuse-secret"
PRICES = Settings(_env_file=None).price_table()  # type: ignore[call-arg]
QUESTIONS = [f"What does billing code {n} on my invoice mean?" for n in range(100, 140)]
TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} a record",
                                            "parameters": {"type": "object", "properties": {}}}}
         for name in ("search", "lookup", "book")]


@pytest.fixture(scope="module")
def own_stub() -> Iterator[StubUpstream]:
    with StubUpstream() as upstream:
        upstream.state.usage = dict(CACHED_USAGE)
        yield upstream


@pytest.fixture(scope="module")
def gateway(own_stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("deja-savings")
    env = base_env(own_stub, data_dir) | {"DEJA_NAMESPACE_SECRET": SECRET, "DEJA_AUDIT_RATE": "1",
                                          "DEJA_PRICES": '{"house-model-x": {"input": 1, "output": 2}}'}
    process = GatewayProcess(env, data_dir / "gateway.log").start()
    yield process
    process.stop()


def _ns(api_key: str) -> str:
    return namespace_for(api_key, SECRET.encode())


def ask(client: httpx.Client, api: str, api_key: str, content: str, model: str, system: str | None = None,
        **extra: Any) -> httpx.Response:
    if api == "messages":
        body: dict[str, Any] = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": content}]}
        if system is not None:
            body["system"] = system
        headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        path = "/v1/messages"
    elif api == "responses":
        body = {"model": model, "input": content, **({"instructions": system} if system else {})}
        headers, path = {"Authorization": f"Bearer {api_key}"}, "/v1/responses"
    else:
        turns = [{"role": "system", "content": system}] if system is not None else []
        body = {"model": model, "messages": [*turns, {"role": "user", "content": content}]}
        headers, path = {"Authorization": f"Bearer {api_key}"}, "/v1/chat/completions"
    response = client.post(path, json=body | extra, headers=headers, timeout=20)
    response.raise_for_status()
    return response


def savings(gateway: GatewayProcess) -> dict[tuple[str, str, str], dict[str, Any]]:
    rows = httpx.get(gateway.url + "/deja/stats", headers=ADMIN, timeout=10).json()["savings"]
    return {(r["namespace"], r["api"], r["model"]): r for r in rows}


@pytest.mark.parametrize(("api", "model"), [("chat", "gpt-4o-mini"), ("responses", "gpt-4o"),
                                            ("messages", "claude-sonnet-4-5"), ("chat", "house-model-x")],
                         ids=["chat", "responses", "messages", "operator-priced"])
def test_an_exact_hit_saves_the_priced_sum_of_its_kinds(gateway: GatewayProcess, api: str, model: str) -> None:
    api_key = f"sk-save-{uuid.uuid4().hex}"
    with httpx.Client(base_url=gateway.url) as client:
        miss = ask(client, api, api_key, "How do I export my invoices?", model)
        assert miss.headers["x-deja-cache"] == "miss"
        assert ask(client, api, api_key, "How do I export my invoices?", model).headers["x-deja-cache"] == "hit-exact"
    row = savings(gateway)[(_ns(api_key), api, model)]
    # The entry keeps its call's usage by kind (migration 0014), as the hit priced it.
    entry = httpx.get(f"{gateway.url}/deja/entries/{miss.headers['x-deja-entry']}", headers=ADMIN, timeout=10).json()
    assert entry["usage"] == row["saved_tokens"]
    kinds = row["saved_tokens"]
    assert kinds["cached_input"] == 1000 and kinds["output"] == 300
    assert sum(kinds.values()) == (1500 if api != "messages" else 1600)
    rates = {"input": "input", "cached_input": "cached_input", "cache_write": "cache_write", "output": "output"}
    price = PRICES.price_for(model) if model != "house-model-x" else None
    if price is not None:
        by_hand = sum(kinds[k] * (getattr(price, rates[k]) if getattr(price, rates[k]) is not None
                                  else price.input) for k in kinds) / 1e6
    else:
        by_hand = (kinds["input"] + kinds["cached_input"] + kinds["cache_write"]) * 1 / 1e6 + kinds["output"] * 2 / 1e6
    assert row["saved_usd"] == pytest.approx(by_hand, abs=1e-9) and row["hits"] == 1
    # The miss was forwarded: the provider's cache served 1,000 of its input tokens (1,200; Anthropic 1,300).
    assert row["provider_cache_share"] == pytest.approx(1000 / (1300 if api == "messages" else 1200))


@pytest.mark.parametrize(("api", "model", "prompt_tokens"), [("responses", "gpt-4.1", 1200),
                                                             ("messages", "claude-haiku-4-5", 1300)],
                         ids=["responses", "messages"])
def test_a_streamed_answer_is_priced_by_kind_too(gateway: GatewayProcess, api: str, model: str,
                                                 prompt_tokens: int) -> None:
    api_key = f"sk-stream-{uuid.uuid4().hex}"
    with httpx.Client(base_url=gateway.url) as client:
        verdicts = [ask(client, api, api_key, "How do I merge two invoices?", model, stream=True).headers[
            "x-deja-cache"] for _ in range(2)]
    assert verdicts == ["miss", "hit-exact"]
    row = savings(gateway)[(_ns(api_key), api, model)]
    assert row["saved_tokens"]["cached_input"] == 1000 and row["saved_tokens"]["output"] == 300
    assert row["provider_cache_share"] == pytest.approx(1000 / prompt_tokens)


def test_an_unknown_model_shows_its_tokens_and_no_price(gateway: GatewayProcess) -> None:
    api_key = f"sk-unknown-{uuid.uuid4().hex}"
    with httpx.Client(base_url=gateway.url) as client:
        for _ in range(2):
            ask(client, "chat", api_key, "How do I export my invoices?", "my-finetune-7")
    row = savings(gateway)[(_ns(api_key), "chat", "my-finetune-7")]
    assert row["saved_tokens"] == {"input": 200, "cached_input": 1000, "cache_write": 0, "output": 300}
    assert row["saved_usd"] == "no price" and row["net_usd"] == "no price"
    metrics = httpx.get(gateway.url + "/metrics", timeout=10).text
    assert f'deja_saved_tokens_total{{api="chat",kind="output",model="my-finetune-7",namespace="{_ns(api_key)}"}}' \
        in metrics


def test_what_audits_spent_is_subtracted_from_what_hits_saved(gateway: GatewayProcess) -> None:
    api_key = f"sk-audit-{uuid.uuid4().hex}"
    with httpx.Client(base_url=gateway.url) as client:
        ask(client, "chat", api_key, "How do I reset my password?", "gpt-4o-mini")
        hit = ask(client, "chat", api_key, "How can I reset my password?", "gpt-4o-mini")
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    key = (_ns(api_key), "chat", "gpt-4o-mini")
    # The audit re-asks upstream twice (the second answer measures the upstream's variation): two calls' usage.
    assert wait_for(lambda: sum(savings(gateway)[key]["labelling_tokens"].values()) == 3000, timeout=20)
    row = savings(gateway)[key]
    price = PRICES.price_for("gpt-4o-mini")
    assert price is not None
    one_call = (200 * price.input + 1000 * (price.cached_input or 0) + 300 * price.output) / 1e6
    assert row["saved_usd"] == pytest.approx(one_call, abs=1e-9)
    assert row["labelling_usd"] == pytest.approx(2 * one_call, abs=1e-9)
    assert row["net_usd"] == pytest.approx(-one_call, abs=1e-9)


def _now_ms() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _run(gateway: GatewayProcess, api_key: str, system: Any, tools: Any = None) -> int:
    """Forty questions five times each; the hits they got."""
    hits = 0
    with httpx.Client(base_url=gateway.url) as client:
        for i in range(200):
            extra = {} if tools is None else {"tools": tools(i)}
            answer = ask(client, "chat", api_key, QUESTIONS[i % 40], "gpt-4o-mini", system(i), **extra)
            hits += answer.headers["x-deja-cache"].startswith("hit")
    return hits


def _reuse(gateway: GatewayProcess) -> dict[str, dict[str, Any]]:
    response = httpx.get(gateway.url + "/deja/reuse", headers=ADMIN, timeout=10)
    response.raise_for_status()
    return {ns["namespace"]: {f["obstacle"]: f for f in ns["findings"]} for ns in response.json()["namespaces"]}


def test_a_varying_system_prompt_and_tool_order_are_named_and_steady_traffic_is_not(
        gateway: GatewayProcess, tmp_path: Path) -> None:
    keys = {name: f"sk-{name}-{uuid.uuid4().hex}" for name in ("clock", "request-id", "fixed", "orders", "sorted")}
    started = time.perf_counter()
    clock_hits = _run(gateway, keys["clock"], lambda i: f"Current time: {_now_ms()}. You answer billing questions.")
    id_hits = _run(gateway, keys["request-id"], lambda i: f"Request {uuid.uuid4()}. You answer billing questions.")
    fixed_hits = _run(gateway, keys["fixed"], lambda i: "You answer billing questions.")
    # Each question asked in both orders (the order flips every 40 requests).
    order_hits = _run(gateway, keys["orders"], lambda i: "Use the tools.",
                      lambda i: TOOLS if i // 40 % 2 else TOOLS[::-1])
    sorted_hits = _run(gateway, keys["sorted"], lambda i: "Use the tools.", lambda i: TOOLS)
    print(f"1,000 requests in {time.perf_counter() - started:.1f} s; hits: clock {clock_hits}, request id "
          f"{id_hits}, fixed {fixed_hits}, two orders {order_hits}, one order {sorted_hits}")
    assert clock_hits == id_hits == 0 and fixed_hits >= 160 and sorted_hits >= 160 and order_hits < sorted_hits

    report = _reuse(gateway)
    for name in ("clock", "request-id"):
        found = report[_ns(keys[name])]["varying_system_prompt"]
        assert found["share"] == 1.0 and found["requests"] == 200
        assert "at the start of the system prompt" in found["where"] and found["fix"].startswith("Move the")
    assert report[_ns(keys["orders"])]["tool_order"]["share"] == 1.0
    assert report[_ns(keys["fixed"])] == {} and report[_ns(keys["sorted"])] == {}
    assert httpx.get(gateway.url + "/deja/reuse", timeout=10).status_code == 401  # the admin token is needed

    with chromium() as driver:
        driver.get(gateway.url + "/deja/admin/overview?token=admin-secret")
        rows = driver.find_elements(By.CSS_SELECTOR, "#reuse tr")[1:]
        shown = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
        named = {(cells[0], cells[1]): cells for cells in shown}
        for name, obstacle in (("clock", "varying_system_prompt"), ("request-id", "varying_system_prompt"),
                               ("orders", "tool_order")):
            cells = named[(_ns(keys[name])[:12], obstacle)]
            assert cells[3] == "100.0%" and cells[4] == "200 of 200" and cells[5]
        assert not any(cells[0] in (_ns(keys["fixed"])[:12], _ns(keys["sorted"])[:12]) for cells in shown)
        saved = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                 for tr in driver.find_elements(By.CSS_SELECTOR, "#savings tr")[1:]]
        assert any(cells[2] == "my-finetune-7" and cells[8] == "no price" for cells in saved)
        assert driver.find_element(By.ID, "provider-cache").size["height"] > 0
        screenshot = tmp_path / "overview-reuse.png"
        assert driver.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 0
