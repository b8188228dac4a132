"""The veto recipe: its stack inputs are the ones the runtime computes, each source weighs alike with ours a
minority, and a pair of a part the panel tests on is never a training pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eval.sources import split_of
from training.judge.pair_calibration import Combination
from training.veto import OURS_SHARE, stack_inputs, weights
from training.veto_data import TrainingPair, VetoData, held_out, training_pairs


def test_the_stack_inputs_are_the_ones_the_runtime_combines() -> None:
    combination = Combination(0.9, 0.5, -0.3, 0.5, 0.6)
    x = stack_inputs(np.array([0.7]), np.array([0.001]), np.array([0.93]))  # the pair P clipped as at run time
    z = float(x[0] @ np.array([0.9, 0.5, -0.3]) + 0.5)
    assert 1 / (1 + np.exp(-z)) == pytest.approx(combination.probability(0.7, 0.02, 0.93))


def test_each_source_weighs_alike_and_ours_at_most_its_share() -> None:
    sources = ("PAWS-Wiki dev",) * 90 + ("Redis LangCache dev",) * 10 + ("our pairs dev",) * 50
    w = weights(sources)
    assert w.sum() == pytest.approx(len(sources))
    share = {name: w[[s == name for s in sources]].sum() / w.sum() for name in set(sources)}
    assert share["our pairs dev"] == pytest.approx(OURS_SHARE)
    assert share["PAWS-Wiki dev"] == pytest.approx(share["Redis LangCache dev"])


def test_a_pair_the_panel_tests_on_is_never_trained_on(tmp_path: Path) -> None:
    (tmp_path / "paws_wiki").mkdir()
    (tmp_path / "paws_wiki" / "dev.tsv").write_text("1\tA cat sat.\tA cat sat down.\t1\n", encoding="utf-8")
    (tmp_path / "redis_langcache_eval").mkdir()
    rows = [(f"price of item {i}", f"cost of item {i}") for i in range(40)]
    csv = "sentence1,sentence2,label\n" + "".join(f"{a},{b},1\n" for a, b in rows)
    (tmp_path / "redis_langcache_eval" / "chatgpt.csv").write_text(csv, encoding="utf-8")
    (tmp_path / "pairs-dev.jsonl").write_text(
        '{"id": "x", "a": "How do I pin it?", "b": "How do I unpin it?", "same_answer": false}\n', encoding="utf-8")
    pairs = training_pairs(VetoData(tmp_path, tmp_path, paws=5, ours=5))
    langcache = [p for p in pairs if p.source.startswith("Redis")]
    assert 0 < len(langcache) < len(rows)
    assert all(split_of(p.cached + "\x00" + p.query) == "dev" and not held_out(p) for p in langcache)
    assert {p.source for p in pairs} == {"PAWS-Wiki dev", "Redis LangCache dev", "our pairs dev"}
    assert held_out(TrainingPair("Redis LangCache test", *next(
        (a, b) for a, b in rows if split_of(a + "\x00" + b) == "test"), True))


def test_the_check_replays_only_parts_no_fit_read() -> None:
    from eval.sources import Origin, Source
    from training.veto_check import _held_out

    def source(name: str, part: str) -> Source:
        return Source(name, Origin.REAL, part)

    assert _held_out(source("Redis LangCache", "test")) and not _held_out(source("Redis LangCache", "dev"))
    assert _held_out(source("PAWS-Wiki", "test")) and not _held_out(source("PAWS-Wiki", "dev"))
    assert _held_out(source("OSSChat clusters", "test")) and _held_out(source("QQP pairs", "dev"))
    assert not _held_out(source("our pairs", "dev"))
