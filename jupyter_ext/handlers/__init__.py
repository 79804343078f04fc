"""Route table of the extension: every handler module's ``default_handlers``, in match order."""

from __future__ import annotations

from jupyter_ext.handlers import conversations, features, goals, openapi, runs, schedules, threads
from jupyter_ext.handlers.base import API, NotFoundHandler

__all__ = ["default_handlers"]

default_handlers: list[tuple[str, type]] = [
    *features.default_handlers,  # before threads: /threads/{id}/uploads etc. are more specific
    *goals.default_handlers,
    *conversations.default_handlers,  # before runs: /runs/regenerate/prepare is not a run id
    *runs.default_handlers,
    *schedules.default_handlers,
    *threads.default_handlers,
    (rf"/{API}/openapi.json", openapi.OpenApiHandler),
    (rf"/{API}/.*", NotFoundHandler),  # last: unknown paths answer JSON too
]
