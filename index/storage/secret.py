"""Replicas on one database agree on the namespace secret: its fingerprint (an HMAC of a fixed label keyed by the
secret, never the secret) is kept in `deja_meta`; a replica with another secret refuses to start."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, delete, insert, select, true, update
from sqlalchemy.exc import IntegrityError

from index.errors import SecretMismatch, store_errors
from index.storage.entries import delete_entries
from index.storage.schema import meta, thresholds

FINGERPRINT_KEY = "namespace_secret_fingerprint"
ROTATE_COMMAND = "deja secret rotate"
# Changing the label changes every fingerprint: existing databases would refuse every replica.
_LABEL = b"deja namespace secret fingerprint v1"


def fingerprint(secret: bytes) -> str:
    """HMAC-SHA256 of a fixed label keyed by `secret`: equal secrets give equal fingerprints, and it reveals nothing
    of the secret."""
    return hmac.new(secret, _LABEL, hashlib.sha256).hexdigest()


def _stored(conn: Connection) -> str | None:
    value = conn.execute(select(meta.c.value).where(meta.c.key == FINGERPRINT_KEY)).scalar_one_or_none()
    return None if value is None else str(value)


def check_secret(engine: Engine, secret: bytes, at: float) -> None:
    """Claim a database no replica has claimed for `secret`; raise `SecretMismatch` on one claimed by another."""
    mine = fingerprint(secret)
    with store_errors("check the namespace secret"), engine.begin() as conn:
        stored = _stored(conn)
        if stored is None:
            try:
                with conn.begin_nested():
                    conn.execute(insert(meta).values(key=FINGERPRINT_KEY, value=mine, updated_at=at))
                return
            except IntegrityError:  # another replica claimed it at the same moment
                stored = _stored(conn)
    if stored is not None and not hmac.compare_digest(stored, mine):
        raise SecretMismatch(
            f"DEJA_NAMESPACE_SECRET is not the secret this database was written with (fingerprint {stored[:8]}, "
            f"this replica's {mine[:8]}): give every replica the same secret, or switch the database to this one "
            f"with `{ROTATE_COMMAND}` (it purges the cached entries)")


@dataclass(frozen=True)
class Rotation:
    """What `rotate_secret` did: entries purged (tombstoned, so running replicas drop them too) and per-namespace
    thresholds dropped; `changed` is False when the database already had this secret."""

    changed: bool
    entries_purged: int
    thresholds_dropped: int


def rotate_secret(engine: Engine, secret: bytes, at: float) -> Rotation:
    """Switch the database to `secret` in one transaction. Entries are filed under namespaces derived from the old
    secret and cannot be re-keyed (the credentials they came from are not stored), so they are purged; the
    thresholds learned per namespace go with them. The decision log and its labels are kept."""
    mine = fingerprint(secret)
    with store_errors("rotate the namespace secret"), engine.begin() as conn:
        stored = _stored(conn)
        if stored is not None and hmac.compare_digest(stored, mine):
            return Rotation(False, 0, 0)
        purged = delete_entries(conn, true(), at)
        dropped = conn.execute(delete(thresholds)).rowcount
        if stored is None:
            conn.execute(insert(meta).values(key=FINGERPRINT_KEY, value=mine, updated_at=at))
        else:
            conn.execute(update(meta).where(meta.c.key == FINGERPRINT_KEY).values(value=mine, updated_at=at))
    return Rotation(True, len(purged), int(dropped))
