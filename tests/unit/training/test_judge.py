"""The judge (training only: the product no longer ships it): its features, the budget cut's confidence bound,
fitting, saving and loading, and a trained prior (when one was trained into training/judge/models/) meeting its
own budgets on its calibration data and recording only data whose licence lets a model learn from it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from training.judge.features import FEATURE_NAMES, judge_features
from training.judge.fit import fit
from training.judge.model import (
    METADATA_FILE,
    NEVER,
    Calibration,
    EntryHistory,
    Judge,
    JudgeInput,
    JudgeModelError,
    false_hit_upper,
    load_judge,
    save_judge,
    trained_judge_dir,
)

TRAINED = pytest.mark.skipif(not (trained_judge_dir() / METADATA_FILE).exists(),
                             reason="no judge trained into training/judge/models/ (python -m training.train_judge)")


def _feature(item: JudgeInput, name: str) -> float:
    return float(judge_features(item)[FEATURE_NAMES.index(name)])


def test_feature_vector_has_one_value_per_name() -> None:
    row = judge_features(JudgeInput("How do I reset my password?", "password reset steps", 0.7))
    assert row.shape == (len(FEATURE_NAMES),)
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)


@pytest.mark.parametrize(
    ("query", "cached", "feature"),
    [
        ("Is the API not rate limited?", "Is the API rate limited?", "polarity_veto"),
        ("How do I enable gzip in nginx?", "How do I disable gzip in nginx?", "polarity_flips"),
        ("What is 15% of 240?", "What is 15% of 420?", "values_strong"),
        ("Is Java faster than Python?", "Is Python faster than Java?", "values_role_swap"),
    ],
    ids=["negation", "antonym", "number", "role-swap"],
)
def test_rule_findings_become_features_not_vetoes(query: str, cached: str, feature: str) -> None:
    item = JudgeInput(query, cached, 0.95)
    assert _feature(item, feature) >= 1.0
    assert _feature(JudgeInput(query, query, 1.0), feature) == 0.0


def test_context_features_are_missing_without_contexts_and_present_with_them() -> None:
    single = JudgeInput("How much is it?", "How much does it cost?", 0.8)
    assert _feature(single, "has_context") == 0.0
    assert math.isnan(_feature(single, "context_similarity"))
    turned = JudgeInput("How much is it?", "How much is it?", 1.0, query_context="Team plan for 3 people",
                        cached_context="Team plan for 30 people", context_similarity=0.9)
    assert _feature(turned, "has_context") == 1.0
    assert _feature(turned, "context_similarity") == pytest.approx(0.9)
    assert _feature(turned, "context_values_veto") == 1.0


def test_history_share_is_smoothed_towards_even() -> None:
    fresh = JudgeInput("a b c", "a b c d", 0.9)
    assert _feature(fresh, "history_different_share") == 0.5
    burned = JudgeInput("a b c", "a b c d", 0.9, history=EntryHistory(served=10, same=1, different=8))
    assert _feature(burned, "history_different_share") == pytest.approx(8.5 / 10)
    with pytest.raises(ValueError):
        EntryHistory(served=-1)


def test_clopper_pearson_upper_bound_matches_closed_form() -> None:
    # With no false hit among n, the one-sided bound is 1 - (1 - confidence)^(1/n).
    assert false_hit_upper(0, 100, 0.95) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert false_hit_upper(0, 0) == 1.0
    assert false_hit_upper(5, 5) == 1.0
    assert false_hit_upper(1, 100) > false_hit_upper(0, 100)


def _calibration(seed: int = 1) -> Calibration:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.2, 0.2, size=5000)  # most pairs are clear either way, as with a useful judge
    labels = (rng.uniform(size=p.size) < p).astype(np.int8)  # calibrated by construction
    return Calibration(p, labels)


@pytest.mark.parametrize("budget", [0.01, 0.02, 0.05, 0.2])
def test_cut_is_the_lowest_bar_whose_upper_bound_meets_the_budget(budget: float) -> None:
    cal = _calibration()
    bar = cal.cut(budget)
    assert bar != NEVER
    served, wrong = cal.served_at(bar)
    assert false_hit_upper(wrong, served) <= budget
    lower = cal.probabilities[cal.probabilities < bar]
    if lower.size:  # the next bar down would break the bound (or the bar is not the lowest that meets it)
        next_bar = float(lower.max())
        served2, wrong2 = cal.served_at(next_bar)
        assert false_hit_upper(wrong2, served2) > budget or cal.cut(budget) <= next_bar


def test_cut_serves_less_under_a_tighter_budget() -> None:
    cal = _calibration()
    assert cal.cut(0.01) >= cal.cut(0.05) >= cal.cut(0.2)


def test_cut_is_never_when_no_bar_meets_the_budget() -> None:
    cal = Calibration(np.array([0.9, 0.8, 0.7]), np.array([0, 1, 0], dtype=np.int8))
    assert cal.cut(0.02) == NEVER
    with pytest.raises(ValueError):
        cal.cut(0.0)


def _toy_items(n: int, seed: int) -> tuple[list[JudgeInput], list[int]]:
    """Paraphrase-like pairs (same) and one-word negations/number swaps (different)."""
    rng = np.random.default_rng(seed)
    items: list[JudgeInput] = []
    labels: list[int] = []
    topics = ["gzip in nginx", "a python virtualenv", "dark mode", "two factor login", "the cache size"]
    for i in range(n):
        topic = topics[i % len(topics)]
        kind = i % 3
        sim = float(rng.uniform(0.75, 0.98))
        if kind == 0:
            items.append(JudgeInput(f"how can I turn on {topic}?", f"How do I enable {topic}?", sim))
            labels.append(1)
        elif kind == 1:
            items.append(JudgeInput(f"How do I not enable {topic}?", f"How do I enable {topic}?", sim))
            labels.append(0)
        else:
            items.append(JudgeInput(f"Set {topic} to {i + 2} items", f"Set {topic} to {i + 3} items", sim))
            labels.append(0)
    return items, labels


@pytest.fixture(scope="module")
def toy_judge() -> Judge:
    items, labels = _toy_items(240, seed=3)
    return fit(items, labels, prior=None, seed=7)


def test_fitted_judge_separates_negations_from_paraphrases(toy_judge: Judge) -> None:
    p = toy_judge.probabilities([
        JudgeInput("how can I turn on dark mode?", "How do I enable dark mode?", 0.9),
        JudgeInput("How do I not enable dark mode?", "How do I enable dark mode?", 0.9),
    ])
    assert p.shape == (2,)
    assert 0.0 <= p[1] < p[0] <= 1.0


def test_fit_is_reproducible_for_a_seed() -> None:
    items, labels = _toy_items(120, seed=5)
    a = fit(items, labels, prior=None, seed=11)
    b = fit(items, labels, prior=None, seed=11)
    assert a.version == b.version
    np.testing.assert_array_equal(a.probabilities(items), b.probabilities(items))


def test_fit_needs_both_labels() -> None:
    items, _ = _toy_items(30, seed=1)
    with pytest.raises(ValueError, match="both"):
        fit(items, [1] * len(items), prior=None, seed=0)


def test_save_and_load_round_trip_keeps_probabilities_and_version(toy_judge: Judge, tmp_path: Path) -> None:
    save_judge(toy_judge, tmp_path)
    loaded = load_judge(tmp_path)
    items, _ = _toy_items(30, seed=9)
    assert loaded.version == toy_judge.version
    np.testing.assert_allclose(loaded.probabilities(items), toy_judge.probabilities(items))
    assert loaded.cut(0.05) == toy_judge.cut(0.05)


def test_refit_on_top_of_a_prior_keeps_the_prior_and_round_trips(toy_judge: Judge, tmp_path: Path) -> None:
    items, labels = _toy_items(90, seed=21)
    refit = fit(items, labels, prior=toy_judge, seed=2)
    assert refit.prior is toy_judge and refit.version != toy_judge.version
    save_judge(refit, tmp_path)
    loaded = load_judge(tmp_path)
    assert loaded.prior is not None and loaded.prior.version == toy_judge.version
    np.testing.assert_allclose(loaded.probabilities(items), refit.probabilities(items))


def test_loading_a_judge_trained_on_other_features_is_refused(toy_judge: Judge, tmp_path: Path) -> None:
    save_judge(toy_judge, tmp_path)
    meta = json.loads((tmp_path / METADATA_FILE).read_text())
    meta["features"] = meta["features"][:-1]
    (tmp_path / METADATA_FILE).write_text(json.dumps(meta))
    with pytest.raises(JudgeModelError, match="other features"):
        load_judge(tmp_path)


def test_numpy_forest_scores_exactly_like_scikit_learn() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    from training.judge.fit import to_forest

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    x[rng.uniform(size=x.shape) < 0.1] = np.nan  # missing values take the learned side
    y = ((np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 1]) * x[:, 2].clip(-1, 1)) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=40, max_leaf_nodes=7, random_state=0).fit(x, y)
    np.testing.assert_allclose(to_forest(model).decision(x), model.decision_function(x), rtol=1e-9, atol=1e-9)


def test_loading_a_missing_judge_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeModelError, match="cannot read"):
        load_judge(tmp_path / "nowhere")


@pytest.fixture(scope="module")
def trained() -> Judge:
    return load_judge()


@TRAINED
def test_a_trained_prior_records_its_data_and_licences(trained: Judge) -> None:
    meta = json.loads((trained_judge_dir() / METADATA_FILE).read_text())
    assert meta["version"] == trained.version
    licences = " ".join(meta["data"]["licenses"].values()).lower()
    assert "non-commercial" not in licences and "nc" not in licences.replace("licence", "").split()
    assert all(len(digest) == 64 for digest in meta["data"]["files"].values())
    non_commercial = ("similiar_qqp", "checklist_qqp", "sick/", "negation_minpairs", "stsb")
    assert not any(part in name.lower() for name in meta["data"]["files"] for part in non_commercial)


@TRAINED
@pytest.mark.parametrize("budget", [0.02, 0.05, 0.1])
def test_a_trained_cut_meets_its_budget_on_its_calibration_data(trained: Judge, budget: float) -> None:
    bar = trained.cut(budget)
    assert bar != NEVER, "the trained prior serves nothing at this budget"
    served, wrong = trained.calibration.served_at(bar)
    assert served > 0
    assert false_hit_upper(wrong, served, trained.calibration.confidence) <= budget
