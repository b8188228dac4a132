"""Start-up from an HNSW snapshot: load + catch-up from SQL, and every broken snapshot falls back to a rebuild."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from index.cache import Cache
from index.embedding.embedder import HashEmbedder
from index.maintenance import Maintainer
from index.request.keys import build_key
from index.search.snapshot import SnapshotDir
from support.caches import ANSWER, chat_body, sqlite_cache


class OtherModel(HashEmbedder):
    model_id = "fake/another-model"




def store(cache: Cache, text: str) -> int:
    entry_id = cache.store_answer(build_key("ns", chat_body(text)), ANSWER)
    assert entry_id is not None
    return entry_id


def nearest(cache: Cache, text: str) -> int | None:
    key = build_key("ns", chat_body(text))
    found = cache.index.search(cache.embedder.embed([key.prompt])[0], key.scope, k=1)
    return found[0].entry_id if found else None


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, SnapshotDir, dict[str, int]]:
    db, snapshot = tmp_path / "db.sqlite", SnapshotDir(tmp_path / "snapshot")
    cache = sqlite_cache(db)
    Maintainer(cache, None).start()
    ids = {t: store(cache, t) for t in ("reset my password", "cancel my plan", "export my invoices")}
    manifest = Maintainer(cache, None).save_snapshot(snapshot)
    assert manifest is not None and manifest.entries == 3 and manifest.watermark == max(ids.values())
    return db, snapshot, ids


def test_an_index_unchanged_since_its_snapshot_is_not_written_again(
        saved: tuple[Path, SnapshotDir, dict[str, int]]) -> None:
    db, snapshot, _ = saved
    cache = sqlite_cache(db)
    maintainer = Maintainer(cache, None)
    assert maintainer.start(snapshot).from_snapshot
    graph = snapshot.path / "index.search.hnsw"
    written = graph.stat().st_mtime_ns
    assert maintainer.save_snapshot(snapshot) is None and graph.stat().st_mtime_ns == written
    store(cache, "delete my account")  # the index changes: the next save writes it
    manifest = maintainer.save_snapshot(snapshot)
    assert manifest is not None and manifest.entries == 4
    assert maintainer.save_snapshot(snapshot) is None  # and then holds it


def test_start_loads_the_snapshot_and_catches_up_from_sql(saved: tuple[Path, SnapshotDir, dict[str, int]]) -> None:
    db, snapshot, ids = saved
    writer = sqlite_cache(db)
    Maintainer(writer, None).start()
    later = store(writer, "delete my account")  # written after the snapshot
    Maintainer(writer, None).delete([ids["cancel my plan"]])  # deleted after the snapshot

    cache = sqlite_cache(db)
    report = Maintainer(cache, None).start(snapshot)
    assert report.from_snapshot and report.added == 1 and report.removed == 1
    assert nearest(cache, "reset my password") == ids["reset my password"]
    assert nearest(cache, "delete my account") == later
    assert ids["cancel my plan"] not in cache.index and len(cache.index) == 3


def corrupt_graph(snapshot: SnapshotDir) -> None:
    path = snapshot.path / "index.search.hnsw"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate_graph(snapshot: SnapshotDir) -> None:
    path = snapshot.path / "index.search.hnsw"
    path.write_bytes(path.read_bytes()[:100])


def garble_manifest(snapshot: SnapshotDir) -> None:
    (snapshot.path / "manifest.json").write_text('{"format": 1, "model_id"')


def drop_scopes(snapshot: SnapshotDir) -> None:
    (snapshot.path / "scopes.npz").unlink()


@pytest.mark.parametrize("damage", [corrupt_graph, truncate_graph, garble_manifest, drop_scopes],
                         ids=["flipped-byte", "truncated", "bad-manifest", "missing-scopes"])
def test_a_broken_snapshot_is_never_served_the_index_is_rebuilt(
    saved: tuple[Path, SnapshotDir, dict[str, int]], damage: Any
) -> None:
    db, snapshot, ids = saved
    damage(snapshot)
    cache = sqlite_cache(db)
    report = Maintainer(cache, None).start(snapshot)
    assert not report.from_snapshot and report.added == 3
    assert all(nearest(cache, text) == entry_id for text, entry_id in ids.items())


def test_a_snapshot_of_another_model_is_not_loaded(saved: tuple[Path, SnapshotDir, dict[str, int]]) -> None:
    db, snapshot, _ = saved
    report = Maintainer(sqlite_cache(db, OtherModel()), None).start(snapshot)
    assert not report.from_snapshot


def test_a_snapshot_ahead_of_a_reset_database_is_not_loaded(
    saved: tuple[Path, SnapshotDir, dict[str, int]], tmp_path: Path
) -> None:
    _, snapshot, _ = saved
    fresh = sqlite_cache(tmp_path / "fresh.sqlite")
    store(fresh, "only entry")
    report = Maintainer(fresh, None).start(snapshot)
    assert not report.from_snapshot and len(fresh.index) == 1


def test_no_snapshot_means_a_rebuild(tmp_path: Path) -> None:
    cache = sqlite_cache(tmp_path / "db.sqlite")
    store(cache, "hello there friend")
    report = Maintainer(sqlite_cache(tmp_path / "db.sqlite"), None).start(SnapshotDir(tmp_path / "none"))
    assert not report.from_snapshot and report.added == 1
