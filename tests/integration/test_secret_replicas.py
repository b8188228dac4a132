"""Replicas on one PostgreSQL agree on the namespace secret: the first claims the database, one with another secret
refuses to start (`deja serve` exits 1 with one line), and `deja secret rotate` purges and rebinds."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from index.errors import SecretMismatch
from index.records import CacheEntry
from index.storage.entries import EntryStore, make_engine
from index.storage.secret import ROTATE_COMMAND, check_secret
from support.services import REPO, PgDatabase

pytestmark = pytest.mark.integration


@pytest.fixture
def database() -> Iterator[PgDatabase]:
    with PgDatabase() as db:
        yield db


@pytest.fixture
def store(database: PgDatabase) -> Iterator[EntryStore]:
    store = EntryStore(make_engine(database.url))
    store.create_schema()
    yield store
    store.engine.dispose()


def deja(args: list[str], database: PgDatabase, secret: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEJA_DATABASE_URL": database.url, "DEJA_NAMESPACE_SECRET": secret,
           "DEJA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "service", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)


def test_replicas_claiming_at_once_agree_on_one_secret(store: EntryStore) -> None:
    outcomes: list[str] = []

    def claim(secret: bytes) -> None:
        try:
            check_secret(store.engine, secret, at=1.0)
            outcomes.append("started")
        except SecretMismatch:
            outcomes.append("refused")

    threads = [threading.Thread(target=claim, args=(s,)) for s in (b"one", b"two", b"three", b"four")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "refused", "refused", "started"]


def test_serve_with_another_secret_exits_1_and_rotate_rebinds(database: PgDatabase, store: EntryStore,
                                                              tmp_path: Path) -> None:
    check_secret(store.engine, b"first-secret", at=1.0)
    store.add(CacheEntry("ns", "exact", "ctx", "m", "prompt", {"a": 1}, np.ones(4, dtype=np.float32) / 2, 1.0))
    refused = deja(["serve", "--port", "1"], database, "second-secret", tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip().count("\n") == 0 and ROTATE_COMMAND in refused.stderr
    assert "Traceback" not in refused.stderr

    rotated = deja(["secret", "rotate", "--yes"], database, "second-secret", tmp_path)
    assert rotated.returncode == 0, rotated.stderr
    assert "1 entries purged" in rotated.stdout
    assert store.count() == 0
    check_secret(store.engine, b"second-secret", at=2.0)
    with pytest.raises(SecretMismatch):
        check_secret(store.engine, b"first-secret", at=2.0)
