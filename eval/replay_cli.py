"""`eval replay`: replay a request trace through the real cache pipeline, with the learning and vCache variants
(registered on the eval app by `eval.cli`)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from eval.cli_common import EmbedderOption, JsonOption, StagesOption
from eval.cli_common import budgets as _budgets
from eval.cli_common import fail as _fail
from eval.cli_common import policy_and_stages as _policy
from eval.cli_common import print_report as _print_report
from eval.cli_common import progress as _progress
from eval.cli_common import settings_from_env as _settings
from eval.cli_common import thresholds as _thresholds
from eval.datasets import DatasetError, StreamRequest, load_clusters, load_stream
from eval.embedding import EmbedderName, make_embedder
from index.embedding.embedder import Embedder
from index.match.policy import DecisionMode

OptionalTrace = Annotated[Path | None, typer.Option(
    exists=True, dir_okay=False, readable=True, help="Request trace to replay (JSONL: seq, intent, prompt[, part]).")]
DEFAULT_REPLAY_THRESHOLD = "0.85"


class ReplayDecision(StrEnum):
    """How `eval replay` decides a semantic hit. `vcache` is an eval-only baseline; the gateway never runs it."""

    GUARDED = "guarded"
    THRESHOLD = "threshold"
    VCACHE = "vcache"


def replay(
    stream: OptionalTrace = None,
    clusters: Annotated[Path | None, typer.Option(
        exists=True, dir_okay=False, readable=True,
        help="Replay question clusters instead (JSON list of lists sharing an answer, e.g. ../shared/datasets/"
        "gptcache_osschat_clusters/cluster_user_questions.json): each cluster is an intent, each question is "
        "asked once in a seeded order.")] = None,
    part: Annotated[str | None, typer.Option(
        help="Replay only the requests of this split (dev or test) of a trace that has a `part` field.")] = None,
    limit: Annotated[int | None, typer.Option(
        min=1, help="Replay only the first N requests (of the split, in the trace's or the seeded cluster order).")
    ] = None,
    threshold: Annotated[str | None, typer.Option(
        help="Min cosine similarity: 0.85, 0.70:0.95:0.05 or a,b,c (default 0.85; guarded: the gateway's)",
        show_default=False)] = None,
    decision: Annotated[ReplayDecision | None, typer.Option(
        help="guarded: the gateway's whole decision; threshold: the gateway's cosine + stages; vcache: the "
        "vCache baseline (per-entry learned threshold, error bound delta = --budget). Default: DEJA_DECISION.",
        show_default=False)] = None,
    budget: Annotated[str | None, typer.Option(
        "--budget", "--budgets", help="--decision vcache or --learn: the false-hit budgets (vCache: error bounds "
        "delta) to replay at, e.g. 0.02 or 0.01,0.02,0.05. Default: DEJA_MAX_FALSE_HIT_RATE.",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of random exploration and audits (vcache, --learn).")] = 0,
    learn: Annotated[bool, typer.Option(
        "--learn", help="Replay a live gateway that learns its namespace's threshold from the evidence it gathers "
        "(shadow labels of near misses, audits at DEJA_AUDIT_RATE within DEJA_AUDIT_CALLS_PER_HOUR), at the "
        "default decision from a cold cache, beside fixed thresholds (--compare): each row's two halves.")] = False,
    compare: Annotated[str, typer.Option(
        "--compare", help="--learn: fixed thresholds replayed beside it (the best within the budget in hindsight "
        "is marked).")] = "0.80:0.92:0.02",
    answer_variation: Annotated[bool, typer.Option(
        "--answer-variation/--same-answers", help="--learn: the stub upstream words one answer differently each "
        "call (the same content, a different closing sentence), as a sampled model does.")] = True,
    labeller_error: Annotated[float | None, typer.Option(
        "--labeller-error", help="--learn: labels come from a label model wrong this share of the time (and "
        "configured with it, DEJA_LABEL_MODEL_ERROR_RATE); default: no label model, answers are compared.",
        metavar="RATE")] = None,
    stages: StagesOption = None,
    as_json: JsonOption = False,
    embedder: EmbedderOption = EmbedderName.MINILM_ONNX,
) -> None:
    """Replay a request trace through the real cache pipeline against a stub upstream answering per intent."""
    from eval.embedding import MemoEmbedder, embed_unique, unique_texts
    from eval.replay import ReplayConfig, run_replay
    from eval.tables import replay_summary, replay_table

    name, requests = _trace(stream, clusters, part)
    if limit is not None:
        name, requests = f"{name}, first {min(limit, len(requests))}", requests[:limit]
    settings = _settings()
    if learn:
        from eval.learn_cli import print_learn

        if labeller_error is not None and not 0.0 <= labeller_error < 0.5:
            raise typer.BadParameter(f"must be in [0, 0.5), got {labeller_error}", param_hint="--labeller-error")
        print_learn(name, requests, make_embedder(embedder), _thresholds(compare), seed, answer_variation,
                    labeller_error, as_json)
        return
    if decision is ReplayDecision.VCACHE:
        deltas = _budgets(budget, settings.policy())
        model = make_embedder(embedder)
        with _progress("embedding", len(unique_texts(r.prompt for r in requests))) as advance:
            memo = MemoEmbedder(model, embed_unique(model, (r.prompt for r in requests), progress=advance))
        _print_vcache(name, requests, memo, deltas, seed, as_json)
        return
    mode = None if decision is None else DecisionMode(decision.value)
    policy, chosen = _policy(settings, stages, mode)
    if policy.guarded:
        points = (policy.min_similarity,) if threshold is None else _thresholds(threshold)
        config = ReplayConfig(points, chosen, policy=policy)
    else:
        config = ReplayConfig(_thresholds(threshold or DEFAULT_REPLAY_THRESHOLD), chosen, policy=policy)
    model = make_embedder(embedder)
    with _progress("embedding", len(unique_texts(r.prompt for r in requests))) as advance:
        report = run_replay(name, requests, model, config, advance)
    _print_report(report, as_json, replay_summary(report), replay_table(report))


def _print_vcache(
    name: str, requests: Sequence[StreamRequest], model: Embedder, deltas: Sequence[float], seed: int,
    as_json: bool,
) -> None:
    from eval.tables import vcache_table
    from eval.vcache import run_vcache

    report = run_vcache(name, requests, model, deltas, seed)
    summary = (f"{name}: {report.requests} requests, {report.intents} intents · vCache baseline "
               f"(seed {seed}) · embedder {report.embedder}")
    _print_report(report, as_json, summary, vcache_table(report.rows))


def _trace(stream: Path | None, clusters: Path | None, part: str | None) -> tuple[str, tuple[StreamRequest, ...]]:
    """The requests to replay and the name reports give them."""
    if (stream is None) == (clusters is None):
        raise typer.BadParameter("give either --stream FILE or --clusters FILE", param_hint="--stream / --clusters")
    if part is not None and part not in ("dev", "test"):
        raise typer.BadParameter(f"must be dev or test, got {part!r}", param_hint="--part")
    source = stream if stream is not None else clusters
    assert source is not None
    try:
        requests = load_stream(source) if stream is not None else load_clusters(source)
    except DatasetError as exc:
        _fail(str(exc))
    if part is None:
        return source.name, requests
    chosen = tuple(r for r in requests if r.part == part)
    if not chosen:
        _fail(f"{source.name} has no requests in part {part!r} (its lines need a \"part\" field)")
    return f"{source.name} ({part})", chosen
