"""`eval conversations`: conversation pairs at the gateway's defaults (registered on the eval app by `eval.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval.embedding import EmbedderName, make_embedder


def conversations(
    dataset: Annotated[list[Path] | None, typer.Option(exists=True, dir_okay=False,
                                                       help="Conversation pairs (JSONL); repeatable.")] = None,
    sgd: Annotated[Path | None, typer.Option(
        help="Where the public sets lie: adds the SGD dialogues' pairs (same situation, one slot swapped, another "
             "state), per split.")] = None,
    embedder: Annotated[EmbedderName, typer.Option(help="minilm-onnx (the gateway's default) or hash.")] = (
        EmbedderName.MINILM_ONNX),
) -> None:
    """Decide conversation pairs one by one at the gateway's defaults: same-answer and must-not pairs served, per
    kind, and why the same-answer pairs that were not served missed."""
    from eval.changed_details import sgd_sources
    from eval.cli_common import out, print_table, settings_from_env
    from eval.conversations import kind_table, miss_table, run_conversations
    from eval.datasets import load_pairs
    from eval.product import ProductConfig, build

    settings = settings_from_env()
    product = build(ProductConfig.from_settings(settings))
    policy = product.config.policy
    model = make_embedder(embedder)
    console = out()
    sets = [(path.name, load_pairs(path)) for path in dataset or ()]
    sets += [(f"SGD dialogues ({source.part})", source.pairs) for source in (sgd_sources(sgd) if sgd else ())]
    for name, pairs in sets:
        report = run_conversations(pairs, model, product.matcher)
        print_table(console, kind_table(report, f"{name} at the defaults ({policy.describe()})"))
        print_table(console, miss_table(report))
