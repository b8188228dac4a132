"""`deja` command line: `deja serve` runs the gateway; `deja eval ...` reaches the eval commands."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from index.settings import Settings

app = typer.Typer(help="Deja: a verified semantic cache in front of OpenAI-compatible LLM APIs.",
                  no_args_is_help=True)


@app.callback()
def main() -> None:
    """Deja: a verified semantic cache in front of OpenAI-compatible LLM APIs."""


def _check_schema(settings: Settings) -> None:
    """Refuse to start on a schema this build does not know, or a database written with another namespace secret
    (one line, exit 1). A database that cannot be
    reached is not fatal: the gateway starts degraded and serves from upstream."""
    from sqlalchemy.exc import SQLAlchemyError

    from index.errors import SchemaMismatch, SecretMismatch, StoreUnavailable, VectorIndexUnavailable
    from index.search.pgvector import check
    from index.search.vector_index import VectorIndexKind
    from index.storage.entries import make_engine
    from index.storage.migrate import ensure_schema
    from index.storage.secret import check_secret

    engine = make_engine(settings.sql_url)
    try:
        ensure_schema(engine)
        check_secret(engine, settings.secret_bytes(), time.time())
        if settings.vector_index is VectorIndexKind.PGVECTOR:
            check(engine)  # the dimensions are checked once the embedder is loaded
    except (SchemaMismatch, SecretMismatch, VectorIndexUnavailable) as exc:
        typer.echo(f"deja: {exc}", err=True)
        raise typer.Exit(1) from None
    except (SQLAlchemyError, StoreUnavailable) as exc:
        typer.echo(f"deja: database unreachable, starting degraded: {type(exc).__name__}", err=True)
    finally:
        engine.dispose()


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind")] = 8080,
    upstream_url: Annotated[str | None, typer.Option(help="DEJA_UPSTREAM_URL")] = None,
    anthropic_upstream_url: Annotated[str | None, typer.Option(help="DEJA_ANTHROPIC_UPSTREAM_URL")] = None,
    database_url: Annotated[str | None, typer.Option(help="DEJA_DATABASE_URL")] = None,
    redis_url: Annotated[str | None, typer.Option(help="DEJA_REDIS_URL")] = None,
    min_similarity: Annotated[float | None, typer.Option(help="DEJA_MIN_SIMILARITY")] = None,
    data_dir: Annotated[str | None, typer.Option(help="DEJA_DATA_DIR")] = None,
    log_level: Annotated[str | None, typer.Option(help="DEJA_LOG_LEVEL")] = None,
) -> None:
    """Run the gateway. Flags override the matching DEJA_* environment variables."""
    import logging

    import uvicorn

    from index.settings import Settings
    from service.app import create_app

    overrides = {k: v for k, v in {
        "upstream_url": upstream_url, "anthropic_upstream_url": anthropic_upstream_url,
        "database_url": database_url, "redis_url": redis_url,
        "min_similarity": min_similarity, "data_dir": data_dir, "log_level": log_level,
    }.items() if v is not None}
    settings = _settings(Settings, overrides)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its per-plugin INFO lines say nothing to an operator
    _check_schema(settings)
    uvicorn.run(create_app(settings), host=host, port=port, log_level=settings.log_level.lower())


def _settings(settings_type: type[Settings], overrides: Mapping[str, object]) -> Settings:
    """`Settings` from the environment and `overrides`; a setting that is not valid (a retired
    `DEJA_DECISION=judge`, a value out of range) stops start-up with one line per setting, no traceback."""
    from pydantic import ValidationError

    try:
        return settings_type(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"])
            name = f"DEJA_{where.upper()}: " if where else ""
            typer.echo(f"deja: {name}{str(error['msg']).removeprefix('Value error, ')}", err=True)
        raise typer.Exit(1) from None


db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _engine(database_url: str | None) -> Engine:
    from index.settings import Settings
    from index.storage.entries import make_engine

    settings = Settings(**({"database_url": database_url} if database_url else {}))  # type: ignore[arg-type]
    return make_engine(settings.sql_url)


@db_app.command("upgrade")
def db_upgrade(
    database_url: Annotated[str | None, typer.Option(help="DEJA_DATABASE_URL")] = None,
    revision: Annotated[str, typer.Option(help="Target revision")] = "head",
) -> None:
    """Migrate the database to this build's schema."""
    from index.storage.migrate import current_revision, upgrade

    engine = _engine(database_url)
    upgrade(engine, revision)
    typer.echo(f"schema at revision {current_revision(engine)}")


