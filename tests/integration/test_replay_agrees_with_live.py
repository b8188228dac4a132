"""`eval replay --learn` runs the live gateway's learning loop rather than a copy of it: the same trace through a real
gateway over HTTP (uvicorn, the real MiniLM, its defaults: guarded, the learner on, audits at DEJA_AUDIT_RATE, no
label model; the stub upstream answers per intent, each call worded differently: `bench.learning`) and through
`python -m eval replay --learn` (the same Matcher, learner and labelling rules, in process) agree: the live run's
correct ÷ requests and wrong ÷ served fall within the spread of the replays over 8 audit seeds, plus one point (the
gateway draws its audits at random), on real users' questions and on our own near-twin trace.

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
# The live gateway draws its audits at random, and what the audits find moves its threshold (on OSSChat, two wrong
# audits early raise it to 0.96 for a while: 40.4% correct instead of 45.0%, as replay seeds 5 and 6 do). So the live
# run is one draw of the process the seeded replays sample: it must fall within their spread, plus one point.
SEEDS = tuple(range(8))
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


def _replayed(trace: Trace, seed: int) -> dict[str, Any]:
    """`eval replay --learn` on the same requests, at the gateway's defaults (no other DEJA_* set for either side),
    its audit draws seeded by `seed`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEJA_")} | {"HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "eval", "replay", "--learn", *trace.args(), "--compare", "0.92",
                           "--answer-variation", "--seed", str(seed), "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
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
    run = run_live(requests, tmp_path / "live", None, LIVE_SETTINGS)
    live = run["whole"]
    replays = [_replayed(trace, seed) for seed in SEEDS]
    rates = [_rates(r) for r in replays]
    figures = {"requests": len(requests), "live": {"correct": live["correct"], "wrong_per_served":
                                                   live["wrong_over_served"]},
               "replays": [{"seed": seed, "correct": round(c, 4), "wrong_per_served": round(w, 4),
                            "threshold_at_end": r["threshold"]} for seed, (c, w), r in zip(SEEDS, rates, replays,
                                                                                           strict=True)],
               "live_halves": [run["first_half"], run["second_half"]], "live_threshold_at_end": run["threshold_at_end"],
               "live_seconds": run["seconds"]}
    print(f"{trace.path.name}: live gateway vs eval replay --learn:", json.dumps(figures))
    assert all(r["requests"] == len(requests) for r in replays) and live["served"] > 0
    corrects, wrongs = [c for c, _ in rates], [w for _, w in rates]
    assert min(corrects) - POINT <= live["correct"] <= max(corrects) + POINT, figures
    assert min(wrongs) - POINT <= live["wrong_over_served"] <= max(wrongs) + POINT, figures
