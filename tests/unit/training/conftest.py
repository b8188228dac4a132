"""Fixtures of the training tests: no pair-model file is read."""

from __future__ import annotations

import pytest

from training.judge import pair_model


@pytest.fixture(autouse=True)
def _no_model_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit suite loads no model file: the pair model is a fake through its seam
    (`tests.unit.training.judges.FixedPair`); a test that reaches the real one fails here."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a unit test loaded the pair model's file; pass tests.unit.training.judges.FixedPair")

    monkeypatch.setattr(pair_model.PairModel, "__init__", refuse)

