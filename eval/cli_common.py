"""What the eval commands share: consoles, the one-line failure, the gateway's settings, the shipped judge and
pair model, and printing a table."""

from __future__ import annotations

from typing import NoReturn

import typer
from pydantic import ValidationError
from rich import box
from rich.console import Console
from rich.table import Table

from eval.tables import TableData
from index.judge.model import Judge
from index.match.judged import PairReader
from index.settings import Settings


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


def load_judge(settings: Settings) -> Judge:
    from index.judge.model import JudgeModelError, load_judge

    try:
        return load_judge(settings.judge_model)
    except JudgeModelError as exc:
        fail(str(exc))


def load_pair(settings: Settings) -> PairReader | None:
    """The pair model the gateway stacks with the judge (None when `DEJA_PAIR_MODEL` is off)."""
    from index.judge.pair_model import PairModelError, load_pair_stage

    if not settings.pair_model:
        return None
    try:
        return load_pair_stage()
    except PairModelError as exc:
        fail(str(exc))
