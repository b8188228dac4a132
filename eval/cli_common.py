"""What the eval commands share: consoles, the one-line failure, the gateway's settings, the options several
commands take, their parsing, progress bars and printing a table or report."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from pydantic import ValidationError
from rich import box
from rich.console import Console
from rich.table import Table

from eval.embedding import EmbedderName
from eval.tables import TableData
from eval.thresholds import parse_thresholds
from index.guards.registry import build_stages
from index.guards.stages import Stage, parse_stage_names
from index.match.policy import DecisionMode, MatchPolicy
from index.settings import Settings

if TYPE_CHECKING:
    from eval.learn import LearnReport
    from eval.replay import ReplayReport
    from eval.vcache import VCacheReport

StagesOption = Annotated[str | None, typer.Option(
    "--stages", help="Verification stages: none, or a list like polarity,values. Default: the gateway's, from "
    "DEJA_GUARD_POLARITY and DEJA_GUARD_VALUES.")]
EmbedderOption = Annotated[EmbedderName, typer.Option(
    help="minilm-onnx (what the gateway runs by default, DEJA_EMBEDDER=onnx), minilm (torch, DEJA_EMBEDDER=torch) "
    "or hash (bag-of-words baseline, no model).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the whole report as JSON.")]
DecisionOption = Annotated[DecisionMode | None, typer.Option(
    help="guarded (cosine, gates, stages, remembered differences) or threshold (cosine + stages). Default: "
    "DEJA_DECISION.", show_default=False)]
BudgetsOption = Annotated[str | None, typer.Option(
    "--budgets", "--budget", help="--decision vcache: error bounds to replay, e.g. 0.01,0.02,0.05. Default: "
    "DEJA_MAX_FALSE_HIT_RATE.", show_default=False)]


def err() -> Console:
    return Console(stderr=True, highlight=False)


def out() -> Console:
    console = Console(highlight=False)
    # Piped output keeps full rows instead of wrapping at 80 columns.
    return console if console.is_terminal else Console(highlight=False, width=220)


def fail(message: str) -> NoReturn:
    err().print(f"error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(1)


def settings_from_env(**overrides: object) -> Settings:
    """The gateway's settings (DEJA_* environment), so eval measures the policy the gateway runs."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        fail(f"invalid DEJA_* setting: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}")


def print_table(console: Console, data: TableData) -> None:
    table = Table(title=data.title, box=box.SIMPLE_HEAD, title_justify="left")
    for index, header in enumerate(data.headers):
        table.add_column(header, justify="left" if index == 0 else "right", no_wrap=True)
    for row in data.rows:
        table.add_row(*row)
    console.print(table)


def thresholds(spec: str) -> tuple[float, ...]:
    try:
        return parse_thresholds(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--threshold") from None


def policy_and_stages(settings: Settings, spec: str | None, decision: DecisionMode | None = None,
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
def progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err()) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def print_report(
    report: ReplayReport | LearnReport | VCacheReport, as_json: bool, summary: str, data: TableData
) -> None:
    """`--json`: the report as JSON; otherwise a one-line summary over the table."""
    from eval.report import to_json

    if as_json:
        typer.echo(to_json(report))
        return
    console = out()
    console.print(summary, markup=False)
    print_table(console, data)


def check_fraction(value: float | None, option: str) -> None:
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must be in (0, 1), got {value}", param_hint=option)


def budgets(spec: str | None, policy: MatchPolicy) -> tuple[float, ...]:
    """`--budget(s)` as a sorted tuple; default the policy's false-hit budget."""
    if spec is None:
        return (policy.max_false_hit_rate,)
    try:
        values = tuple(sorted({float(part) for part in spec.split(",")}))
    except ValueError:
        raise typer.BadParameter(f"not a list of numbers: {spec!r}", param_hint="--budget") from None
    for value in values:
        check_fraction(value, "--budget")
    return values


def first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]  # driver errors run over several lines
