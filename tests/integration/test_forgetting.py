"""A forgotten prompt is forgotten: traffic carrying a fake social-security number (chat, a paraphrase served from
cache, a vetoed near-twin, an Anthropic stream, feedback, a human label) through a real gateway on SQLite and on
PostgreSQL + Redis; after an invalidate, and after a flush, no table, no exact-tier value and no admin page or
route holds it, while the labels survive as hashes and numbers."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import pytest
import redis
import sqlalchemy as sa

from index.forgetting import text_hash
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": "Bearer admin-secret"}


@dataclass(frozen=True)
class Traces:
    api_key: str
    ssn: str
    entries: tuple[str, ...]
    labelled: tuple[str, ...]  # request ids with a human or feedback label
    hashes: tuple[str, ...]  # SHA-256 of the prompts those labelled decisions asked


def fake_ssn() -> str:
    """A number in the never-issued 9xx area, unique to the test run."""
    rng = random.Random(uuid.uuid4().int)
    return f"9{rng.randrange(10, 100)}-{rng.randrange(10, 100)}-{rng.randrange(1000, 10000)}"


def chat(deployment: Deployment, api_key: str, content: str) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}
    response = httpx.post(deployment.url + "/v1/chat/completions", json=body, timeout=30,
                          headers={"Authorization": f"Bearer {api_key}"})
    response.raise_for_status()
    return response


def stream_claude(deployment: Deployment, api_key: str, content: str) -> str:
    with anthropic.Anthropic(base_url=deployment.url, api_key=api_key, max_retries=0, timeout=30) as client, \
            client.messages.stream(model="claude-test", max_tokens=100,
                                   messages=[{"role": "user", "content": content}]) as stream:
        return "".join(stream.text_stream)


def leave_traces(deployment: Deployment) -> Traces:
    api_key, ssn = f"sk-test-{uuid.uuid4().hex}", fake_ssn()
    asked = f"My social security number is {ssn}. How do I file my taxes online?"
    first = chat(deployment, api_key, asked)
    paraphrase = f"My social security number is {ssn}. How can I file my taxes online?"
    hit = chat(deployment, api_key, paraphrase)
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    other = ssn[:-1] + ("1" if ssn[-1] != "1" else "2")
    twin = chat(deployment, api_key, f"My social security number is {other}. How do I file my taxes online?")
    assert twin.headers["x-deja-cache"] == "miss"
    assert ssn in stream_claude(deployment, api_key, f"Is {ssn} a valid social security number?")
    feedback = httpx.post(deployment.url + "/v1/deja/feedback", timeout=10,
                          headers={"Authorization": f"Bearer {api_key}"},
                          json={"request_id": hit.headers["x-deja-request-id"], "correct": False,
                                "detail": f"the answer mixed up {ssn}"})
    assert feedback.json()["recorded"] is True
    pending = httpx.get(deployment.url + "/deja/api/pending", params={"limit": 200}, headers=ADMIN, timeout=10)
    mine = [d for d in pending.json()["items"] if ssn in d["prompt"] + (d["candidate_prompt"] or "")]
    assert len(mine) >= 2
    human = mine[0]["request_id"]
    labelled = httpx.post(deployment.url + "/deja/api/label", headers=ADMIN, timeout=10,
                          json={"request_id": human, "same": False})
    assert labelled.json()["recorded"] is True
    hashes = (text_hash(paraphrase), text_hash(mine[0]["prompt"]))
    return Traces(api_key, ssn, (first.headers["x-deja-entry"], twin.headers["x-deja-entry"]),
                  (hit.headers["x-deja-request-id"], human), hashes)


def database_url(deployment: Deployment) -> str:
    env = deployment.gateway.env
    return env.get("DEJA_DATABASE_URL") or f"sqlite:///{Path(env['DEJA_DATA_DIR']) / 'deja.db'}"


def tables_holding(deployment: Deployment, text: str) -> list[str]:
    """`table.column` of every value, in every table of the gateway's database, that contains `text`."""
    engine = sa.create_engine(database_url(deployment))
    found = []
    try:
        with engine.connect() as conn:
            for table in sa.inspect(conn).get_table_names():
                for row in conn.execute(sa.text(f'SELECT * FROM "{table}"')):
                    for column, value in row._mapping.items():
                        raw = value if isinstance(value, bytes) else str(value).encode()
                        if text.encode() in raw:
                            found.append(f"{table}.{column}")
    finally:
        engine.dispose()
    return sorted(set(found))


