"""Remembered differences' labels in SQL (`deja_difference_labels`), so that every replica sums the same evidence
(`index.match.differences` holds the counting; each sync reads only the labels written since its last, by
`created_at`, ids telling a label read twice)."""

from __future__ import annotations

from sqlalchemy import Engine, delete, insert, select

from index.errors import store_errors
from index.match.differences import DifferenceLabel, pairs_from_key, pairs_key
from index.storage.schema import difference_labels


class SqlDifferenceLog:
    """A `DifferenceLog` over the entry database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, label: DifferenceLabel) -> int:
        row = {"namespace": label.namespace, "pairs": pairs_key(label.pairs), "same": label.same,
               "weight": label.weight, "created_at": label.at}
        with store_errors("remember a difference"), self.engine.begin() as conn:
            key = conn.execute(insert(difference_labels).values(**row)).inserted_primary_key
        return int(key[0]) if key is not None else 0

    def since(self, after: float) -> list[DifferenceLabel]:
        t = difference_labels.c
        query = select(t.id, t.namespace, t.pairs, t.same, t.weight, t.created_at).where(
            t.created_at >= after).order_by(t.created_at, t.id)
        with store_errors("read the remembered differences"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [DifferenceLabel(row.namespace, pairs_from_key(row.pairs), bool(row.same), float(row.weight),
                                float(row.created_at), int(row.id)) for row in rows]

    def prune(self, before: float) -> None:
        with store_errors("forget old difference labels"), self.engine.begin() as conn:
            conn.execute(delete(difference_labels).where(difference_labels.c.created_at < before))
