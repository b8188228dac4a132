"""`eval replay --learn`: the learning replay beside fixed thresholds, each a row of halves, and the comparison the
threshold-learning issue checks: the learning gateway's second half against the best fixed threshold's (the one
that serves most correct answers over the whole replay within the budget, in hindsight)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval.cli_common import out, print_table, settings_from_env
from eval.cli_common import progress as _progress
from eval.datasets import StreamRequest
from eval.learn import LearnConfig, LearnReport, fixed, run_learn
from eval.tables import TableData, pct
from index.embedding.embedder import Embedder


@dataclass(frozen=True)
class LearnComparison:
    """The learning replay, the fixed-threshold replays, and the best fixed threshold within the budget."""

    budget: float
    learning: LearnReport
    fixed: tuple[LearnReport, ...]
    best: LearnReport | None


def _whole(report: LearnReport) -> tuple[float, float]:
    f, s = report.first, report.second
    served = f.served + s.served
    return (f.correct + s.correct) / max(1, report.requests), (f.wrong + s.wrong) / served if served else 0.0


def compare(name: str, requests: Sequence[StreamRequest], embedder: Embedder, config: LearnConfig,
            thresholds: Sequence[float]) -> LearnComparison:
    learning = run_learn(name, requests, embedder, config)
    rows = tuple(run_learn(name, requests, embedder, fixed(config, t)) for t in thresholds)
    budget = config.policy.max_false_hit_rate
    within = [r for r in rows if _whole(r)[1] <= budget]
    best = max(within, key=lambda r: _whole(r)[0]) if within else None
    return LearnComparison(budget, learning, rows, best)


def comparison_table(result: LearnComparison) -> TableData:
    headers = ("replay", "threshold\nat end", "1st half:\ncorrect", "1st half:\nwrong ÷ served", "2nd half:\ncorrect",
               "2nd half:\nwrong ÷ served", "whole:\ncorrect", "whole:\nwrong ÷ served", "labels", "label\ncalls")
    cells = []
    for report in (result.learning, *result.fixed):
        tag = "learning" if report.learned else f"fixed {report.prior:g}"
        if report is result.best:
            tag += " (best)"
        whole = _whole(report)
        labels = ", ".join(f"{n} {k}" for k, n in sorted(report.labels.items())) or "-"
        cells.append((tag, f"{report.threshold:g}", pct(report.first.correct_rate), pct(report.first.wrong_per_served),
                      pct(report.second.correct_rate), pct(report.second.wrong_per_served), pct(whole[0]),
                      pct(whole[1]), labels, str(report.label_calls)))
    return TableData("learning replay beside fixed thresholds (correct: % of requests)", headers, tuple(cells))


def print_learn(name: str, requests: Sequence[StreamRequest], model: Embedder, thresholds: Sequence[float], seed: int,
                answer_variation: bool, labeller_error: float | None, as_json: bool) -> None:
    import dataclasses
    import json

    from eval.embedding import MemoEmbedder, embed_unique, unique_texts

    settings = settings_from_env()
    # The gateway of DEJA_*, its learner on (`--learn` replays one that learns).
    config = dataclasses.replace(
        LearnConfig.from_settings(settings, answer_variation=answer_variation, labeller_error=labeller_error,
                                  seed=seed), learn=True)
    with _progress("embedding", len(unique_texts(r.prompt for r in requests))) as advance:
        memo = MemoEmbedder(model, embed_unique(model, (r.prompt for r in requests), progress=advance))
    result = compare(name, requests, memo, config, thresholds)
    if as_json:
        print(json.dumps(dataclasses.asdict(result), indent=2, ensure_ascii=False))
        return
    console = out()
    learning, best = result.learning, result.best
    verdict = "no fixed threshold kept the budget" if best is None else (
        f"second half {pct(learning.second.correct_rate)} correct at {pct(learning.second.wrong_per_served)} wrong "
        f"÷ served vs the best fixed ({best.prior:g}) {pct(best.second.correct_rate)} at "
        f"{pct(best.second.wrong_per_served)}")
    labeller = learning.labeller + (", answers that vary" if answer_variation else ", the same answer every call")
    console.print(f"{name}: {len(requests)} requests · budget {result.budget:g} · seed {seed} · labels by "
                  f"{labeller} · {verdict}", markup=False)
    print_table(console, comparison_table(result))