def labels_of(deployment: Deployment, request_ids: tuple[str, ...]) -> list[tuple[str, str | None, str | None]]:
    """(source, detail, prompt_hash) of the labels of `request_ids`, with their decision's prompt hash."""
    engine = sa.create_engine(database_url(deployment))
    query = sa.text("SELECT l.source, l.detail, d.prompt_hash FROM deja_labels l JOIN deja_decisions d "
                    "ON d.request_id = l.request_id WHERE l.request_id IN :ids AND l.source IN ('human', 'feedback')"
                    ).bindparams(sa.bindparam("ids", expanding=True))
    try:
        with engine.connect() as conn:
            return sorted((r.source, r.detail, r.prompt_hash) for r in conn.execute(query, {"ids": list(request_ids)}))
    finally:
        engine.dispose()


def exact_tier_holding(deployment: Deployment, text: str) -> int:
    if "DEJA_REDIS_URL" not in deployment.gateway.env:
        return 0  # the in-process LRU: what the store deletes is what the gateway dropped
    client = redis.Redis.from_url(deployment.gateway.env["DEJA_REDIS_URL"])
    try:
        return sum(1 for key in client.scan_iter(match="deja:exact:*", count=1000)
                   if text.encode() in (client.get(key) or b""))
    finally:
        client.close()


def admin_views(deployment: Deployment, traces: Traces) -> dict[str, str]:
    """What every admin page and route shows."""
    url = deployment.url
    views = {path: httpx.get(url + path, headers=ADMIN, timeout=10).text
             for path in ("/deja/label", "/deja/api/pending?limit=200", "/deja/stats", "/metrics")}
    for entry in traces.entries:
        views[f"/deja/entries/{entry}"] = httpx.get(f"{url}/deja/entries/{entry}", headers=ADMIN, timeout=10).text
    return views


def assert_forgotten(deployment: Deployment, traces: Traces) -> None:
    assert tables_holding(deployment, traces.ssn) == []
    assert exact_tier_holding(deployment, traces.ssn) == 0
    for path, text in admin_views(deployment, traces).items():
        assert traces.ssn not in text, path
    for entry in traces.entries:
        assert httpx.get(f"{deployment.url}/deja/entries/{entry}", headers=ADMIN, timeout=10).status_code == 404
    # The labels stay for training and counts: source and verdict, their decisions' prompts as hashes.
    kept = labels_of(deployment, traces.labelled)
    assert [(source, detail) for source, detail, _ in kept] == [("feedback", None), ("human", None)]
    assert {prompt_hash for _, _, prompt_hash in kept} == set(traces.hashes)


def test_a_prompt_is_gone_from_every_table_and_admin_view_after_an_invalidate(deployment: Deployment) -> None:
    traces = leave_traces(deployment)
    bystander = leave_traces(deployment)
    # The control: before, the number is in the entries, the decision log, a label and the admin routes.
    holding = tables_holding(deployment, traces.ssn)
    assert {"deja_entries.prompt", "deja_entries.response", "deja_decisions.prompt", "deja_labels.detail"} <= set(
        holding), holding
    views = admin_views(deployment, traces)
    assert traces.ssn in views["/deja/api/pending?limit=200"] and traces.ssn in views[
        f"/deja/entries/{traces.entries[0]}"]

    gone = httpx.post(deployment.url + "/deja/invalidate", headers=ADMIN, json={"api_key": traces.api_key},
                      timeout=30).json()
    assert gone["deleted"] >= 3
    assert_forgotten(deployment, traces)
    assert "deja_decisions.prompt" in tables_holding(deployment, bystander.ssn)  # another tenant's stays


def test_a_prompt_is_gone_from_every_table_and_admin_view_after_a_flush(deployment: Deployment) -> None:
    traces = leave_traces(deployment)
    assert "deja_decisions.prompt" in tables_holding(deployment, traces.ssn)
    assert httpx.post(deployment.url + "/deja/flush", headers=ADMIN, timeout=30).json()["deleted"] >= 3
    assert_forgotten(deployment, traces)
