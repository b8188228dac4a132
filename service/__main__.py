"""`python -m service ...` is the `deja` command."""

from service.cli import app

app()
