"""`eval` commands (`python -m eval ...`, mounted as `deja eval ...`): the one typer app; each command's body and
helpers live in its own module (`eval.sweep_cli`, `eval.replay_cli`, `eval.panel_cli`,
`eval.conversations_cli`, `eval.details_cli`, `eval.calibrate_cli`, `eval.answers_cli`).

Results go to stdout (tables or `--json`); progress and notes go to stderr. Failures exit 1 with one line.
"""

from __future__ import annotations

import typer

from eval.answers_cli import answers
from eval.calibrate_cli import calibrate
from eval.conversations_cli import conversations
from eval.details_cli import details
from eval.panel_cli import panel
from eval.replay_cli import replay
from eval.sweep_cli import sweep

app = typer.Typer(help="Measure false hits and choose the similarity threshold from evidence.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

app.command()(sweep)
app.command()(replay)
app.command()(panel)
app.command()(conversations)
app.command()(details)
app.command()(calibrate)
app.command()(answers)
