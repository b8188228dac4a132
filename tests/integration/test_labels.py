"""The label loop against a real gateway: decision log, feedback, shadow labels, audits, restart."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                      json={"model": "m", "messages": [{"role": "user", "content": content}]})


def feedback(url: str, api_key: str, request_id: str, correct: bool) -> httpx.Response:
    return httpx.post(url + "/v1/deja/feedback", headers={"Authorization": f"Bearer {api_key}"},
                      json={"request_id": request_id, "correct": correct})


def labels(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT request_id, source, correct FROM deja_labels ORDER BY source").fetchall()
    finally:
        conn.close()


@pytest.fixture
def gateway(stub: StubUpstream, tmp_path: Path) -> Any:
    gw = GatewayProcess(base_env(stub, tmp_path) | {"DEJA_AUDIT_RATE": "1.0"}, tmp_path / "gw.log").start()
    yield gw
    gw.stop()


def test_feedback_labels_a_logged_decision_and_keeps_the_latest(gateway: GatewayProcess, tmp_path: Path) -> None:
    chat(gateway.url, "sk-f", "How do I reset my password?")
    hit = chat(gateway.url, "sk-f", "How can I reset my password?")
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    request_id = hit.headers["x-deja-request-id"]
    assert feedback(gateway.url, "sk-f", request_id, True).status_code == 200
    assert feedback(gateway.url, "sk-f", request_id, False).status_code == 200
    rows = [r for r in labels(tmp_path / "deja.db") if r[1] == "feedback"]
    assert rows == [(request_id, "feedback", 0)]
    # labels survive a restart
    gateway.restart()
    assert [r for r in labels(tmp_path / "deja.db") if r[1] == "feedback"] == [(request_id, "feedback", 0)]
    stats = httpx.get(gateway.url + "/deja/stats", headers={"Authorization": "Bearer admin-secret"}).json()
    assert stats["labels"]["feedback"] == {"correct": 0, "wrong": 1}


def test_feedback_for_an_unknown_or_foreign_request_is_a_404(gateway: GatewayProcess) -> None:
    missing = feedback(gateway.url, "sk-g", "no-such-request", True)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    chat(gateway.url, "sk-g", "How do I rotate logs?")
    hit = chat(gateway.url, "sk-g", "How can I rotate logs?")
    assert feedback(gateway.url, "sk-other", hit.headers["x-deja-request-id"], True).status_code == 404


def test_near_miss_gets_a_shadow_label_and_a_hit_gets_an_audit(gateway: GatewayProcess, stub: StubUpstream,
                                                                tmp_path: Path) -> None:
    # The two answers are the same text: a label without knowing how much this upstream's answers vary.
    near_pair = ("Is the API rate limited?", "Is the API not rate limited?")
    stub.state.answers = {prompt: "rate-limits" for prompt in near_pair}
    try:
        chat(gateway.url, "sk-s", near_pair[0])
        near = chat(gateway.url, "sk-s", near_pair[1])
    finally:
        stub.state.answers = {}
    assert near.headers["x-deja-cache"] == "miss" and near.headers["x-deja-reason"] == "vetoed"
    near_id = near.headers["x-deja-request-id"]
    assert wait_for(lambda: [r for r in labels(tmp_path / "deja.db") if r[:2] == (near_id, "shadow")])
    # One answer for both wordings (the stub's default answer numbers each call, and answers that differ in a value
    # are compared as contrasting answers: no label).
    docker = ("How do I install Docker on Ubuntu?", "How can I install Docker on Ubuntu?")
    stub.state.answers = {prompt: "docker" for prompt in docker}
    chat(gateway.url, "sk-s", docker[0])
    hit = chat(gateway.url, "sk-s", docker[1])
    assert hit.headers["x-deja-cache"] == "hit-semantic"
    hit_id = hit.headers["x-deja-request-id"]
    try:
        audit = wait_for(lambda: [r for r in labels(tmp_path / "deja.db") if r[:2] == (hit_id, "audit")])
    finally:
        stub.state.answers = {}
    assert len(audit) == 1
