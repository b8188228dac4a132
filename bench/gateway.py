"""Gateway latency, side by side in one run: embedding, in-process exact and semantic lookups, and HTTP
exact / semantic hits through a real uvicorn gateway, each as a ratio to the embedding time.

    .venv/bin/python -m bench.gateway [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import httpx

from bench.common import table, timed_ms
from index.cache import Cache, CacheConfig
from index.embedding.embedder import MiniLMEmbedder
from index.embedding.memo import ContextMemo
from index.guards.registry import build_stages
from index.guards.stages import STAGE_ORDER
from index.match.decide import Deciders
from index.match.policy import MatchPolicy
from index.records import QueryVectors
from index.request.keys import build_key
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream

PROMPT = "How do I reset my password for the billing portal?"
PARAPHRASE = "How can I reset my password for the billing portal?"
CONVERSATION = [{"role": "user", "content": "I am on the Team plan of the billing portal."},
                {"role": "assistant", "content": "Thanks, I can see the Team plan on your account."},
                {"role": "user", "content": "How do I reset my password there?"}]
CONVERSATION_REWORDED = [{"role": "user", "content": "Our account uses the Team plan in the billing portal."},
                         {"role": "assistant", "content": "Thanks, I can see the Team plan on your account."},
                         {"role": "user", "content": "How do I reset my password there?"}]


def body(text: str) -> dict[str, object]:
    return {"model": "bench", "messages": [{"role": "user", "content": text}]}


def in_process(tmp: Path, embedder: MiniLMEmbedder, repeat: int) -> list[tuple[str, list[float]]]:
    store = EntryStore(make_engine(f"sqlite:///{tmp / 'bench.db'}"))
    store.create_schema()
    cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder,
                  CacheConfig(MatchPolicy(0.8)), Deciders(build_stages(STAGE_ORDER)))
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}]}
    # A realistic index: a few thousand other entries in the same context.
    fillers = [f"Question number {i} about topic {i % 97} and item {i % 13}" for i in range(3000)]
    vectors = embedder.embed(fillers)
    for text, vec in zip(fillers, vectors, strict=True):
        cache.store_answer(build_key("bench", body(text)), answer, QueryVectors(vec, vec, None))
    cache.store_answer(build_key("bench", body(PROMPT)), answer)
    exact_key, para_key = build_key("bench", body(PROMPT)), build_key("bench", body(PARAPHRASE))
    assert cache.lookup(para_key).verdict.value == "hit-semantic"
    conversation = build_key("bench", {"model": "bench", "messages": CONVERSATION_REWORDED})
    cache.store_answer(build_key("bench", {"model": "bench", "messages": CONVERSATION}), answer)
    assert cache.lookup(conversation).verdict.value == "hit-semantic"
    rows = [
        ("embed one prompt (MiniLM)", timed_ms(lambda: embedder.embed([PARAPHRASE]), repeat)),
        ("in-process exact lookup", timed_ms(lambda: cache.lookup(exact_key), repeat)),
        ("in-process semantic lookup", timed_ms(lambda: cache.lookup(para_key), repeat)),
        ("in-process conversation hit", timed_ms(lambda: cache.lookup(conversation), repeat)),
    ]
    cache.context_memo = ContextMemo(0)  # every context embedded again, as before the memo
    rows.append(("  same, context memo off", timed_ms(lambda: cache.lookup(conversation), repeat)))
    return rows


def over_http(tmp: Path, repeat: int, threads: int) -> list[tuple[str, list[float]]]:
    with StubUpstream() as stub:
        env = {"DEJA_UPSTREAM_URL": stub.url, "DEJA_DATA_DIR": str(tmp / "gw"), "DEJA_LOG_LEVEL": "warning",
               "DEJA_EMBED_THREADS": str(threads),
               # as in-process: the threshold rule serves the bench's paraphrase (guarded mode may not)
               "DEJA_DECISION": "threshold"}
        gateway = GatewayProcess(env, tmp / "gw.log").start()
        try:
            with httpx.Client(base_url=gateway.url, headers={"Authorization": "Bearer sk-bench"}) as client:
                def post(text: str | list[dict[str, str]]) -> str:
                    payload = body(text) if isinstance(text, str) else {"model": "bench", "messages": text}
                    r = client.post("/v1/chat/completions", json=payload)
                    return r.headers["x-deja-cache"]

                assert post(PROMPT) == "miss"
                assert post(PARAPHRASE) == "hit-semantic"
                assert post(CONVERSATION) == "miss"
                assert post(CONVERSATION_REWORDED) == "hit-semantic"
                return [
                    ("HTTP exact hit", timed_ms(lambda: post(PROMPT), repeat)),
                    ("HTTP semantic hit", timed_ms(lambda: post(PARAPHRASE), repeat)),
                    ("HTTP semantic hit, conversation", timed_ms(lambda: post(CONVERSATION_REWORDED), repeat)),
                ]
        finally:
            gateway.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0, help="torch threads in both processes (0 = default)")
    args = parser.parse_args()
    embedder = MiniLMEmbedder(threads=args.threads or None)
    with tempfile.TemporaryDirectory() as tmp:
        rows = in_process(Path(tmp), embedder, args.repeat)
        rows += over_http(Path(tmp), args.repeat, args.threads)
        rows.append(("embed one prompt (again, after)", timed_ms(lambda: embedder.embed([PARAPHRASE]), args.repeat)))
    reference = statistics.median(rows[0][1] + rows[-1][1])
    print(table(rows, reference))


if __name__ == "__main__":
    main()
