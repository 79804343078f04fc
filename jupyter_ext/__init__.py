"""Jupyter server extension `deerflow` (gateway routes and run manager)."""
