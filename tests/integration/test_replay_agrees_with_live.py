"""`eval replay --learn` runs the live gateway's learning loop rather than a copy of it: the same trace through a real
gateway over HTTP (uvicorn, the real MiniLM, its defaults: guarded, the learner on, audits at DEJA_AUDIT_RATE, no
label model; the stub upstream answers per intent, each call worded differently: `bench.learning`) and through
`python -m eval replay --learn` (the same Matcher, learner and labelling rules, in process) agree within one point
of correct ÷ requests and of wrong ÷ served, on real users' questions and on our own near-twin trace.

The live gateway's learner passes every half second (`DEJA_THRESHOLD_INTERVAL_SECONDS`), about as often in requests
as the replay's (every 10): at the default 5 s a pass comes every hundred requests or so over loopback, and a
threshold that moves (the near-twin trace) moves later than in the replay. Real users' questions are GPTCache's
OSSChat clusters in the seeded order, read where they lie (`DEJA_SHARED_DATASETS`, default `../shared/datasets`);
without them that case is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.learning import run as run_live
from eval.datasets import StreamRequest, load_clusters, load_stream
from eval.sources import OSSCHAT

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("DEJA_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
POINT = 0.01
LIVE_SETTINGS = {"DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5"}


@dataclass(frozen=True)
class Trace:
    """A trace as `eval replay` takes it (`option` FILE [--part PART]) and as the live side replays it."""

    option: str
    path: Path
    part: str | None = None

    def requests(self) -> list[StreamRequest]:
        if self.option == "--clusters":
            return list(load_clusters(self.path, seed=0))
        return [r for r in load_stream(self.path) if self.part is None or r.part == self.part]

    def args(self) -> list[str]:
        return [self.option, str(self.path), *(["--part", self.part] if self.part else [])]


TRACES = [pytest.param(Trace("--clusters", SHARED / OSSCHAT), id="osschat"),
          pytest.param(Trace("--stream", ROOT / "datasets" / "trace2.jsonl", "test"), id="trace2-test")]


def _replayed(trace: Trace) -> dict[str, Any]:
    """`eval replay --learn` on the same requests, at the gateway's defaults (no other DEJA_* set for either side)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEJA_")} | {"HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "eval", "replay", "--learn", *trace.args(), "--compare", "0.92",
                           "--answer-variation", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    learning: dict[str, Any] = json.loads(done.stdout)["learning"]
    return learning


def _rates(learning: dict[str, Any]) -> tuple[float, float]:
    """Correct ÷ requests and wrong ÷ served over the whole replay."""
    first, second = learning["first"], learning["second"]
    served = first["served"] + second["served"]
    return (first["correct"] + second["correct"]) / learning["requests"], (first["wrong"] + second["wrong"]) / served


@pytest.mark.parametrize("trace", TRACES)
def test_a_replay_through_eval_and_through_a_live_gateway_agree_within_a_point(trace: Trace, tmp_path: Path) -> None:
    if not trace.path.is_file():
        pytest.skip(f"{trace.path} is not there (set DEJA_SHARED_DATASETS)")
    requests = trace.requests()
    live = run_live(requests, tmp_path / "live", None, LIVE_SETTINGS)["whole"]
    replayed = _replayed(trace)
    correct, wrong = _rates(replayed)
    figures = {"requests": len(requests), "live": {"correct": live["correct"], "wrong_per_served":
                                                   live["wrong_over_served"]},
               "replay": {"correct": round(correct, 4), "wrong_per_served": round(wrong, 4),
                          "threshold_at_end": replayed["threshold"]}}
    print(f"{trace.path.name}: live gateway vs eval replay --learn:", json.dumps(figures))
    assert replayed["requests"] == len(requests) and live["served"] > 0
    assert abs(live["correct"] - correct) <= POINT, figures
    assert abs(live["wrong_over_served"] - wrong) <= POINT, figures
