"""Cache core. A request walks its sub-packages in order: `request` (canonical key, relevant context),
`embedding`, `search` (nearest neighbours in scope), then `match.decide` (the guarded rule, built on `guards`,
or the cosine rule), with `storage` holding entries, the exact tier and the decision log; `cache.Cache` wires
them. Imports flow one way (see docs/architecture.md); nothing here imports `service` or `eval` or reads the
environment.
"""
