"""Re-embed stored prompts for another embedder. Replicas on the old model keep serving from their in-memory
index meanwhile (they skip rows re-embedded under them); replicas started with the new model load the new
vectors. Idempotent: a second run converts only rows written on the old model since."""

from __future__ import annotations

from collections.abc import Callable

from index.embedding.embedder import Embedder, combine
from index.storage.entries import EntryStore, Reembedded


def reindex(store: EntryStore, embedder: Embedder, batch: int = 256,
            progress: Callable[[int], None] | None = None) -> int:
    """Re-embed every entry not yet embedded by `embedder`; returns how many rows changed."""
    done, after = 0, 0
    while rows := store.rows_to_reindex(embedder.model_id, after, batch):
        texts = [r.prompt for r in rows] + [r.context_text or " " for r in rows if r.context_text is not None]
        vectors = embedder.embed(texts)
        contexts = iter(vectors[len(rows):])
        updates = []
        for row, prompt in zip(rows, vectors[: len(rows)], strict=True):
            if row.context_text is None:
                updates.append(Reembedded(row.entry_id, embedder.model_id, prompt, None, None))
            else:
                context = next(contexts)
                updates.append(Reembedded(row.entry_id, embedder.model_id, combine(prompt, context), prompt, context))
        store.set_vectors(updates)
        done += len(rows)
        after = rows[-1].entry_id
        if progress is not None:
            progress(done)
    return done
