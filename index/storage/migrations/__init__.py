"""Alembic migrations of Deja's SQL schema (`deja db upgrade`)."""
