"""`eval answers`: how often answer comparison labels right, on real answers with known truth (`eval.answer_labels`:
the SGD dev dialogues' system turns), with the contrast check on and off (registered on the eval app by
`eval.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval.embedding import EmbedderName, make_embedder


def answers(
    shared: Annotated[Path, typer.Option(help="Where the public labelled sets lie (read in place).")] = Path(
        "../shared/datasets"),
    limit: Annotated[int, typer.Option(min=10, help="Pairs of each kind at most.")] = 600,
    seed: Annotated[int, typer.Option(help="Seed of the pairs drawn.")] = 0,
    embedder: Annotated[EmbedderName, typer.Option(help="minilm-onnx (the gateway's default) or hash.")] = (
        EmbedderName.MINILM_ONNX),
) -> None:
    """Answer comparison against the truth of real answers: same answers and contrasting answers (the same acts,
    another value) of the SGD dev dialogues, per split, with and without the contrast check."""
    from eval.answer_labels import CONTRASTING, SAME, errors, measure, pairs
    from eval.cli_common import out, settings_from_env
    from eval.embedding import MemoEmbedder, embed_unique

    settings = settings_from_env()
    items = pairs(shared, seed, limit)
    if not items:
        raise typer.BadParameter(f"no SGD dialogues under {shared}", param_hint="--shared")
    model = make_embedder(embedder)
    texts = [t for p in items for t in (p.fresh, p.cached, p.second) if t]
    memo = MemoEmbedder(model, embed_unique(model, texts))
    console = out()
    console.print("check | kind | split | pairs | labelled same | labelled different | no label")
    for name, on in (("contrast check on (the default)", True), ("contrast check off", False)):
        tallies = measure(items, memo, settings.answer_same_similarity, contrast=on)
        for kind in (SAME, CONTRASTING):
            for split in ("dev", "test"):
                t = tallies.get((kind, split))
                if t is not None:
                    console.print(f"{name} | {kind} | {split} | {t.total} | {t.same} | {t.different} | {t.none}")
        rates = errors(tallies)
        console.print(f"{name}: " + ", ".join(f"{k} {v:.1%}" if v is not None else f"{k} -"
                                             for k, v in rates.items()))
