"""Replay through the real cache pipeline with a fake embedder and a stub upstream answering per intent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eval.datasets import StreamRequest, load_stream
from eval.replay import ReplayConfig, answer_text, run_replay, stub_upstream
from index.embedding.embedder import HashEmbedder
from support.fakes import WordVeto

FIXTURES = Path(__file__).parent / "fixtures"


def _requests(*items: tuple[str, str]) -> tuple[StreamRequest, ...]:
    return tuple(StreamRequest(seq, intent, prompt) for seq, (intent, prompt) in enumerate(items, 1))


def test_stub_upstream_answers_per_intent() -> None:
    body = stub_upstream(StreamRequest(1, "cancel", "how do I cancel"))
    assert answer_text(body) == "answer for cancel"


def test_exact_repeats_are_exact_hits_and_always_correct() -> None:
    requests = _requests(("a", "what is my balance"), ("b", "reset my password"), ("a", "what is my balance"))
    row = run_replay("s", requests, HashEmbedder(), ReplayConfig((0.99,))).rows[0]
    assert (row.exact_hits, row.semantic_hits, row.correct, row.wrong) == (1, 0, 1, 0)
    assert row.oracle == 1
    assert row.served_rate == pytest.approx(1 / 3)


def test_wrong_semantic_hits_count_against_served() -> None:
    report = run_replay("stream.jsonl", load_stream(FIXTURES / "stream.jsonl"), HashEmbedder(),
                        ReplayConfig((0.5, 0.9)))
    assert (report.requests, report.intents) == (6, 3)
    low, high = report.rows
    # 0.50: #3 and #6 exact; #4 "... please" served the cancel answer (right); #5 pause served it too (wrong).
    assert (low.exact_hits, low.semantic_hits, low.correct, low.wrong) == (2, 2, 3, 1)
    assert low.wrong_per_served == pytest.approx(1 / 4)
    assert low.correct_rate == pytest.approx(3 / 6)
    assert low.oracle_rate == pytest.approx(3 / 6)
    assert (high.semantic_hits, high.wrong) == (1, 0)  # #5 is below 0.90; #4 is still a hit


def test_stage_vetoes_are_counted_and_judged() -> None:
    config = ReplayConfig((0.5,), stages=(WordVeto("polarity", "pause"),))
    report = run_replay("s", load_stream(FIXTURES / "stream.jsonl"), HashEmbedder(), config)
    row = report.rows[0]
    assert report.stages == ("polarity",)
    assert row.wrong == 0
    (veto,) = row.vetoes
    assert (veto.stage, veto.vetoed, veto.rightly) == ("polarity", 1, 1)


def test_upstream_is_a_seam() -> None:
    def constant(request: StreamRequest) -> dict[str, Any]:
        return {"choices": [{"message": {"role": "assistant", "content": "same for all"}}]}

    requests = _requests(("a", "cancel my plan now"), ("b", "cancel my plan now please"))
    row = run_replay("s", requests, HashEmbedder(), ReplayConfig((0.5,), upstream=constant)).rows[0]
    assert (row.semantic_hits, row.correct, row.wrong) == (1, 1, 0)
