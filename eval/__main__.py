"""`python -m eval ...`: the same commands as `deja eval ...`."""

from eval.cli import app

app(prog_name="python -m eval")
