"""Near-twin intents (each pair shares most words and needs another answer) and a bag-of-words embedder for them:
a synthetic trace whose rewordings a cosine serves and whose twins it must not."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Near-twin intents: each pair shares most words and needs another answer.
WORDINGS = {
    "freeze_card": ["how do i freeze my debit card", "freeze debit card in the app", "lock my debit card for now"],
    "unfreeze_card": ["how do i unfreeze my debit card", "unfreeze debit card in the app", "unlock my debit card"],
    "sort_oldest": ["sort my files oldest first", "order files by date oldest first", "oldest files at the top"],
    "sort_newest": ["sort my files newest first", "order files by date newest first", "newest files at the top"],
    "tip_18": ["what is an 18 percent tip on 85 dollars", "18 percent tip on 85", "tip 18 percent of 85 dollars"],
    "tip_20": ["what is a 20 percent tip on 85 dollars", "20 percent tip on 85", "tip 20 percent of 85 dollars"],
}
SUFFIXES = ("", "please", "thx")


class BagOfWords:
    """Deterministic unit vectors from word counts (hashed into 64 buckets); shared words mean high cosine."""

    model_id = "bag-of-words"
    dim = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rows[row, sum(map(ord, word)) % self.dim] += 1.0
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)
