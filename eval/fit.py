"""`eval fit --traffic`: refit the judge on the decision log's labels, validate it on the most recent labels
against the judge in force, and (with `--apply`) put it in force for every replica only if it does better.

A logged decision reads as one judge input: the request's prompt, the candidate's prompt and their cosine.
The log keeps no rank, margin or context, so those features are missing for every traffic label (the judge
treats NaN as "not applicable"). Labels resolve by precedence (human > feedback > audit > explore > shadow).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.refit import refit_judge
from index.judge.features import JudgeInput
from index.judge.model import NEVER, Judge
from index.storage.decision_log import LabeledDecision

VALIDATION_SHARE = 0.3
MIN_LABELS = 20


class FitError(ValueError):
    """Too few or one-sided labels to fit or to validate."""


@dataclass(frozen=True)
class Validation:
    """One judge on the held-out labels at the budget: its bar, how many it would serve, right and wrong."""

    version: str
    bar: float | None  # None: no bar meets the budget (nothing served)
    served: int
    right: int
    wrong: int

    @property
    def wrong_over_served(self) -> float | None:
        return self.wrong / self.served if self.served else None

    def within(self, budget: float) -> bool:
        return self.served == 0 or self.wrong / self.served <= budget


@dataclass(frozen=True)
class FitReport:
    """What `eval fit --traffic` found and did."""

    namespace: str | None
    max_false_hit_rate: float
    trained_on: int
    validated_on: int
    candidate: Validation
    in_force: Validation
    better: bool
    reason: str
    applied: bool = False


def traffic_inputs(labeled: Sequence[LabeledDecision]) -> tuple[list[JudgeInput], list[bool]]:
    """Judge inputs and labels of the decisions that had a candidate, oldest first."""
    items, labels = [], []
    for item in labeled:
        decision = item.decision
        if decision.candidate_prompt is None:
            continue
        items.append(JudgeInput(decision.prompt, decision.candidate_prompt, decision.similarity))
        labels.append(item.correct)
    return items, labels


def validate(model: Judge, items: Sequence[JudgeInput], labels: Sequence[bool], budget: float) -> Validation:
    bar = model.cut(budget)
    if bar == NEVER or not items:
        return Validation(model.version, None if bar == NEVER else bar, 0, 0, 0)
    served = model.probabilities(items) >= bar
    truth = np.asarray(labels, dtype=bool)
    return Validation(model.version, bar, int(served.sum()), int((served & truth).sum()),
                      int((served & ~truth).sum()))


def fit_traffic(
    labeled: Sequence[LabeledDecision], prior: Judge, in_force: Judge, budget: float, seed: int = 0,
    namespace: str | None = None,
) -> tuple[Judge, FitReport]:
    """Refit on the older labels, validate both judges on the most recent VALIDATION_SHARE."""
    items, labels = traffic_inputs(labeled)
    if len(items) < MIN_LABELS:
        raise FitError(f"{len(items)} labelled decisions with a candidate; at least {MIN_LABELS} are needed")
    split = len(items) - max(1, round(len(items) * VALIDATION_SHARE))
    try:
        candidate = refit_judge(items[:split], labels[:split], prior, seed)
    except ValueError as exc:
        raise FitError(f"cannot refit on the {split} older labels: {exc}") from None
    new = validate(candidate, items[split:], labels[split:], budget)
    old = validate(in_force, items[split:], labels[split:], budget)
    better, reason = _compare(new, old, budget)
    report = FitReport(namespace, budget, split, len(items) - split, new, old, better, reason)
    return candidate, report


def _compare(new: Validation, old: Validation, budget: float) -> tuple[bool, str]:
    if not new.within(budget):
        return False, f"the refit errs on {new.wrong} of {new.served} recent labels it would serve (> {budget:g})"
    if not old.within(budget):
        return True, "the judge in force is over budget on the recent labels; the refit is within it"
    if new.right > old.right:
        return True, f"the refit serves {new.right} right answers where the judge in force serves {old.right}"
    return False, f"the refit serves {new.right} right answers, the judge in force {old.right}: no gain"
