"""The per-user memory lock: a thread lock plus an ``flock``, so processes serialise too."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the thread lock still serialises this process
    fcntl = None  # type: ignore[assignment]

__all__ = ["user_lock"]


@contextlib.contextmanager
def user_lock(user_dir: Path, lock_file: Path, thread_lock: threading.RLock) -> Iterator[None]:
    """Hold ``thread_lock`` and an exclusive ``flock`` on ``lock_file`` (creating ``user_dir``)."""
    with thread_lock:
        user_dir.mkdir(parents=True, exist_ok=True)
        with open(lock_file, "a+") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
