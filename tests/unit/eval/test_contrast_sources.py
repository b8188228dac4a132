"""The contrast loaders read the public sets where they lie (`DEJA_SHARED_DATASETS`, default `../shared/datasets`
beside the checkout); without them these tests are skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.contrast_sources import CONTRAST_LOADERS, SAMPLE, Loader, contrast_sources
from eval.sources import Origin

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("DEJA_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"the public sets are not at {SHARED}")

# Kinds each loader must yield, and whether they are same-answer.
KNOWN: dict[str, dict[str, bool]] = {
    "CheckList contrasts": {"negation_should": False, "first_name": False, "asymmetric_order": False,
                            "comparison_order": False, "same:symmetric_order": True, "same:passive": True},
    "CANNOT negations": {"negation": False, "negation_rewrite": False},
    "SemAntoNeg": {"antonym_negation_paraphrase": True, "negation": False, "antonym": False},
    "Breaking NLI": {"antonyms": False, "cardinals": False, "countries": False, "synonym": True},
    "CondaQA edits": {"paraphrase": True, "scope": False, "affirmative": False},
}


@needs_shared
@pytest.mark.parametrize(("name", "loader"), CONTRAST_LOADERS, ids=[n for n, _ in CONTRAST_LOADERS])
def test_each_loader_gives_both_parts_with_labelled_contrasts(name: str, loader: Loader) -> None:
    sources = loader(SHARED, 0)
    assert sorted(s.part for s in sources) == ["dev", "test"]
    for source in sources:
        assert source.name == name and source.origin is Origin.PUBLIC and not source.trace
        assert 0 < len(source.pairs) <= SAMPLE
        assert any(not p.same_answer for p in source.pairs), f"{name} {source.part}: no must-not pairs"
        labels = {p.kind: p.same_answer for p in source.pairs}
        for kind, same in KNOWN[name].items():
            assert labels.get(kind) is same, f"{name} {source.part}: {kind}"
        for pair in source.pairs:
            assert pair.a.prompt.strip() != pair.b.prompt.strip(), pair.id
            assert pair.kind.startswith("same:") == (name == "CheckList contrasts" and pair.same_answer)
        assert len({p.id for p in source.pairs}) == len(source.pairs)


@needs_shared
def test_the_parts_do_not_share_pairs_and_sampling_is_seeded() -> None:
    found, missing = contrast_sources(SHARED)
    assert not missing
    again, _ = contrast_sources(SHARED, seed=0)
    assert [p.id for s in found for p in s.pairs] == [p.id for s in again for p in s.pairs]
    for name, _ in CONTRAST_LOADERS:
        dev, test = ({p.id for s in found if s.name == name and s.part == part for p in s.pairs}
                     for part in ("dev", "test"))
        assert not dev & test, name


def test_an_absent_folder_gives_notes_not_errors(tmp_path: Path) -> None:
    found, missing = contrast_sources(tmp_path)
    assert not found
    assert len(missing) == len(CONTRAST_LOADERS)
