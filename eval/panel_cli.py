"""`eval panel`: the source panel's command (registered on the eval app by `eval.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from eval.embedding import EmbedderName, make_embedder

PROJECT = Path(__file__).resolve().parent.parent


def panel(
    shared: Annotated[Path, typer.Option(
        file_okay=False, help="Folder of the public labelled sets (read in place, never copied).")] = Path(
        "../shared/datasets"),
    datasets: Annotated[Path, typer.Option(file_okay=False, help="Our own labelled data.")] = PROJECT / "datasets",
    part: Annotated[str | None, typer.Option(help="Only this part: dev or test (default both).")] = None,
    source: Annotated[list[str] | None, typer.Option(
        help="Only sources whose name contains this (repeatable), e.g. --source OSSChat.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the cluster order and of the samples.")] = 0,
    out: Annotated[Path | None, typer.Option(
        file_okay=False, help="Write panel.json, panel.png and panel.html here.")] = Path("reports/panel"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole report as JSON.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 1 when the default breaks a real-user source's target.")] = False,
) -> None:
    """Replay every labelled source through the product at the defaults (on a trace: a live gateway, its learner
    and labelling loop included), beside the baselines (cosine + rules at 0.85/0.90/0.95, vCache), each source and
    part on its own row."""
    from eval.cli_common import fail, print_table, settings_from_env
    from eval.learn import LearnConfig
    from eval.panel import contenders, run_panel
    from eval.panel_report import panel_table, to_json, verdict_lines, write_outputs
    from eval.sources import all_sources

    if part is not None and part not in ("dev", "test"):
        raise typer.BadParameter(f"must be dev or test, got {part!r}", param_hint="--part")
    found, missing = all_sources(shared, datasets, seed)
    chosen = [s for s in found if (part is None or s.part == part)
              and (not source or any(name.lower() in s.name.lower() for name in source))]
    if not chosen:
        fail("no source matches --part / --source")
    settings = settings_from_env()
    # The product as a gateway of DEJA_* runs it: on traces, its learner and labels, an upstream whose answers vary.
    product = LearnConfig.from_settings(settings, answer_variation=True, seed=seed)
    policy = product.policy
    entrants = contenders(product)
    err = Console(stderr=True)
    report = run_panel(chosen, make_embedder(EmbedderName.MINILM_ONNX), entrants, policy.describe(),
                       missing, progress=lambda name: err.print(f"panel: {name}"))
    if out is not None:
        for path in write_outputs(report, out):
            err.print(f"wrote {path}")
    if as_json:
        typer.echo(to_json(report))
    else:
        console = Console(width=240)
        print_table(console, panel_table(report))
        for line in verdict_lines(report):
            console.print(line)
    if check and not report.real_sources_hold:
        raise typer.Exit(1)
