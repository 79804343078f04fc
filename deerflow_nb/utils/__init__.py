"""Small shared helpers (files, async bridging)."""
