"""`eval details`: every must-not pair of every set at the gateway's defaults (registered on the eval app by
`eval.cli`); exit 1 when a rate passes the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval.embedding import EmbedderName, make_embedder


def details(
    shared: Annotated[Path, typer.Option(help="Where the public labelled sets lie (read in place).")] = Path(
        "../shared/datasets"),
    datasets: Annotated[Path, typer.Option(help="Our labelled data.")] = Path("datasets"),
    embedder: Annotated[EmbedderName, typer.Option(help="minilm-onnx (the gateway's default) or hash.")] = (
        EmbedderName.MINILM_ONNX),
) -> None:
    """Changed details: must-not pairs served at the defaults, per source, split and kind (SGD dialogues with one
    slot value replaced, CheckList, CANNOT, SemAntoNeg, Breaking NLI, CondaQA, our minimal pairs and
    conversations); exits 1 when any rate passes the budget."""
    import sys

    from eval.changed_details import detail_sources, detail_table, over_budget, run_details
    from eval.cli_common import out, print_table, settings_from_env
    from eval.product import ProductConfig, build

    product = build(ProductConfig.from_settings(settings_from_env()))
    policy = product.config.policy
    sources, notes = detail_sources(shared, datasets)
    for note in notes:
        print(note, file=sys.stderr)
    rows = run_details(sources, make_embedder(embedder), product.matcher)
    print_table(out(), detail_table(rows, policy.max_false_hit_rate))
    broken = over_budget(rows, policy.max_false_hit_rate)
    if broken:
        print(f"over budget: {'; '.join(broken)}", file=sys.stderr)
        raise typer.Exit(1)
