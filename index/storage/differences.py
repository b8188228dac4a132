"""Remembered differences' labels in SQL (`deja_difference_labels`), so that every replica sums the same evidence
(`index.match.differences` holds the counting)."""

from __future__ import annotations

from sqlalchemy import Engine, delete, insert, select

from index.errors import store_errors
from index.match.differences import DifferenceLabel, pairs_from_key, pairs_key
from index.storage.schema import difference_labels


class SqlDifferenceLog:
    """A `DifferenceLog` over the entry database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, label: DifferenceLabel) -> None:
        row = {"namespace": label.namespace, "pairs": pairs_key(label.pairs), "same": label.same,
               "weight": label.weight, "created_at": label.at}
        with store_errors("remember a difference"), self.engine.begin() as conn:
            conn.execute(insert(difference_labels).values(**row))

    def since(self, after: float) -> list[DifferenceLabel]:
        t = difference_labels.c
        query = select(t.namespace, t.pairs, t.same, t.weight, t.created_at).where(t.created_at > after).order_by(
            t.created_at, t.id)
        with store_errors("read the remembered differences"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [DifferenceLabel(row.namespace, pairs_from_key(row.pairs), bool(row.same), float(row.weight),
                                float(row.created_at)) for row in rows]

    def prune(self, before: float) -> None:
        with store_errors("forget old difference labels"), self.engine.begin() as conn:
            conn.execute(delete(difference_labels).where(difference_labels.c.created_at < before))