@db_app.command("current")
def db_current(database_url: Annotated[str | None, typer.Option(help="DEJA_DATABASE_URL")] = None) -> None:
    """Print the database's schema revision and the one this build needs."""
    from index.storage.migrate import current_revision, head_revision

    typer.echo(f"database: {current_revision(_engine(database_url)) or 'none'}  build: {head_revision()}")


secret_app = typer.Typer(help="The namespace secret (DEJA_NAMESPACE_SECRET) the database is bound to.",
                         no_args_is_help=True)
app.add_typer(secret_app, name="secret")


@secret_app.command("rotate")
def secret_rotate(
    database_url: Annotated[str | None, typer.Option(help="DEJA_DATABASE_URL")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Purge the cached entries without asking")] = False,
) -> None:
    """Bind the database to the secret this command is run with (DEJA_NAMESPACE_SECRET, else DEJA_DATA_DIR/secret).

    Namespaces are HMACs of callers' credentials under the secret, and the credentials are not stored, so entries
    cannot be re-keyed: every cached entry is purged (tombstoned, so replicas drop them from their indexes and exact
    tiers) and the thresholds learned per namespace are dropped; the decision log and its labels are kept. Stop the
    replicas first, then start them all with the new secret (a replica with the old one now refuses to start).
    """
    from index.errors import SchemaMismatch, StoreUnavailable
    from index.settings import Settings
    from index.storage.entries import make_engine
    from index.storage.migrate import ensure_schema
    from index.storage.secret import rotate_secret

    settings = Settings(**({"database_url": database_url} if database_url else {}))  # type: ignore[arg-type]
    if not yes:
        typer.confirm("Purge every cached entry and bind the database to this secret?", abort=True, err=True)
    engine = make_engine(settings.sql_url)
    try:
        ensure_schema(engine)
        done = rotate_secret(engine, settings.secret_bytes(), time.time())
    except (SchemaMismatch, StoreUnavailable) as exc:
        typer.echo(f"deja: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    if not done.changed:
        typer.echo("the database is bound to this secret already: nothing purged")
        return
    typer.echo(f"secret rotated: {done.entries_purged} entries purged, "
               f"{done.thresholds_dropped} per-namespace thresholds dropped")


@app.command()
def reindex(
    batch: Annotated[int, typer.Option(help="Prompts embedded per batch", min=1)] = 256,
) -> None:
    """Re-embed stored prompts with the embedder DEJA_EMBEDDER / DEJA_EMBEDDING_MODEL name, in place.

    Replicas on the old model keep serving meanwhile; restart them with the new settings to switch (their
    snapshots, made for the old model, are then ignored and the index is rebuilt from the new vectors).
    Run it again after the switch to convert entries the old replicas wrote in between.
    """
    from index.embedding.embedder import make_embedder
    from index.errors import StoreUnavailable
    from index.storage.entries import EntryStore, make_engine
    from index.storage.reindex import reindex as run_reindex
    from service.settings import Settings

    settings = Settings()  # type: ignore[call-arg]
    embedder = make_embedder(settings.embedder, settings.embedding_model, settings.embed_threads or None)
    store = EntryStore(make_engine(settings.sql_url))
    try:
        done = run_reindex(store, embedder, batch, progress=lambda n: typer.echo(f"{n} re-embedded", err=True))
    except StoreUnavailable as exc:
        typer.echo(f"deja: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{done} entries re-embedded for {embedder.model_id}")


def _mount_eval() -> None:
    """The eval commands under `deja eval`; not for `deja serve`, which needs none of them (importing them was
    about a tenth of the gateway's start-up)."""
    if sys.argv[1:2] == ["serve"]:
        return
    try:
        from eval.cli import app as eval_app
    except ImportError:  # eval not installed: serve still works
        return
    app.add_typer(eval_app, name="eval", help="Measure false hits and choose the threshold.")


_mount_eval()
