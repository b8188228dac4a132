"""The traffic loop on a simulated deployment: `datasets/stream.jsonl` through a real gateway whose stub upstream
answers per intent; shadows and audits label its decisions; `eval sweep --traffic` chooses a threshold from those
labels; `--apply` stores it and the running gateway uses it without a restart.

The comparison with the threshold chosen from labelled pairs (`pairs-dev.jsonl`, same target and criterion) is
printed and written to `thresholds.json`, not asserted: the two samples differ (see the README, "Choose the
threshold from your own traffic"), so agreement within 0.02 is a measurement, not an invariant.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from eval.traffic import ALL_NAMESPACES, decision_log
from index.storage.decision_log import LabeledDecision, LabelSource
from support.traffic import (
    LOOSE_MIN_SIMILARITY,
    Deployment,
    chosen,
    deployment,
    pairs_sweep,
    replay,
    settle_labels,
    stats,
    stream_prefix,
    traffic_sweep,
)
from support.waiting import wait_for

pytestmark = pytest.mark.integration

# The whole trace: a shorter prefix leaves too few must-not labels for any bound to qualify (300 lines give 37;
# zero false hits need 35 for a 10% bound, 73 for 5%).
REQUESTS = 600
TARGET = 0.10


@dataclass(frozen=True)
class Loop:
    deployment: Deployment
    verdicts: Counter[str]
    labels: int

    @property
    def url(self) -> str:
        return self.deployment.gateway.url

    def labeled(self) -> list[LabeledDecision]:
        with decision_log(self.deployment.database_url) as log:
            return log.labeled()


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    requests = stream_prefix(REQUESTS)
    with deployment(requests, tmp_path_factory.mktemp("traffic")) as deployed:
        verdicts = replay(deployed.gateway.url, requests, "sk-traffic")
        yield Loop(deployed, verdicts, settle_labels(deployed.gateway.url))


def chat(url: str, api_key: str, prompt: str) -> httpx.Response:
    body = {"model": "stub-model", "messages": [{"role": "user", "content": prompt}]}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {api_key}"})


def test_replayed_traffic_is_labelled_by_shadows_and_audits(loop: Loop) -> None:
    labeled = loop.labeled()
    assert loop.verdicts["hit-semantic"] > 0 and loop.verdicts["miss"] > 0
    assert loop.labels == len(labeled)  # one label per decision: an audit or a shadow
    by_source = Counter((item.source, item.correct) for item in labeled)
    assert all(by_source[source, correct] > 0 for source in (LabelSource.AUDIT, LabelSource.SHADOW)
               for correct in (True, False)), by_source
    # Audits re-ask served semantic hits; shadows compare near misses that went upstream anyway.
    assert {item.decision.verdict for item in labeled if item.source is LabelSource.AUDIT} == {"hit-semantic"}
    assert {item.decision.verdict for item in labeled if item.source is LabelSource.SHADOW} == {"miss"}
    assert min(item.decision.similarity for item in labeled) < LOOSE_MIN_SIMILARITY


def test_traffic_threshold_beside_the_labelled_pairs_one(loop: Loop, tmp_path: Path) -> None:
    traffic = traffic_sweep(loop.deployment.database_url, TARGET)
    pairs = pairs_sweep(TARGET)
    traffic_choice, pairs_choice = traffic["sweeps"][0]["report"]["choices"][-1], pairs["choices"][-1]
    assert traffic_choice["stages"] == pairs_choice["stages"]  # the same stages, target and bound on both sides
    assert (traffic_choice["target"], traffic_choice["confidence"]) == (pairs_choice["target"], 0.95)
    assert traffic_choice["threshold"] is not None
    summary = {"target": TARGET, "requests": REQUESTS, "verdicts": dict(loop.verdicts), "labels": loop.labels,
               "traffic": chosen(traffic_choice), "pairs_dev": chosen(pairs_choice)}
    if pairs_choice["threshold"] is not None:
        summary["difference"] = round(traffic_choice["threshold"] - pairs_choice["threshold"], 6)
    (tmp_path / "thresholds.json").write_text(json.dumps(summary, indent=2))
    print("traffic vs labelled pairs:", json.dumps(summary))


def test_applied_threshold_is_in_force_on_the_running_gateway_without_restart(loop: Loop) -> None:
    dry_run = traffic_sweep(loop.deployment.database_url, TARGET)
    threshold = dry_run["sweeps"][0]["report"]["choices"][-1]["threshold"]
    assert threshold is not None and threshold > LOOSE_MIN_SIMILARITY
    served = [item.decision for item in loop.labeled()
              if item.decision.verdict == "hit-semantic" and item.decision.similarity < threshold]
    pair = max(served, key=lambda record: record.similarity)
    assert pair.candidate_prompt is not None
    before = _ask_pair(loop.url, pair.candidate_prompt, pair.prompt)
    assert before.headers["x-deja-cache"] == "hit-semantic"

    applied = traffic_sweep(loop.deployment.database_url, TARGET, "--apply")["applied"]
    # "*" and the replay's namespace; the namespace of `before` has one label and gets nothing.
    stored = {item["namespace"]: item["min_similarity"] for item in applied if item["min_similarity"] is not None}
    assert stored[ALL_NAMESPACES] == threshold and len(stored) == 2 and len(applied) == 3
    assert wait_for(lambda: {ns: t["min_similarity"] for ns, t in stats(loop.url)["thresholds"].items()} == stored,
                    timeout=5.0)

    after = _ask_pair(loop.url, pair.candidate_prompt, pair.prompt)  # a new namespace: the "*" default applies
    assert (after.headers["x-deja-cache"], after.headers["x-deja-reason"]) == ("miss", "below_threshold")
    assert "x-deja-veto" not in after.headers  # below the threshold is a miss, not a veto
    assert float(after.headers["x-deja-similarity"]) < threshold


def _ask_pair(url: str, cached: str, prompt: str) -> httpx.Response:
    """In a fresh namespace: store `cached`, then ask `prompt`, whose only candidate is `cached`."""
    api_key = f"sk-{uuid.uuid4().hex}"
    assert chat(url, api_key, cached).headers["x-deja-cache"] == "miss"
    return chat(url, api_key, prompt)
