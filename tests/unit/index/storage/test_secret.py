"""Replicas on one database agree on the namespace secret; rotating it purges what the old one keyed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, insert, select
from typer.testing import CliRunner

from index.errors import SecretMismatch
from index.records import CacheEntry
from index.storage.entries import EntryStore, make_engine
from index.storage.schema import meta, thresholds
from index.storage.secret import FINGERPRINT_KEY, ROTATE_COMMAND, check_secret, fingerprint, rotate_secret
from service.cli import app


def store_at(tmp_path: Path) -> EntryStore:
    store = EntryStore(make_engine(f"sqlite:///{tmp_path / 'deja.db'}"))
    store.create_schema()
    return store


def entry(n: int) -> CacheEntry:
    vector = np.ones(4, dtype=np.float32) / 2
    return CacheEntry("ns", f"exact-{n}", "ctx", "m", f"prompt {n}", {"n": n}, vector, created_at=1.0)


def add_threshold(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(insert(thresholds).values(namespace="ns", min_similarity=0.9, labels=3, updated_at=1.0))


def test_fingerprint_is_stable_per_secret_and_does_not_contain_it() -> None:
    assert fingerprint(b"alpha") == fingerprint(b"alpha") != fingerprint(b"beta")
    assert "alpha" not in fingerprint(b"alpha") and len(fingerprint(b"alpha")) == 64


def claimed(engine: Engine) -> list[tuple[str, float]]:
    with engine.connect() as conn:
        return [(row.value, row.updated_at) for row in conn.execute(select(meta).where(meta.c.key == FINGERPRINT_KEY))]


def test_first_replica_claims_the_database_and_a_second_with_its_secret_starts(tmp_path: Path) -> None:
    engine = store_at(tmp_path).engine
    assert claimed(engine) == []
    check_secret(engine, b"shared", at=1.0)
    assert claimed(engine) == [(fingerprint(b"shared"), 1.0)]  # the first replica's claim: the fingerprint
    check_secret(engine, b"shared", at=2.0)  # the second starts (no SecretMismatch) and leaves the claim as it was
    assert claimed(engine) == [(fingerprint(b"shared"), 1.0)]


def test_replica_with_another_secret_refuses_and_names_the_rotate_command(tmp_path: Path) -> None:
    engine = store_at(tmp_path).engine
    check_secret(engine, b"first", at=1.0)
    with pytest.raises(SecretMismatch, match=ROTATE_COMMAND) as refused:
        check_secret(engine, b"second", at=2.0)
    assert "first" not in str(refused.value) and "second" not in str(refused.value)


def test_rotation_purges_entries_with_tombstones_and_binds_the_new_secret(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    check_secret(store.engine, b"old", at=1.0)
    ids = [store.add(entry(n)) for n in range(3)]
    add_threshold(store.engine)
    done = rotate_secret(store.engine, b"new", at=5.0)
    assert (done.changed, done.entries_purged, done.thresholds_dropped) == (True, 3, 1)
    assert store.count() == 0
    assert sorted(t.entry_id for t in store.tombstones_after(0)) == ids
    check_secret(store.engine, b"new", at=6.0)
    with pytest.raises(SecretMismatch):
        check_secret(store.engine, b"old", at=6.0)


def test_rotating_to_the_secret_in_force_purges_nothing(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    check_secret(store.engine, b"same", at=1.0)
    store.add(entry(1))
    assert not rotate_secret(store.engine, b"same", at=2.0).changed
    assert store.count() == 1


def test_serve_with_another_secret_exits_1_with_one_line(tmp_path: Path) -> None:
    check_secret(store_at(tmp_path).engine, b"first", at=1.0)
    env = {"DEJA_DATA_DIR": str(tmp_path), "DEJA_NAMESPACE_SECRET": "second"}
    result = CliRunner().invoke(app, ["serve"], env=env)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and ROTATE_COMMAND in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_rotate_command_says_what_it_purged_and_serve_then_passes_the_check(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    check_secret(store.engine, b"first", at=1.0)
    store.add(entry(1))
    env = {"DEJA_DATA_DIR": str(tmp_path), "DEJA_NAMESPACE_SECRET": "second"}
    result = CliRunner().invoke(app, ["secret", "rotate", "--yes"], env=env)
    assert result.exit_code == 0, result.output
    assert "1 entries purged" in result.stdout
    check_secret(store.engine, b"second", at=2.0)
    again = CliRunner().invoke(app, ["secret", "rotate", "--yes"], env=env)
    assert "nothing purged" in again.stdout
