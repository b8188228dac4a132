"""Learning against an upstream whose answers vary, through a real gateway (uvicorn, MiniLM, the default decision,
no label model): every hit is audited, each audit re-asks twice and compares the cached answer against how much the
fresh answers differ, so a closing sentence that changes every call is not taken for a wrong answer, and rewordings
keep being served after many audits. The rewordings ("How do I X?" / "How should I X?") are not plain rewordings:
they are served on their cosine, so a difference wrongly learned from their wording would veto the last one."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from index.guards.form import same_content
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": "Bearer admin-secret"}
TASKS = ("reset my router", "export a spreadsheet to pdf", "clear the browser cache", "rotate a video on my phone",
         "change my email password", "update my graphics drivers", "turn off automatic updates")
AUDITED = TASKS[:-1]


def wordings(task: str) -> tuple[str, str]:
    return f"How do I {task}?", f"How should I {task}?"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, StubUpstream]]:
    data_dir = tmp_path_factory.mktemp("learning")
    answers = {prompt: task for task in TASKS for prompt in wordings(task)}
    with StubUpstream(answers=answers, vary=True) as stub:
        # The default decision; the budget's pass every half second (a read shows what the last one stored).
        env = base_env(stub, data_dir) | {"DEJA_DECISION": "guarded", "DEJA_AUDIT_RATE": "1.0",
                                          "DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5"}
        gw = GatewayProcess(env, data_dir / "gateway.log").start()
        yield gw, stub
        gw.stop()


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    response = httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                          json={"model": "m", "messages": [{"role": "user", "content": content}]})
    response.raise_for_status()
    return response


def audited(url: str, count: int) -> dict[str, Any] | None:
    rows = httpx.get(url + "/deja/budget", headers=ADMIN, timeout=10).json()["namespaces"]
    return next((row for row in rows if row["audited"] >= count), None)


def audit_details(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT detail FROM deja_labels WHERE source = 'audit'")]
    finally:
        conn.close()


def test_audits_against_a_varying_upstream_do_not_turn_off_rewordings(
        deployment: tuple[GatewayProcess, StubUpstream]) -> None:
    gw, _ = deployment
    key = "sk-learning"
    for n, task in enumerate(AUDITED, start=1):
        asked, reworded = wordings(task)
        assert chat(gw.url, key, asked).headers["x-deja-cache"] == "miss"
        served = chat(gw.url, key, reworded)
        assert served.headers["x-deja-cache"] == "hit-semantic"
        assert not same_content(asked, reworded)  # served on its cosine, not on its form
        wait_for(lambda n=n: audited(gw.url, n))  # one at a time: each audit sees the differences so far
    row = audited(gw.url, len(AUDITED))
    assert row is not None and (row["served"], row["audited"], row["wrong"]) == (len(AUDITED), len(AUDITED), 0)
    # Each audit measured the upstream's own variation, and some cached answers were further from the fresh one
    # than the fixed cut of 0.95 that used to call them wrong ...
    details = audit_details(gw.data_dir / "deja.db")
    assert len(details) == len(AUDITED) and all("fresh vs fresh" in d for d in details)
    assert any(float(d.split()[2].rstrip(",")) < 0.95 for d in details)
    evidence = httpx.get(gw.url + "/deja/budget/evidence", headers=ADMIN, timeout=10).json()
    assert [d for d in evidence["differences"] if d["vetoes"]] == []  # ... and nothing was learned from wording
    asked, reworded = wordings(TASKS[-1])
    chat(gw.url, key, asked)
    last = chat(gw.url, key, reworded)
    assert (last.headers["x-deja-cache"], last.headers.get("x-deja-veto")) == ("hit-semantic", None)
