"""The learned threshold is shared and durable: real uvicorn replicas on one PostgreSQL, the real MiniLM, the
default decision. Near misses answered upstream become shadow labels through one replica; the other serves at the
threshold they support, and a restart keeps it. The prior is raised (DEJA_MIN_SIMILARITY=0.99) so every
paraphrase below is a near miss and a few dozen requests make the evidence; the rest of the decision is the default."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from index.request.keys import namespace_for
from support.services import GatewayProcess, PgDatabase
from support.stub_upstream import StubUpstream
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": "Bearer admin-secret"}
# Paraphrase clusters (one intent each); MiniLM puts most pairs between 0.80 and 0.97.
CLUSTERS = [
    ["How do I reset my password?",
     "What's the way to reset my password?", "I forgot my password, how can I reset it?"],
    ["How can I cancel my subscription?", "What do I do to cancel my subscription?", "Steps to cancel a subscription?"],
    ["How do I export my data to CSV?",
     "What's the way to export data as CSV?", "Can I download my data as a CSV file?"],
    ["How do I change the email on my account?", "Where do I change my account email?",
     "Can I update the email address of my account?"],
    ["How do I enable two-factor authentication?", "Where can I turn on two-factor authentication?"],
    ["How do I invite a teammate to my workspace?", "What's the way to invite someone to the workspace?"],
    ["How do I delete my account?", "What's the process to delete my account?"],
    ["How do I change my billing address?",
     "Where can I update the billing address?", "Can I edit my billing address?"],
    ["How do I restore a deleted file?",
     "What's the way to get back a deleted file?", "Can I recover a file I deleted?"],
    ["How do I set up a custom domain?", "Where do I configure a custom domain?"],
    ["How do I change the language of the interface?", "Where can I switch the interface language?",
     "Can I use the interface in another language?"],
    ["How do I upgrade my plan?", "Where can I upgrade to a higher plan?", "What's the way to move to a bigger plan?"],
    ["How do I download my invoices?", "Where can I find my invoices to download?", "Can I get a copy of my invoices?"],
    ["How do I turn off email notifications?", "Where can I disable email notifications?",
     "Can I stop getting notification emails?"],
    ["How do I rename a project?", "Where can I change a project's name?", "Can I give my project another name?"],
    ["How do I add a payment method?", "Where can I add a new card for payments?", "Can I add another payment card?"],
    ["How do I log out of all devices?", "Where can I sign out from every device?", "Can I end all my sessions?"],
    ["How do I change my time zone?", "Where can I set my time zone?", "Can I update the time zone of my account?"],
    ["How do I share a folder with my team?", "What's the way to give my team access to a folder?",
     "Can my team see a folder I share?"],
    ["How do I pause my subscription?", "What's the way to put my subscription on hold?",
     "Can I stop my subscription for a while?"],
    ["How do I print a report?", "What's the way to get a printed copy of a report?",
     "Can I send a report to my printer?"],
    ["How do I contact support?", "What's the way to reach your support team?", "Can I talk to someone in support?"],
    ["How do I archive old messages?", "What's the way to move old messages to the archive?",
     "Can I put my old messages in an archive?"],
]
LATER = ("Is there a way to reset my password?", 0)  # a new paraphrase of the first cluster
SECRET = "shared-by-the-replicas"


@pytest.fixture(scope="module")
def upstream() -> Iterator[StubUpstream]:
    answers = {prompt: f"intent-{i}" for i, cluster in enumerate(CLUSTERS) for prompt in cluster}
    answers[LATER[0]] = f"intent-{LATER[1]}"
    with StubUpstream(answers) as stub:
        yield stub


@pytest.fixture(scope="module")
def database() -> Iterator[PgDatabase]:
    with PgDatabase() as db:
        yield db


def replica(stub: StubUpstream, database: PgDatabase, folder: Path) -> GatewayProcess:
    folder.mkdir()
    env = base_env(stub, folder) | {
        "DEJA_DATABASE_URL": database.url,
        "DEJA_NAMESPACE_SECRET": SECRET,
        "DEJA_MIN_SIMILARITY": "0.99",
        "DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5",
    }
    return GatewayProcess(env, folder / "gateway.log")


def chat(url: str, key: str, content: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=60, headers={"Authorization": f"Bearer {key}"},
                      json={"model": "m", "messages": [{"role": "user", "content": content}]})


def thresholds(url: str) -> list[dict[str, object]]:
    report = httpx.get(url + "/deja/budget", headers=ADMIN, timeout=30).json()
    return list(report["thresholds"])


def test_near_misses_through_one_replica_lower_the_threshold_every_replica_serves_at_and_a_restart_keeps_it(
        upstream: StubUpstream, database: PgDatabase, tmp_path: Path) -> None:
    first = replica(upstream, database, tmp_path / "first").start()
    second = replica(upstream, database, tmp_path / "second").start()
    try:
        key = f"sk-{uuid.uuid4().hex}"
        before = chat(second.url, key, CLUSTERS[0][0])
        assert before.headers["x-deja-cache"] == "miss"
        near = 0
        for cluster in CLUSTERS:
            for prompt in cluster:
                response = chat(first.url, key, prompt)
                assert response.status_code == 200
                near += response.headers.get("x-deja-reason") == "below_threshold"
        assert near >= 20
        # The same prompts again, through the other replica: exact hits, served whatever the threshold, count
        # among what the namespace serves.
        for cluster in CLUSTERS:
            for prompt in cluster:
                assert chat(second.url, key, prompt).headers["x-deja-cache"] == "hit-exact"
        # Shadow labels are written in the background; the threshold follows them on both replicas.
        assert wait_for(lambda: any(row["threshold"] < 0.99 for row in thresholds(second.url)
                                    if row["kind"] == "cosine"), 30, interval=0.5)
        [row] = [r for r in thresholds(second.url) if r["kind"] == "cosine"]
        assert row["prior"] == 0.99 and int(row["labels"]) >= 20  # type: ignore[call-overload]
        # Each replica shows what its own last pass chose (every 0.5 s here): from the same rows, the same.
        assert wait_for(lambda: {(r["kind"], r["threshold"]) for r in thresholds(first.url)} == {
            (r["kind"], r["threshold"]) for r in thresholds(second.url)}, 30, interval=0.5)
        assert isinstance(row["bands"], list) and any(band["right"] > 0 for band in row["bands"])

        served = chat(second.url, key, LATER[0])
        assert served.headers["x-deja-cache"] == "hit-semantic", served.headers.get("x-deja-reason")
        assert float(served.headers["x-deja-similarity"]) < 0.99

        first.restart()
        # From the shared log alone, the restarted replica serves where the other does (the served hit above is
        # evidence too, so compare with the other replica's latest pass, not the row read before it).
        def agree() -> bool:
            mine = [r["threshold"] for r in thresholds(first.url) if r["kind"] == "cosine"]
            theirs = [r["threshold"] for r in thresholds(second.url) if r["kind"] == "cosine"]
            return bool(mine) and mine == theirs and mine[0] < 0.99  # type: ignore[operator]

        assert wait_for(agree, 30, interval=0.5)
        # What it chose is recorded already (`index.storage.threshold_moves`): the restart moved nothing.
        assert moves_counted(first.url) == 0
    finally:
        first.stop()
        second.stop()


def moves_counted(url: str) -> float:
    """The replica's `deja_threshold_moves_total`, every direction."""
    lines = httpx.get(url + "/metrics", timeout=30).text.splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("deja_threshold_moves_total{"))


