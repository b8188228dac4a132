"""`eval` commands (`python -m eval ...`, mounted as `deja eval ...`): thin bodies over the eval package.

Results go to stdout (tables or `--json`); progress and notes go to stderr. Failures exit 1 with one line.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from eval.cli_common import err as _err
from eval.cli_common import fail as _fail
from eval.cli_common import load_judge as _load_judge
from eval.cli_common import load_pair as _load_pair
from eval.cli_common import out as _out
from eval.cli_common import print_table as _print_table
from eval.cli_common import settings_from_env as _settings
from eval.datasets import DatasetError, DatasetFormat, StreamRequest, load_clusters, load_pairs, load_stream
from eval.embedding import EmbedderName, make_embedder
from eval.panel_cli import panel
from eval.thresholds import parse_thresholds
from index.embedding.embedder import Embedder
from index.errors import StoreUnavailable
from index.guards.registry import build_stages
from index.guards.stages import Stage, parse_stage_names
from index.judge.model import Judge
from index.match.judged import PairReader
from index.match.policy import DEFAULT_MAX_FALSE_HIT_RATE, DecisionMode, MatchPolicy
from index.settings import Settings
from index.storage.entries import display_url

if TYPE_CHECKING:
    from eval.learn import LearnConfig, LearnReport
    from eval.replay import ReplayReport
    from eval.sweep import ScoredPair, SweepConfig, SweepReport
    from eval.tables import TableData
    from eval.traffic import TrafficReport
    from eval.vcache import VCacheReport

app = typer.Typer(help="Measure false hits and choose the similarity threshold from evidence.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

OptionalTrace = Annotated[Path | None, typer.Option(
    exists=True, dir_okay=False, readable=True, help="Request trace to replay (JSONL: seq, intent, prompt[, part]).")]
OptionalFile = Annotated[Path | None, typer.Option(
    exists=True, dir_okay=False, readable=True, help="Labelled pairs (JSONL, TSV or CSV) to sweep.")]
StagesOption = Annotated[str | None, typer.Option(
    "--stages", help="Verification stages: none, or a list like polarity,values. Default: the gateway's, from "
    "DEJA_GUARD_POLARITY, DEJA_GUARD_VALUES and DEJA_VERIFIER.")]
EmbedderOption = Annotated[EmbedderName, typer.Option(
    help="minilm-onnx (what the gateway runs by default, DEJA_EMBEDDER=onnx), minilm (torch, DEJA_EMBEDDER=torch) "
    "or hash (bag-of-words baseline, no model).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the whole report as JSON.")]
DecisionOption = Annotated[DecisionMode | None, typer.Option(
    help="judge (calibrated probability against a false-hit budget) or threshold (cosine + stages). Default: "
    "DEJA_DECISION.", show_default=False)]
BudgetsOption = Annotated[str | None, typer.Option(
    "--budgets", "--budget", help="--decision judge: false-hit budgets to sweep, e.g. 0.01,0.02,0.05. Default: "
    "DEJA_MAX_FALSE_HIT_RATE.", show_default=False)]
DEFAULT_SWEEP_THRESHOLDS = "0.70:0.99:0.01"
DEFAULT_REPLAY_THRESHOLD = "0.85"


class ReplayDecision(StrEnum):
    """How `eval replay` decides a semantic hit. `vcache` is an eval-only baseline; the gateway never runs it."""

    GUARDED = "guarded"
    JUDGE = "judge"
    THRESHOLD = "threshold"
    VCACHE = "vcache"








def _thresholds(spec: str) -> tuple[float, ...]:
    try:
        return parse_thresholds(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--threshold") from None




def _policy(settings: Settings, spec: str | None, decision: DecisionMode | None = None,
            ) -> tuple[MatchPolicy, tuple[Stage, ...]]:
    """The gateway's policy (in `decision` mode when given), with `--stages` in place of its stages when given,
    and those stages built."""
    if decision is not None and decision is not settings.decision:
        settings = settings.model_copy(update={"decision": decision})
    policy = settings.policy()
    if spec is not None:
        try:
            policy = dataclasses.replace(policy, stages=parse_stage_names(spec))
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--stages") from None
    return policy, build_stages(policy.stages)


@contextmanager
def _progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=_err()) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def _print_report(
    report: ReplayReport | LearnReport | VCacheReport, as_json: bool, summary: str, data: TableData
) -> None:
    """`--json`: the report as JSON; otherwise a one-line summary over the table."""
    from eval.report import to_json

    if as_json:
        typer.echo(to_json(report))
        return
    console = _out()
    console.print(summary, markup=False)
    _print_table(console, data)




@app.command()
def sweep(
    dataset: OptionalFile = None,
    traffic: Annotated[bool, typer.Option(
        "--traffic", help="Sweep the gateway's labelled decisions (its decision log) instead of a dataset.")] = False,
    threshold: Annotated[str, typer.Option(
        help="Min cosine similarity: 0.85, 0.70:0.99:0.01 or a,b,c (judge mode: the candidate floor, one value; "
        "default the gateway's)")] = DEFAULT_SWEEP_THRESHOLDS,
    fmt: Annotated[DatasetFormat, typer.Option("--format", help="Dataset encoding.")] = DatasetFormat.AUTO,
    stages: StagesOption = None,
    decision: DecisionOption = None,
    budgets: BudgetsOption = None,
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
    if apply and (decision or settings.decision) is DecisionMode.JUDGE:
        raise typer.BadParameter(
            "in judge mode the gateway serves by the judge's bar, not by a cosine threshold: `eval fit --traffic "
            "--apply` refits and applies the judge from the same labels (or sweep with --decision threshold)",
            param_hint="--apply")
    judge_policy, chosen = _policy(settings, stages, decision)
    # A range of thresholds (or the decision log) is swept under the cosine rule whatever the mode; the judge's
    # own points are its budgets, shown beside a dataset's threshold sweep in judge mode.
    ranged = threshold != DEFAULT_SWEEP_THRESHOLDS and len(thresholds) > 1
    policy = judge_policy
    if judge_policy.guarded or (judge_policy.judged and (ranged or traffic)):
        # Guarded mode serves by the same cosine threshold and rule stages; its learned veto and same-content
        # override are measured by `eval panel` and `eval replay`, which run the whole decision.
        policy = dataclasses.replace(judge_policy, decision=DecisionMode.THRESHOLD)
    output = _Output(as_json, out or Path("reports") / (f"sweep-{dataset.stem}" if dataset else "traffic"))
    if policy.judged:
        assert dataset is not None
        floor = (policy if threshold == DEFAULT_SWEEP_THRESHOLDS
                 else dataclasses.replace(policy, candidate_floor=thresholds[0]))
        _sweep_judge(dataset, fmt, embedder, floor, _budgets(budgets, floor), output, confidence,
                     _load_judge(settings), chosen, _load_pair(settings))
        return
    config = SweepConfig(thresholds, _stage_sets(chosen, compare), max_false_hit_rate, confidence, policy)
    if dataset is not None:
        _sweep_dataset(dataset, fmt, embedder, config, output)
        if judge_policy.judged and not as_json:
            typer.echo("\nThe gateway decides by the judge (DEJA_DECISION=judge); its points, one per budget:")
            _sweep_judge(dataset, fmt, embedder, judge_policy, _budgets(budgets, judge_policy),
                         _Output(False, None), confidence, _load_judge(settings), chosen, _load_pair(settings))
        elif judge_policy.guarded and not as_json:
            typer.echo(f"\nThe gateway decides by the guarded rule ({judge_policy.describe()}); the sweep above is "
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






def _sweep_judge(dataset: Path, fmt: DatasetFormat, embedder: EmbedderName, policy: MatchPolicy,
                 budgets: tuple[float, ...], output: _Output, confidence: float, model: Judge,
                 stages: tuple[Stage, ...], pair: PairReader | None = None) -> None:
    """`eval sweep --decision judge`: one row per budget, through the gateway's judge rule."""
    from eval.judge_sweep import judge_scores, run_judge_sweep
    from eval.metrics import roc_auc
    from eval.report import to_json
    from eval.sweep import SweepConfig, build_report

    encoder, scored = _scored_pairs(dataset, fmt, embedder, policy)
    report = build_report(dataset.name, encoder.model_id, scored, SweepConfig((), (), None, confidence, policy))
    sweep = run_judge_sweep(scored, model, budgets, policy, confidence, stages, pair)
    report = dataclasses.replace(report, sweeps=(sweep,))
    scorer = model if pair is None else pair
    auc = roc_auc([item.pair.same_answer for item in scored], judge_scores(scored, model))
    reader = "" if pair is None else f" + pair model {pair.version} (bars are the stack's)"
    note = (f"judge {model.version}{reader} · candidate floor {policy.candidate_floor:g} · ROC-AUC of the "
            f"judge's P(same) {'-' if auc is None else f'{auc:.3f}'} · rows are false-hit budgets (bar = "
            + ", ".join(f"{b:g}: {scorer.cut(b):.3f}" for b in budgets) + ") · conversation pairs: cosine ≥ "
            f"{policy.conversation_threshold:g} + stages {','.join(s.name for s in stages) or 'none'}")
    if output.out is not None:
        _write_files(report, output.out, None)
    if output.as_json:
        typer.echo(to_json(report))
    else:
        _print_sweep(report, (note,))


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
        _err().print("note: no labelled decisions yet; labels come from shadows of near-misses, audits of "
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


def _check_fraction(value: float | None, option: str) -> None:
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must be in (0, 1), got {value}", param_hint=option)


def _stage_sets(chosen: tuple[Stage, ...], compare: bool) -> tuple[tuple[Stage, ...], ...]:
    if not compare:
        return (chosen,)
    if not chosen:
        _err().print("note: --compare has no stages to compare against; showing one sweep")
        return (chosen,)
    return ((), chosen)


def _write_files(report: SweepReport, out: Path, target: float | None) -> None:
    from eval.report import write_outputs

    try:
        paths = write_outputs(report, out, target)
    except OSError as exc:
        _fail(f"cannot write to {out}: {exc.strerror or exc}")
    for path in paths:
        _err().print(f"wrote {path}", markup=False)


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


@app.command()
def replay(
    stream: OptionalTrace = None,
    clusters: Annotated[Path | None, typer.Option(
        exists=True, dir_okay=False, readable=True,
        help="Replay question clusters instead (JSON list of lists sharing an answer, e.g. ../shared/datasets/"
        "gptcache_osschat_clusters/cluster_user_questions.json): each cluster is an intent, each question is "
        "asked once in a seeded order.")] = None,
    part: Annotated[str | None, typer.Option(
        help="Replay only the requests of this split (dev or test) of a trace that has a `part` field.")] = None,
    threshold: Annotated[str | None, typer.Option(
        help="Min cosine similarity: 0.85, 0.70:0.95:0.05 or a,b,c (default 0.85; judge mode: the candidate "
        "floor, default the gateway's)", show_default=False)] = None,
    decision: Annotated[ReplayDecision | None, typer.Option(
        help="judge: the gateway's judge at each --budget; threshold: the gateway's cosine + stages; vcache: the "
        "vCache baseline (per-entry learned threshold, error bound delta = --budget). Default: DEJA_DECISION.",
        show_default=False)] = None,
    budget: Annotated[str | None, typer.Option(
        "--budget", "--budgets", help="--decision judge or vcache: the false-hit budgets (vCache: error bounds "
        "delta) to replay at, e.g. 0.02 or 0.01,0.02,0.05. Default: DEJA_MAX_FALSE_HIT_RATE.",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of random exploration and audits (vcache, --learn).")] = 0,
    learn: Annotated[float | None, typer.Option(
        "--learn", help="Simulate a deployment that learns: the first FRACTION of the trace is served by the "
        "shipped judge and labelled only as a gateway would (exploration at DEJA_EXPLORE_RATE, shadows of "
        "near-misses, audits at DEJA_AUDIT_RATE and denser where riskier, up to DEJA_AUDIT_CALLS_PER_HOUR), "
        "then the judge is refitted and serves the rest. Throughout, the bar follows the audits and remembered "
        "differences veto their recurrences, as on a gateway. The budget is the first --budget.",
        metavar="FRACTION")] = None,
    answer_variation: Annotated[bool, typer.Option(
        "--answer-variation", help="--learn: the stub upstream words one answer differently each call (the same "
        "content, a different closing sentence), as a sampled model does.")] = False,
    labeller_error: Annotated[float | None, typer.Option(
        "--labeller-error", help="--learn: labels come from an LLM label judge wrong this share of the time (and "
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
    settings = _settings()
    if learn is not None:
        _check_fraction(learn, "--learn")
        first = _budgets(budget, settings.policy())[0]
        if labeller_error is not None and not 0.0 <= labeller_error < 0.5:
            raise typer.BadParameter(f"must be in [0, 0.5), got {labeller_error}", param_hint="--labeller-error")
        learning = _learn_config(learn, first, seed, answer_variation, labeller_error)
        _print_learn(name, requests, make_embedder(embedder), learning, as_json)
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
        config = ReplayConfig(points, chosen, policy=policy, judge=_load_judge(settings), pair=_load_pair(settings))
    elif policy.judged:
        floors = (policy.candidate_floor,) if threshold is None else _thresholds(threshold)
        config = ReplayConfig(floors, (), policy=policy, budgets=_budgets(budget, policy),
                              judge=_load_judge(settings), pair=_load_pair(settings))
    else:
        config = ReplayConfig(_thresholds(threshold or DEFAULT_REPLAY_THRESHOLD), chosen, policy=policy)
    model = make_embedder(embedder)
    with _progress("embedding", len(unique_texts(r.prompt for r in requests))) as advance:
        report = run_replay(name, requests, model, config, advance)
    _print_report(report, as_json, replay_summary(report), replay_table(report))


def _budgets(spec: str | None, policy: MatchPolicy) -> tuple[float, ...]:
    """`--budget(s)` as a sorted tuple; default the policy's false-hit budget."""
    if spec is None:
        return (policy.max_false_hit_rate,)
    try:
        values = tuple(sorted({float(part) for part in spec.split(",")}))
    except ValueError:
        raise typer.BadParameter(f"not a list of numbers: {spec!r}", param_hint="--budget") from None
    for value in values:
        _check_fraction(value, "--budget")
    return values


def _learn_config(fraction: float, budget: float, seed: int, answer_variation: bool = False,
                  labeller_error: float | None = None) -> LearnConfig:
    from eval.learn import LearnConfig
    from index.match.explore import Exploration

    settings = _settings()
    return LearnConfig(fraction, budget, Exploration(settings.explore_rate), settings.audit_rate,
                       settings.decision_log_floor, seed=seed, audit_calls_per_hour=settings.audit_calls_per_hour,
                       answer_variation=answer_variation, labeller_error=labeller_error,
                       answer_same_similarity=settings.answer_same_similarity)


def _print_learn(name: str, requests: Sequence[StreamRequest], model: Embedder, config: LearnConfig,
                 as_json: bool) -> None:
    from eval.embedding import MemoEmbedder, embed_unique, unique_texts
    from eval.learn import run_learn
    from eval.tables import learn_table
    from index.judge.model import JudgeModelError, load_judge

    try:
        prior = load_judge()
    except JudgeModelError as exc:
        _fail(str(exc))
    with _progress("embedding", len(unique_texts(r.prompt for r in requests))) as advance:
        memo = MemoEmbedder(model, embed_unique(model, (r.prompt for r in requests), progress=advance))
    report = run_learn(name, requests, memo, prior, config)
    variation = "answers that vary" if report.answer_variation else "the same answer every call"
    summary = (f"{name}: {len(requests)} requests · learn from the first {config.fraction:.0%} · budget "
               f"{config.max_false_hit_rate:g} · {report.refit} ({_label_counts(report.labels)}, "
               f"{report.labels_same} same) · labels by {report.labeller}, {variation} · last quarter: "
               f"{report.last_quarter_semantic} semantic hits")
    _print_report(report, as_json, summary, learn_table(report))


def _label_counts(labels: dict[str, int]) -> str:
    return ", ".join(f"{n} {source}" for source, n in labels.items()) or "no labels"


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


app.command()(panel)


@app.command()
def fit(
    traffic: Annotated[bool, typer.Option(
        "--traffic", help="Refit the judge on the gateway's labelled decisions (its decision log).")] = False,
    namespace: Annotated[str | None, typer.Option(
        help="Only this namespace's labels (as logged: the hash of an API key).")] = None,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Put the refitted judge in force for every replica (within DEJA_SYNC_INTERVAL_SECONDS), "
        "only if it beats the judge in force on the most recent labels at the budget.")] = False,
    rollback: Annotated[bool, typer.Option(
        "--rollback", help="Retire the judge in force and restore the one applied before it (or the shipped "
        "prior).")] = False,
    budget: Annotated[float, typer.Option(help="False-hit budget the judges are compared at.")] = (
        DEFAULT_MAX_FALSE_HIT_RATE),
    seed: Annotated[int, typer.Option(help="Seed of the refit's held-out split and trees.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Learn from traffic: refit the judge on the decision log's labels on top of the shipped prior, validate
    it against the judge in force on the most recent 30% of the labels, and apply it only if it does better."""
    _check_fraction(budget, "--budget")
    if traffic == rollback:
        raise typer.BadParameter("give either --traffic or --rollback", param_hint="--traffic / --rollback")
    if rollback and (apply or namespace is not None):
        raise typer.BadParameter("--rollback takes no --apply or --namespace", param_hint="--rollback")
    url = _settings().sql_url
    if rollback:
        _rollback(url)
        return
    _fit_traffic(url, namespace, apply, budget, seed, as_json)


def _rollback(url: str) -> None:
    from eval.traffic import decision_log
    from index.storage.judge_models import JudgeStore

    try:
        with decision_log(url) as log:
            version = JudgeStore(log.engine).rollback()
    except StoreUnavailable as exc:
        _fail(f"cannot use the judge store at {display_url(url)}: {_first_line(exc)}")
    except LookupError as exc:
        _fail(str(exc.args[0]))
    _out().print(f"in force now: {version or 'the shipped prior'}", markup=False)


def _fit_traffic(url: str, namespace: str | None, apply: bool, budget: float, seed: int, as_json: bool) -> None:
    import dataclasses

    from eval.fit import FitError, fit_traffic
    from eval.report import to_json
    from eval.traffic import decision_log
    from index.judge.model import JudgeModelError, load_judge
    from index.storage.judge_models import JudgeStore

    try:
        with decision_log(url) as log:
            store = JudgeStore(log.engine)
            labeled = log.labeled(namespace)
            prior = load_judge()
            version = store.in_force()
            in_force = prior if version is None else store.load(version)
            candidate, report = fit_traffic(labeled, prior, in_force, budget, seed, namespace)
            now = time.time()
            store.save(candidate, report.trained_on + report.validated_on, now, report.reason)
            if apply and report.better:
                store.apply(candidate.version, now)
                report = dataclasses.replace(report, applied=True)
    except StoreUnavailable as exc:
        _fail(f"cannot use the decision log at {display_url(url)}: {_first_line(exc)}")
    except (FitError, JudgeModelError) as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(to_json(report))
        return
    from eval.tables import fit_table

    _print_table(_out(), fit_table(report))
    verdict = "applied" if report.applied else ("better; not applied (no --apply)" if report.better else
                                                "not applied")
    _out().print(f"{candidate.version}: {verdict}: {report.reason}", markup=False)


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]  # driver errors run over several lines
