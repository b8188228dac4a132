"""`eval sweep`: score every threshold on a labelled dataset or on the gateway's own labelled
decisions (registered on the eval app by `eval.cli`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from eval.cli_common import DecisionOption, EmbedderOption, JsonOption, StagesOption
from eval.cli_common import check_fraction as _check_fraction
from eval.cli_common import err as _err
from eval.cli_common import fail as _fail
from eval.cli_common import out as _out
from eval.cli_common import policy_and_stages as _policy
from eval.cli_common import print_table as _print_table
from eval.cli_common import progress as _progress
from eval.cli_common import settings_from_env as _settings
from eval.cli_common import thresholds as _thresholds
from eval.datasets import DatasetError, DatasetFormat, load_pairs
from eval.embedding import EmbedderName, make_embedder
from index.embedding.embedder import Embedder
from index.errors import StoreUnavailable
from index.guards.stages import Stage
from index.match.policy import DecisionMode, MatchPolicy
from index.storage.entries import display_url

if TYPE_CHECKING:
    from eval.sweep import ScoredPair, SweepConfig, SweepReport
    from eval.traffic import TrafficReport

OptionalFile = Annotated[Path | None, typer.Option(
    exists=True, dir_okay=False, readable=True, help="Labelled pairs (JSONL, TSV or CSV) to sweep.")]
DEFAULT_SWEEP_THRESHOLDS = "0.70:0.99:0.01"


def sweep(
    dataset: OptionalFile = None,
    traffic: Annotated[bool, typer.Option(
        "--traffic", help="Sweep the gateway's labelled decisions (its decision log) instead of a dataset.")] = False,
    threshold: Annotated[str, typer.Option(
        help="Min cosine similarity: 0.85, 0.70:0.99:0.01 or a,b,c")] = DEFAULT_SWEEP_THRESHOLDS,
    fmt: Annotated[DatasetFormat, typer.Option("--format", help="Dataset encoding.")] = DatasetFormat.AUTO,
    stages: StagesOption = None,
    decision: DecisionOption = None,
    compare: Annotated[bool, typer.Option("--compare", help="Sweep without stages and with them.")] = False,
    max_false_hit_rate: Annotated[float | None, typer.Option(
        help="Pick the threshold with the best hit rate whose false-hit upper bound is at most this."),
    ] = None,
    confidence: Annotated[float, typer.Option(help="Confidence of the Wilson bound.")] = 0.95,
    as_json: JsonOption = False,
    out: Annotated[Path | None, typer.Option(
        file_okay=False, help="Write CSV, JSON, PNG and HTML here (default: reports/sweep-<dataset> or "
        "reports/traffic).")] = None,
    embedder: EmbedderOption = EmbedderName.MINILM_ONNX,
    database_url: Annotated[str | None, typer.Option(
        help="--traffic: the gateway's SQLAlchemy URL. Default: DEJA_DATABASE_URL, else the SQLite file in "
        "--data-dir.")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        file_okay=False, help="--traffic: the gateway's data folder (default DEJA_DATA_DIR), holding its SQLite "
        "file when no database URL is given.")] = None,
    namespace: Annotated[str | None, typer.Option(
        help="--traffic: only this namespace (as logged: the hash of an API key).")] = None,
    api: Annotated[str | None, typer.Option(
        help="--traffic: only decisions made for this API, as the gateway logs it: chat (/v1/chat/completions), "
        "messages (Anthropic /v1/messages) or responses (/v1/responses).")] = None,
    apply: Annotated[bool, typer.Option(
        "--apply", help="--traffic: store each chosen threshold for its namespace (all namespaces: *); running "
        "gateways use it within DEJA_SYNC_INTERVAL_SECONDS. Needs --max-false-hit-rate.")] = False,
) -> None:
    """Score every threshold through the gateway's decision rule: on a labelled pairs dataset (--dataset), or
    on the gateway's own labelled decisions (--traffic), overall and per namespace."""
    from eval.sweep import SweepConfig

    thresholds = _thresholds(threshold)
    _check_fraction(max_false_hit_rate, "--max-false-hit-rate")
    _check_fraction(confidence, "--confidence")
    _check_source(dataset, traffic, apply, namespace, max_false_hit_rate)
    _check_api(traffic, apply, api)
    overrides = {k: v for k, v in (("database_url", database_url), ("data_dir", data_dir)) if v is not None}
    settings = _settings(**overrides)
    gateway_policy, chosen = _policy(settings, stages, decision)
    # Guarded mode serves by the same cosine threshold and rule stages; its learned veto and same-content
    # override are measured by `eval panel` and `eval replay`, which run the whole decision.
    policy = dataclasses.replace(gateway_policy, decision=DecisionMode.THRESHOLD)
    output = _Output(as_json, out or Path("reports") / (f"sweep-{dataset.stem}" if dataset else "traffic"))
    config = SweepConfig(thresholds, _stage_sets(chosen, compare), max_false_hit_rate, confidence, policy)
    if dataset is not None:
        _sweep_dataset(dataset, fmt, embedder, config, output)
        if gateway_policy.guarded and not as_json:
            typer.echo(f"\nThe gateway decides by the guarded rule ({gateway_policy.describe()}); the sweep above is "
                       "its cosine threshold and rule stages. `eval panel` and `eval replay` run the whole decision "
                       "(same-content override, order and contrast gates, learned veto).")
        return
    _sweep_traffic(_TrafficSource(settings.sql_url, namespace, apply, api), config, output)


