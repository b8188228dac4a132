"""Deja vs GPTCache 0.1.44 side by side in one process: the same MiniLM vectors, the same N stored QQP questions
(read at run time from ../shared/datasets/gptcache_similar_qqp), then the same lookups timed one by one: a
stored question again (Deja: exact tier; GPTCache has none) and its labelled duplicate (semantic).

GPTCache is not a dependency: install it for this bench only, outside the project's environment:
    pip install --target /tmp/gptcache-pkgs --no-deps gptcache==0.1.44 cachetools
    .venv/bin/python -m bench.gptcache_side --gptcache-path /tmp/gptcache-pkgs [--prompts 10000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import p, qqp_rows, timed_ms
from index.cache import Cache, CacheConfig
from index.embedding.embedder import Embedder, MiniLMEmbedder, OnnxMiniLMEmbedder, Vector
from index.match.policy import MatchPolicy
from index.records import QueryVectors, Verdict
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache

ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "cached"}, "finish_reason": "stop"}]}


def load_pairs(n: int) -> tuple[list[str], list[tuple[str, str]]]:
    """`n` distinct stored questions, and (stored, duplicate) pairs among them."""
    rows = qqp_rows()
    stored: dict[str, None] = {}
    duplicates: list[tuple[str, str]] = []
    for row in rows:
        if len(stored) >= n:
            break
        stored.setdefault(row["text_a"])
        if row["label"] == 1 and row["text_b"] not in stored:
            duplicates.append((row["text_a"], row["text_b"]))
    return list(stored), duplicates


def body(text: str) -> dict[str, Any]:
    return {"model": "bench", "messages": [{"role": "user", "content": text}]}


def deja(tmp: Path, embedder: Embedder, stored: Sequence[str], vectors: Vector, threshold: float) -> Cache:
    name = embedder.model_id.replace("/", "_").replace("@", "_")
    store = EntryStore(make_engine(f"sqlite:///{tmp / name}.db"))
    store.create_schema()
    cache = Cache(LruExactCache(len(stored) + 10), store, SemanticIndex(embedder.dim), embedder,
                  CacheConfig(MatchPolicy(threshold)))
    for text, vector in zip(stored, vectors, strict=True):
        cache.store_answer(build_key("bench", body(text)), ANSWER, QueryVectors(vector, vector, None))
    return cache


def build_gptcache(tmp: Path, embed_one: Callable[[str], Vector], stored: Sequence[str], vectors: Vector,
             threshold: float) -> Callable[[str], Any]:
    from gptcache import Cache as GCache
    from gptcache import Config
    from gptcache.adapter.api import get
    from gptcache.manager import CacheBase, VectorBase, get_data_manager
    from gptcache.processor.pre import get_prompt
    from gptcache.similarity_evaluation.distance import SearchDistanceEvaluation

    memo = {text: vectors[i] for i, text in enumerate(stored)}
    filling = [True]

    def embedding_func(text: str, **_: Any) -> Vector:  # precomputed while filling, the model when timed
        return memo[text] if filling[0] else embed_one(text)

    manager = get_data_manager(CacheBase("sqlite", sql_url=f"sqlite:///{tmp / 'gptcache.db'}"),
                               VectorBase("hnswlib", dimension=vectors.shape[1], index_path=str(tmp / "g.bin"),
                                          max_elements=len(stored) + 10))
    # GPTCache 0.1.44's hnswlib store returns numpy ids, which its SQL store cannot match under numpy 2 (every
    # lookup misses); hand it plain ints so it can hit at all.
    vector_search = manager.v.search
    manager.v.search = lambda data, top_k=-1: [(float(d), int(i)) for d, i in vector_search(data, top_k)]
    cache = GCache()
    # Unit vectors: squared L2 = 2 - 2 cos, so GPTCache's [0, 4] distance score maps onto our cosine threshold.
    cache.init(pre_embedding_func=get_prompt, embedding_func=embedding_func, data_manager=manager,
               similarity_evaluation=SearchDistanceEvaluation(), config=Config(similarity_threshold=(
                   4.0 - (2 - 2 * threshold)) / 4.0))
    cache.import_data(list(stored), ["cached"] * len(stored))
    filling[0] = False
    return lambda text: get(text, cache_obj=cache)


def summary(name: str, samples: list[float]) -> dict[str, object]:
    return {"what": name, "p50_ms": round(statistics.median(samples), 3), "p99_ms": round(p(samples, 0.99), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--threshold", type=float, default=0.80, help="cosine similarity floor for both")
    parser.add_argument("--gptcache-path", type=Path, default=Path("/tmp/gptcache-pkgs"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of both backends")
    args = parser.parse_args()
    sys.path.insert(0, str(args.gptcache_path))
    if importlib.util.find_spec("gptcache") is None:
        print("GPTCache 0.1.44 is not installed (see this module's docstring): skipped.", file=sys.stderr)
        return
    stored, duplicates = load_pairs(args.prompts)
    duplicates = duplicates[: args.queries]
    torch_model, onnx_model = MiniLMEmbedder(threads=args.threads), OnnxMiniLMEmbedder(threads=args.threads)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        print(f"embedding {len(stored)} stored questions twice (torch, onnx)...", file=sys.stderr)
        torch_vectors, onnx_vectors = torch_model.embed(stored), onnx_model.embed(stored)
        ours = deja(tmp, torch_model, stored, torch_vectors, args.threshold)
        ours_onnx = deja(tmp, onnx_model, stored, onnx_vectors, args.threshold)
        theirs = build_gptcache(tmp, lambda t: torch_model.embed([t])[0], stored, torch_vectors, args.threshold)
        queries = [b for _, b in duplicates]
        originals = [a for a, _ in duplicates]
        hits = {
            "deja": sum(ours.lookup(build_key("bench", body(q))).verdict is Verdict.SEMANTIC_HIT for q in queries),
            "gptcache": sum(theirs(q) is not None for q in queries),
        }
        served = [q for q in queries if ours.lookup(build_key("bench", body(q))).verdict is Verdict.SEMANTIC_HIT]
        served = served or queries
        it = iter(range(10**9))

        def cycle(items: Sequence[str]) -> Callable[[], str]:
            return lambda: items[next(it) % len(items)]

        nxt_s, nxt_o = cycle(served), cycle(originals)
        rows = [
            summary("embed one prompt (torch)", timed_ms(lambda: torch_model.embed([nxt_s()]), args.queries)),
            summary("embed one prompt (onnx int8)", timed_ms(lambda: onnx_model.embed([nxt_s()]), args.queries)),
            summary("deja exact hit", timed_ms(lambda: ours.lookup(build_key("bench", body(nxt_o()))),
                                               args.queries)),
            summary("gptcache same prompt again", timed_ms(lambda: theirs(nxt_o()), args.queries)),
            summary("deja semantic hit (torch)", timed_ms(lambda: ours.lookup(build_key("bench", body(nxt_s()))),
                                                          args.queries)),
            summary("deja semantic hit (onnx int8)",
                    timed_ms(lambda: ours_onnx.lookup(build_key("bench", body(nxt_s()))), args.queries)),
            summary("gptcache semantic hit (torch)", timed_ms(lambda: theirs(nxt_s()), args.queries)),
        ]
    by = {str(r["what"]): float(r["p50_ms"]) for r in rows}  # type: ignore[arg-type]
    result = {
        "prompts": len(stored), "queries": len(queries), "threshold": args.threshold,
        "hits_of_duplicates": hits, "rows": rows,
        "ratios": {
            "gptcache_hit / deja_semantic_hit (torch)":
                round(by["gptcache semantic hit (torch)"] / by["deja semantic hit (torch)"], 2),
            "gptcache_hit / deja_semantic_hit (onnx)":
                round(by["gptcache semantic hit (torch)"] / by["deja semantic hit (onnx int8)"], 2),
            "gptcache_same_prompt / deja_exact_hit":
                round(by["gptcache same prompt again"] / by["deja exact hit"], 1),
            "deja_semantic_hit (torch) in embeddings":
                round(by["deja semantic hit (torch)"] / by["embed one prompt (torch)"], 2),
            "gptcache_hit in embeddings":
                round(by["gptcache semantic hit (torch)"] / by["embed one prompt (torch)"], 2),
        },
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{'what':<34}{'p50 ms':>10}{'p99 ms':>10}")
    for r in rows:
        print(f"{r['what']!s:<34}{r['p50_ms']!s:>10}{r['p99_ms']!s:>10}")
    for name, value in result["ratios"].items():  # type: ignore[attr-defined]
        print(f"{name}: {value}")
    print(f"duplicates served (of {len(queries)}): {hits}")


if __name__ == "__main__":
    main()
