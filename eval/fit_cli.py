"""`eval fit`: refit the judge on the decision log's labels, apply it or roll it back (registered on the eval app
by `eval.cli`)."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Annotated

import typer

from eval.cli_common import JsonOption
from eval.cli_common import check_fraction as _check_fraction
from eval.cli_common import fail as _fail
from eval.cli_common import first_line as _first_line
from eval.cli_common import out as _out
from eval.cli_common import print_table as _print_table
from eval.cli_common import settings_from_env as _settings
from index.errors import StoreUnavailable
from index.match.policy import DEFAULT_MAX_FALSE_HIT_RATE
from index.storage.entries import display_url

if TYPE_CHECKING:
    pass

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