@dataclass(frozen=True)
class _Output:
    """Where a sweep goes: stdout as tables or JSON, and optionally report files in a folder."""

    as_json: bool
    out: Path | None


@dataclass(frozen=True)
class _TrafficSource:
    """Which decision log to sweep (`namespace` None: every namespace; `api` None: every API) and whether to
    store the choices."""

    url: str
    namespace: str | None
    apply: bool
    api: str | None = None


def _check_source(
    dataset: Path | None, traffic: bool, apply: bool, namespace: str | None, target: float | None
) -> None:
    if (dataset is None) == (not traffic):
        raise typer.BadParameter("give either --dataset FILE or --traffic", param_hint="--dataset / --traffic")
    if not traffic and (apply or namespace is not None):
        raise typer.BadParameter("--apply and --namespace need --traffic", param_hint="--traffic")
    if apply and target is None:
        raise typer.BadParameter("--apply needs --max-false-hit-rate to choose by", param_hint="--apply")


def _check_api(traffic: bool, apply: bool, api: str | None) -> None:
    if api is None:
        return
    if not traffic:
        raise typer.BadParameter("--api needs --traffic", param_hint="--api")
    if apply:  # a namespace's threshold serves every API it calls: it is chosen from all of them
        raise typer.BadParameter("--apply chooses from every API's labels: drop --api", param_hint="--api")


def _sweep_dataset(
    dataset: Path, fmt: DatasetFormat, embedder: EmbedderName, config: SweepConfig, output: _Output
) -> None:
    from eval.report import to_json
    from eval.sweep import build_report

    model, scored = _scored_pairs(dataset, fmt, embedder, config.policy)
    report = build_report(dataset.name, model.model_id, scored, config)
    if output.out is not None:
        _write_files(report, output.out, config.max_false_hit_rate)
    if output.as_json:
        typer.echo(to_json(report))
    else:
        _print_sweep(report)


def _scored_pairs(
    dataset: Path, fmt: DatasetFormat, embedder: EmbedderName, policy: MatchPolicy
) -> tuple[Embedder, tuple[ScoredPair, ...]]:
    """The dataset's labelled pairs with their similarities under `embedder` (exits 1 on a bad dataset)."""
    from eval.sweep import score_pairs, texts_to_embed

    try:
        pairs = load_pairs(dataset, fmt)
    except DatasetError as exc:
        _fail(str(exc))
    model = make_embedder(embedder)
    with _progress("embedding", len(texts_to_embed(pairs))) as advance:
        return model, score_pairs(pairs, model, progress=advance, context_match=policy.context_match)


def _sweep_traffic(source: _TrafficSource, config: SweepConfig, output: _Output) -> None:
    from eval.traffic import ALL_NAMESPACES, apply_choices, decision_log, to_json, traffic_report

    try:
        with decision_log(source.url) as log:
            labeled = log.labeled(source.namespace, source.api)
            report = traffic_report(labeled, config, source.url, source.namespace, source.api)
            if source.apply:
                report = apply_choices(log, report, time.time())
    except StoreUnavailable as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]  # driver errors run over several lines
        _fail(f"cannot use the decision log at {display_url(source.url)}: {reason}")
    if not labeled:
        _err().print("note: no labelled decisions yet; labels come from shadows of near misses, audits of "
                     "DEJA_AUDIT_RATE of semantic hits, feedback and the labelling page", markup=False)
    if output.out is not None:
        for item in report.sweeps:
            folder = output.out if item.namespace == ALL_NAMESPACES else output.out / item.namespace
            _write_files(item.report, folder, config.max_false_hit_rate)
    if output.as_json:
        typer.echo(to_json(report))
    else:
        _print_traffic(report, config.max_false_hit_rate)


def _print_traffic(report: TrafficReport, target: float | None) -> None:
    from eval.traffic import applied_line, sources_line

    for item in report.sweeps:
        _print_sweep(item.report, [sources_line(item)])
        _out().print()
    for applied in report.applied:
        assert target is not None  # --apply is refused without a target
        _out().print(applied_line(applied, target), markup=False)


def _stage_sets(chosen: tuple[Stage, ...], compare: bool) -> tuple[tuple[Stage, ...], ...]:
    if not compare:
        return (chosen,)
    if not chosen:
        _err().print("note: --compare has no stages to compare against; showing one sweep")
        return (chosen,)
    return ((), chosen)


def _write_files(report: SweepReport, out: Path, target: float | None) -> None:
    from eval.report import PLOTS_MISSING, plots_available, write_outputs

    try:
        paths = write_outputs(report, out, target)
    except OSError as exc:
        _fail(f"cannot write to {out}: {exc.strerror or exc}")
    for path in paths:
        _err().print(f"wrote {path}", markup=False)
    if not plots_available():
        _err().print(f"note: {PLOTS_MISSING}", markup=False, soft_wrap=True)


def _print_sweep(report: SweepReport, notes: Sequence[str] = ()) -> None:
    from eval.tables import choice_line, summary_line, sweep_tables

    console = _out()
    console.print(summary_line(report), markup=False)
    for note in notes:
        console.print(note, markup=False)
    for table in sweep_tables(report):
        _print_table(console, table)
    for choice in report.choices:
        console.print(choice_line(choice), markup=False)
