"""HNSW snapshots: the graph (hnswlib's file), its scope table, and a manifest naming the SQL watermark it covers,
the model, dims and graph parameters, and checksums. A snapshot that is missing, stale or fails any check is
ignored (the caller rebuilds from SQL): SQL is the record, the snapshot only saves time.
"""

from __future__ import annotations

import json
import logging
import os
import threading
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
    # CRC-32 of the graph file's first `_HEAD_BYTES` (hnswlib's header and the start of its data), checked before
    # the graph is read; the whole file's checksum is computed while hnswlib loads it. None: a snapshot written
    # before this field, whose whole checksum is checked first.
    head_crc32: int | None = None


@dataclass(frozen=True)
class Restored:
    index: SemanticIndex
    manifest: Manifest


# The graph's header and its first rows: hnswlib reads the sizes it allocates from here.
_HEAD_BYTES = 1 << 16


def _crc32(path: Path, limit: int | None = None) -> int:
    """CRC-32 of the file (of its first `limit` bytes). zlib releases the GIL on each chunk, so a thread computing
    it runs beside the hnswlib load."""
    crc = 0
    left = limit
    with path.open("rb") as f:
        while chunk := f.read(8 << 20 if left is None else min(8 << 20, left)):
            crc = zlib.crc32(chunk, crc)
            if left is not None:
                left -= len(chunk)
                if left <= 0:
                    break
    return crc


class _Checksum(threading.Thread):
    """The whole graph file's CRC-32, computed on its own thread while the graph loads."""

    def __init__(self, path: Path) -> None:
        super().__init__(name="deja-snapshot-crc", daemon=True)
        self.path = path
        self.crc: int | None = None
        self.error: OSError | None = None

    def run(self) -> None:
        try:
            self.crc = _crc32(self.path)
        except OSError as exc:
            self.error = exc


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
                            _crc32(graph_tmp), _crc32(scopes_tmp), _crc32(graph_tmp, _HEAD_BYTES))
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
        checksum = _Checksum(self.path / _GRAPH)
        checksum.start()
        try:
            with np.load(self.path / _SCOPES) as data:
                scopes = tuple(json.loads(bytes(data["names"]).decode()))
                contents = IndexContents(data["ids"].astype(np.int64), data["codes"].astype(np.int32), scopes,
                                         manifest.watermark)
            index = SemanticIndex.load(self.path / _GRAPH, dim, params, contents)
        except (OSError, ValueError, KeyError, IndexError, RuntimeError) as exc:
            log.warning("snapshot unreadable, rebuilding: %s", exc)
            return None
        finally:
            checksum.join()
        if checksum.crc != manifest.graph_crc32:
            log.warning("snapshot ignored, rebuilding: %s", checksum.error or "checksum mismatch")
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
        if _crc32(scopes) != manifest.scopes_crc32:
            return "checksum mismatch"
        # The header first: the sizes hnswlib allocates by are read from it (the rest is checked while it loads).
        if manifest.head_crc32 is None and _crc32(graph) != manifest.graph_crc32:
            return "checksum mismatch"
        if manifest.head_crc32 is not None and _crc32(graph, _HEAD_BYTES) != manifest.head_crc32:
            return "checksum mismatch"
        return None
