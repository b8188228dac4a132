"""`deja` command line: `deja serve` runs the gateway; `deja eval ...` reaches the eval commands."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(help="Deja: a verified semantic cache in front of OpenAI-compatible LLM APIs.",
                  no_args_is_help=True)


@app.callback()
def main() -> None:
    """Deja: a verified semantic cache in front of OpenAI-compatible LLM APIs."""


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind")] = 8080,
    upstream_url: Annotated[str | None, typer.Option(help="DEJA_UPSTREAM_URL")] = None,
    database_url: Annotated[str | None, typer.Option(help="DEJA_DATABASE_URL")] = None,
    redis_url: Annotated[str | None, typer.Option(help="DEJA_REDIS_URL")] = None,
    min_similarity: Annotated[float | None, typer.Option(help="DEJA_MIN_SIMILARITY")] = None,
    data_dir: Annotated[str | None, typer.Option(help="DEJA_DATA_DIR")] = None,
    log_level: Annotated[str | None, typer.Option(help="DEJA_LOG_LEVEL")] = None,
) -> None:
    """Run the gateway. Flags override the matching DEJA_* environment variables."""
    import logging

    import uvicorn

    from service.app import create_app
    from service.settings import Settings

    overrides = {k: v for k, v in {
        "upstream_url": upstream_url, "database_url": database_url, "redis_url": redis_url,
        "min_similarity": min_similarity, "data_dir": data_dir, "log_level": log_level,
    }.items() if v is not None}
    settings = Settings(**overrides)  # type: ignore[arg-type]
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    uvicorn.run(create_app(settings), host=host, port=port, log_level=settings.log_level.lower())


def _mount_eval() -> None:
    try:
        from eval.cli import app as eval_app
    except ImportError:  # eval not installed: serve still works
        return
    app.add_typer(eval_app, name="eval", help="Measure false hits and choose the threshold.")


_mount_eval()
