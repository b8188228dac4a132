"""Labels from answers, aware of how much the upstream's answers to one question vary: two samples of one answer
(the same content, a different closing sentence) are not labelled different; with no measure of the variation yet,
differing answers teach nothing."""

from __future__ import annotations

import pytest

from index.embedding.embedder import HashEmbedder
from index.match.answers import BASELINE_MIN_SAMPLES, AnswerBaselines, compare_answers, contrast

CONTENT = "Open Settings, choose Network, select the router, press Reset and confirm with your admin password."
OTHER = "Bake the bread at two hundred degrees for forty minutes, then let the loaf cool on a rack."


def sample(content: str, closing: str) -> str:
    return f"{content} {closing}"


def test_two_samples_of_one_answer_with_different_closings_are_not_labelled_different() -> None:
    embedder = HashEmbedder(dim=256)
    cached = sample(CONTENT, "Thanks for asking!")
    fresh, again = sample(CONTENT, "Hope this helps."), sample(CONTENT, "Let me know if anything is unclear.")
    result = compare_answers(fresh, cached, embedder, 0.95, second_fresh=again)
    assert result.similarity < 0.95  # below the fixed cut that used to call this "different"
    assert result.same is True and result.fresh_similarity is not None


def test_an_answer_to_another_question_is_labelled_different_against_the_fresh_variation() -> None:
    embedder = HashEmbedder(dim=256)
    fresh, again = sample(CONTENT, "Hope this helps."), sample(CONTENT, "Thanks for asking!")
    result = compare_answers(fresh, sample(OTHER, "Thanks for asking!"), embedder, 0.95, second_fresh=again)
    assert result.same is False and "reference" in result.detail


def test_without_a_measure_of_variation_differing_answers_teach_nothing() -> None:
    embedder = HashEmbedder(dim=256)
    unknown = compare_answers(sample(CONTENT, "Hope this helps."), sample(OTHER, "Cheers."), embedder, 0.95)
    assert unknown.same is None
    assert compare_answers("Yes, it is.", "yes it is", embedder, 0.99).same is True


@pytest.mark.parametrize(("samples", "expected"), [
    ([0.9] * (BASELINE_MIN_SAMPLES - 1), None),
    ([0.9] * BASELINE_MIN_SAMPLES, 0.9),
    ([0.5] + [0.9] * 99, 0.9),
], ids=["too-few", "enough", "one-outlier"])
def test_a_namespace_baseline_is_a_low_quantile_of_fresh_vs_fresh_similarities(
        samples: list[float], expected: float | None) -> None:
    baselines = AnswerBaselines()
    for value in samples:
        baselines.add("ns", value)
    assert baselines.baseline("ns") == (None if expected is None else pytest.approx(expected))
    assert baselines.baseline("other") is None


def test_a_shadow_is_labelled_against_the_namespace_baseline() -> None:
    embedder = HashEmbedder(dim=256)
    fresh = sample(CONTENT, "Hope this helps.")
    varied = compare_answers(fresh, sample(CONTENT, "Cheers, and good luck."), embedder, 0.95, baseline=0.8)
    other = compare_answers(fresh, sample(OTHER, "Hope this helps."), embedder, 0.95, baseline=0.8)
    assert (varied.same, other.same) == (True, False)


@pytest.mark.parametrize(("fresh", "cached"), [
    pytest.param("To enable dark mode, open Settings, choose Display and switch the theme.",
                 "To disable dark mode, open Settings, choose Display and switch the theme.", id="prefix opposites"),
    pytest.param("Yes, you can delete the branch once it is merged: run git branch -d with its name.",
                 "No, you cannot delete the branch once it is merged: run git branch -d with its name.",
                 id="a negation"),
    pytest.param("The pharmacy on Main Street opens at 9 am on Sunday and closes at 5 pm.",
                 "The pharmacy on Main Street opens at 10 am on Sunday and closes at 5 pm.", id="another value"),
    pytest.param("Keep the door open while the paint dries, so the room stays ventilated.",
                 "Keep the door closed while the paint dries, so the room stays ventilated.", id="wordnet opposites"),
])
def test_answers_that_differ_as_contrasting_answers_do_get_no_label(fresh: str, cached: str) -> None:
    # An embedding calls them the same (one word of many); the comparison cannot tell them from a rewording.
    embedder = HashEmbedder(dim=256)
    assert contrast(fresh, cached) is not None
    result = compare_answers(fresh, cached, embedder, 0.5, second_fresh=fresh)
    assert result.same is None and "contrasting answers" in result.detail


def test_a_rewording_of_one_answer_is_no_contrast_and_is_labelled_same() -> None:
    fresh = "Sure. Open Settings, then Privacy, and clear your browsing history there."
    cached = "Open Settings, go to Privacy and clear the browsing history. Hope this helps!"
    assert contrast(fresh, cached) is None
    assert compare_answers(fresh, cached, HashEmbedder(dim=256), 0.3).same is True