def _learned(url: str, namespace: str) -> dict[str, tuple[float, int]]:
    """kind -> (threshold in force, labels behind it) of `namespace`, as this replica's last pass chose them."""
    return {str(r["kind"]): (float(r["threshold"]), int(r["labels"]))  # type: ignore[arg-type]
            for r in thresholds(url) if r["namespace"] == namespace}


def test_replicas_with_different_histories_serve_the_same_threshold_a_restart_and_a_late_one_included(
        upstream: StubUpstream, database: PgDatabase, tmp_path: Path) -> None:
    """The replay goes through two replicas in turn; one restarts halfway (it misses what comes meanwhile), a third
    starts only after it: each reads the same published totals, so once the labels are in, all three serve the same
    threshold for every kind of the namespace, within a pass or two of each other (a pass every 0.5 s here)."""
    first = replica(upstream, database, tmp_path / "first").start()
    second = replica(upstream, database, tmp_path / "second").start()
    late: GatewayProcess | None = None
    try:
        key = f"sk-{uuid.uuid4().hex}"
        namespace = namespace_for(key, SECRET.encode())
        # A cluster at a time, through each replica in turn (its near misses are near misses on the replica that
        # stored the cluster's first prompt).
        half = len(CLUSTERS) // 2
        for n, cluster in enumerate(CLUSTERS[:half]):
            for prompt in cluster:
                assert chat((first, second)[n % 2].url, key, prompt).status_code == 200
        first.restart()
        for n, cluster in enumerate(CLUSTERS[half:]):
            for prompt in cluster:
                assert chat((second, first)[n % 2].url, key, prompt).status_code == 200
        # The shadow labels are written in the background by whichever replica missed: wait until they are in.
        assert wait_for(lambda: _learned(second.url, namespace).get("cosine", (0.99, 0))[1] >= 20, 60, interval=0.5)
        # The same prompts again, spread over both: exact hits, served whatever the threshold.
        for n, prompt in enumerate(prompt for cluster in CLUSTERS for prompt in cluster):
            assert chat((first, second)[n % 2].url, key, prompt).headers["x-deja-cache"] == "hit-exact"
        late = replica(upstream, database, tmp_path / "late").start()
        replicas = (first, second, late)

        def agree() -> bool:
            views = [_learned(r.url, namespace) for r in replicas]
            return views[0].get("cosine", (0.99, 0))[0] < 0.99 and all(view == views[0] for view in views[1:])

        assert wait_for(agree, 60, interval=0.5)
        threshold, labels = _learned(late.url, namespace)["cosine"]
        assert threshold < 0.99 and labels >= 20
        # What they show is what they serve: a new paraphrase is a semantic hit on every replica.
        assert {chat(r.url, key, LATER[0]).headers["x-deja-cache"] for r in replicas} <= {"hit-semantic", "hit-exact"}
    finally:
        for gateway in (first, second, late):
            if gateway is not None:
                gateway.stop()
