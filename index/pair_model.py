"""Pair model: a cross-encoder that reads a query and a cached prompt and gives a calibrated P(same answer)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
KIND = "pair_cross_encoder"


def embeddings_sha256(tensor: Any) -> str:
    """SHA-256 of a float32 tensor's bytes, to tie the shipped layers to the word embeddings they were tuned on."""
    return hashlib.sha256(tensor.contiguous().numpy().astype(np.float32).tobytes()).hexdigest()
