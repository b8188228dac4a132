"""Cache core: request keys, exact tier, embedder, HNSW index, entry store, guards and the hit/miss rule.

Nothing here imports `service` or `eval`, and nothing here reads the environment.
"""
