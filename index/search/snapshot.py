"""HNSW snapshots: the graph (hnswlib's file), its scope table, and a manifest naming the SQL watermark it covers,
the model, dims and graph parameters, and checksums. A snapshot that is missing, stale or fails any check is
ignored (the caller rebuilds from SQL): SQL is the record, the snapshot only saves time.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from index.search.hnsw import HnswParams, IndexContents, SemanticIndex

log = logging.getLogger("deja.snapshot")

FORMAT = 1
_GRAPH, _SCOPES, _MANIFEST = "index.search.hnsw", "scopes.npz", "manifest.json"


@dataclass(frozen=True)
class Manifest:
    """Written last: a snapshot exists once its manifest does, and the checksums tie the three files together."""

    format: int
    model_id: str
    dim: int
    m: int
    ef_construction: int
    watermark: int  # every entry id <= watermark that was committed at `saved_at` is in the graph
    tombstone_seq: int  # tombstones up to this one are applied
    saved_at: float
    entries: int
    graph_bytes: int
    graph_crc32: int
    scopes_crc32: int


@dataclass(frozen=True)
class Restored:
    index: SemanticIndex
    manifest: Manifest


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as f:
        while chunk := f.read(8 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


class SnapshotDir:
    """One folder holding at most one snapshot; saves are atomic (temp files, then renames, manifest last)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, index: SemanticIndex, model_id: str, tombstone_seq: int, now: float) -> Manifest:
        self.path.mkdir(parents=True, exist_ok=True)
        graph_tmp, scopes_tmp = self.path / f".{_GRAPH}.tmp", self.path / f".{_SCOPES}.tmp"
        contents = index.save(graph_tmp)
        with scopes_tmp.open("wb") as f:
            np.savez(f, ids=contents.ids, codes=contents.scope_codes,
                     names=np.frombuffer(json.dumps(contents.scopes).encode(), dtype=np.uint8))
        manifest = Manifest(FORMAT, model_id, index.dim, index.params.m, index.params.ef_construction,
                            contents.max_id, tombstone_seq, now, len(contents.ids), graph_tmp.stat().st_size,
                            _crc32(graph_tmp), _crc32(scopes_tmp))
        # Drop the old manifest first: from here until the new one lands, there is no valid snapshot.
        (self.path / _MANIFEST).unlink(missing_ok=True)
        os.replace(graph_tmp, self.path / _GRAPH)
        os.replace(scopes_tmp, self.path / _SCOPES)
        manifest_tmp = self.path / f".{_MANIFEST}.tmp"
        manifest_tmp.write_text(json.dumps(asdict(manifest)))
        os.replace(manifest_tmp, self.path / _MANIFEST)
        return manifest

    def load(self, model_id: str, dim: int, params: HnswParams) -> Restored | None:
        """The snapshot if it is present, whole, and made for this model and these parameters; else None."""
        try:
            manifest = Manifest(**json.loads((self.path / _MANIFEST).read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            log.warning("snapshot manifest unreadable, rebuilding: %s", exc)
            return None
        problem = self._problem(manifest, model_id, dim, params)
        if problem:
            log.warning("snapshot ignored, rebuilding: %s", problem)
            return None
        try:
            with np.load(self.path / _SCOPES) as data:
                scopes = tuple(json.loads(bytes(data["names"]).decode()))
                contents = IndexContents(data["ids"].astype(np.int64), data["codes"].astype(np.int32), scopes,
                                         manifest.watermark)
            index = SemanticIndex.load(self.path / _GRAPH, dim, params, contents)
        except (OSError, ValueError, KeyError, IndexError, RuntimeError) as exc:
            log.warning("snapshot unreadable, rebuilding: %s", exc)
            return None
        return Restored(index, manifest)

    def _problem(self, manifest: Manifest, model_id: str, dim: int, params: HnswParams) -> str | None:
        if manifest.format != FORMAT:
            return f"format {manifest.format}, expected {FORMAT}"
        if (manifest.model_id, manifest.dim) != (model_id, dim):
            return f"made with {manifest.model_id} ({manifest.dim} dims), serving {model_id} ({dim} dims)"
        if (manifest.m, manifest.ef_construction) != (params.m, params.ef_construction):
            return "graph parameters changed"
        graph, scopes = self.path / _GRAPH, self.path / _SCOPES
        if not graph.exists() or graph.stat().st_size != manifest.graph_bytes or not scopes.exists():
            return "graph or scope file missing, or graph truncated"
        if _crc32(graph) != manifest.graph_crc32 or _crc32(scopes) != manifest.scopes_crc32:
            return "checksum mismatch"
        return None
