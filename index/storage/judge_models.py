"""Judges fitted from traffic, kept in SQL so every replica loads the one in force without a restart.

A row per fitted judge (its files as one blob); `active` marks the judge in force (none: the shipped prior).
Applying records when; rolling back retires the judge in force and restores the one applied before it.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, insert, select, update

from index.errors import store_errors
from index.judge.model import Judge, JudgeModelError, load_judge, save_judge
from index.storage.schema import judge_models

SHIPPED = "shipped"  # what `in_force` reports when no fitted judge is active


@dataclass(frozen=True)
class StoredJudge:
    """One fitted judge as stored (without its blob)."""

    version: str
    labels: int
    created_at: float
    applied_at: float | None
    active: bool
    note: str


def pack(judge: Judge) -> bytes:
    """The judge's folder (as `save_judge` writes it) as one zip blob."""
    with tempfile.TemporaryDirectory(prefix="deja-judge-") as tmp:
        save_judge(judge, Path(tmp))
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for path in sorted(Path(tmp).iterdir()):
                archive.write(path, path.name)
    return buffer.getvalue()


def unpack(blob: bytes) -> Judge:
    """Load a judge from `pack`'s blob; raises `JudgeModelError` when it cannot be used by this build."""
    with tempfile.TemporaryDirectory(prefix="deja-judge-") as tmp:
        try:
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                for name in archive.namelist():
                    if "/" in name or name.startswith("."):
                        raise JudgeModelError(f"unexpected file {name!r} in a stored judge")
                    (Path(tmp) / name).write_bytes(archive.read(name))
        except zipfile.BadZipFile as exc:
            raise JudgeModelError(f"stored judge is not readable: {exc}") from exc
        return load_judge(Path(tmp))


class JudgeStore:
    """SQL access for fitted judges: save, apply, roll back, and what is in force."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def save(self, judge: Judge, labels: int, at: float, note: str = "") -> None:
        """Store a fitted judge (not in force yet); saving one version twice keeps the first."""
        row = {"version": judge.version, "model": pack(judge), "labels": labels, "created_at": at,
               "applied_at": None, "active": False, "note": note}
        with store_errors("store judge"), self.engine.begin() as conn:
            known = conn.execute(select(judge_models.c.version).where(judge_models.c.version == judge.version))
            if known.first() is None:
                conn.execute(insert(judge_models).values(**row))

    def apply(self, version: str, at: float) -> None:
        """Put a stored judge in force (replicas pick it up on their next sync tick)."""
        with store_errors("apply judge"), self.engine.begin() as conn:
            conn.execute(update(judge_models).values(active=False))
            done = conn.execute(update(judge_models).where(judge_models.c.version == version)
                                .values(active=True, applied_at=at))
            if done.rowcount == 0:
                raise KeyError(version)

    def rollback(self) -> str | None:
        """Retire the judge in force and restore the one applied before it. Returns the version now in
        force (None: the shipped prior); raises LookupError when no fitted judge is in force."""
        with store_errors("roll back judge"), self.engine.begin() as conn:
            current = conn.execute(select(judge_models).where(judge_models.c.active)).first()
            if current is None:
                raise LookupError("no fitted judge is in force (the shipped prior is)")
            conn.execute(update(judge_models).where(judge_models.c.version == current.version)
                         .values(active=False, applied_at=None))
            before = conn.execute(
                select(judge_models.c.version).where(judge_models.c.applied_at.is_not(None))
                .order_by(judge_models.c.applied_at.desc()).limit(1)).first()
            if before is None:
                return None
            conn.execute(update(judge_models).where(judge_models.c.version == before.version).values(active=True))
            return str(before.version)

    def in_force(self) -> str | None:
        """Version of the active fitted judge (None: the shipped prior). One small query: the sync tick's."""
        with store_errors("read judge in force"), self.engine.connect() as conn:
            row = conn.execute(select(judge_models.c.version).where(judge_models.c.active)).first()
        return None if row is None else str(row.version)

    def load(self, version: str) -> Judge:
        with store_errors("read judge"), self.engine.connect() as conn:
            row = conn.execute(select(judge_models.c.model).where(judge_models.c.version == version)).first()
        if row is None:
            raise JudgeModelError(f"no stored judge {version}")
        return unpack(bytes(row.model))

    def history(self) -> list[StoredJudge]:
        """Every stored judge, newest first."""
        columns = [c for c in judge_models.c if c.name != "model"]
        with store_errors("read judges"), self.engine.connect() as conn:
            rows = conn.execute(select(*columns).order_by(judge_models.c.created_at.desc())).all()
        return [StoredJudge(r.version, int(r.labels), float(r.created_at),
                            None if r.applied_at is None else float(r.applied_at), bool(r.active), r.note or "")
                for r in rows]

