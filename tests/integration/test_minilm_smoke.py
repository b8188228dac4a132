"""One smoke test with the real MiniLM model on the unit suite's labelled-pair fixture (it loads the model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.datasets import load_pairs
from eval.sweep import SweepConfig, build_report, score_pairs
from index.embedding.embedder import MiniLMEmbedder

FIXTURES = Path(__file__).parents[1] / "unit" / "eval" / "fixtures"

pytestmark = pytest.mark.integration


def test_minilm_ranks_paraphrases_above_unrelated_pairs() -> None:
    scored = score_pairs(load_pairs(FIXTURES / "pairs.jsonl"), MiniLMEmbedder())
    by_id = {item.pair.id: item.similarity for item in scored}
    assert by_id["p1"] is not None and by_id["p6"] is not None
    assert by_id["p1"] > 0.8 > by_id["p6"]
    report = build_report("pairs.jsonl", MiniLMEmbedder.model_id, scored, SweepConfig((0.8,), ((),)))
    assert report.sweeps[0].points[0].hit_rate == 1.0
