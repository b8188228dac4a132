"""Which replica holds which namespaces' semantic index: jump consistent hashing of the namespace onto
`shards` buckets (Lamping & Veach 2014), so growing from n to n+1 shards moves only ~1/(n+1) of the namespaces.
SQL stays the record for all of them; a replica indexes, and answers semantic hits for, its own shard only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def jump_hash(key: int, buckets: int) -> int:
    """The bucket in [0, buckets) for a 64-bit key."""
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & 0xFFFFFFFFFFFFFFFF
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def shard_of(namespace: str, shards: int) -> int:
    key = int.from_bytes(hashlib.blake2b(namespace.encode(), digest_size=8).digest(), "big")
    return jump_hash(key, shards)


@dataclass(frozen=True)
class Shard:
    """This replica's share: shard `index` of `count` (the default, 0 of 1, owns everything)."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count}: need 0 <= shard < shards")

    def owns(self, namespace: str) -> bool:
        return self.count == 1 or shard_of(namespace, self.count) == self.index
