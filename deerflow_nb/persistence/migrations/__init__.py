"""Alembic migrations of the app tables (run automatically at startup by :mod:`..bootstrap`)."""
