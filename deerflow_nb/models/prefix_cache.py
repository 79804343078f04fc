"""Prefix snapshots: the fixed prompt prefix is computed once per machine and restored at every start.

On two CPU cores llama.cpp reads a prompt at 60-70 tokens/s, so the system prompt and tool
list alone cost seconds before the first token of every new process. After the first request
of a process, the server's slot (whose KV cache starts with that prefix) is saved with
llama.cpp's slot save; a later process restores it before its first request and then reads
only the new tokens.

A snapshot is keyed by a digest of the weights, the llama.cpp runtime version, the context
size and the rendered prefix, so any change among them builds a new one. It is written under
a temporary name and renamed into place, so a crash never leaves a bad snapshot; a snapshot
that fails to restore is discarded with a warning, never fatal.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import threading
from pathlib import Path

import httpx

__all__ = ["PrefixSnapshots", "snapshot_key"]

logger = logging.getLogger(__name__)


def _runtime_version() -> str:
    try:
        return importlib.metadata.version("xllamacpp")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def snapshot_key(weights_id: str, runtime_version: str, n_ctx: int, prefix: str) -> str:
    """The digest naming a snapshot: every input that changes the cached tokens is in it."""
    material = json.dumps({"weights": weights_id, "runtime": runtime_version, "n_ctx": n_ctx, "prefix": prefix},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:32]


class PrefixSnapshots:
    """Restore-once and save-once of one server's slot 0, keyed by prefix.

    ``directory`` is llama.cpp's ``slot_save_path`` (the server joins it to file names without
    a separator, so the server is given it with a trailing ``/``).
    """

    def __init__(self, url: str, directory: Path, *, weights_id: str, n_ctx: int,
                 runtime_version: str | None = None, timeout: float = 120.0,
                 client: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self._client = client  # injected in tests (httpx.MockTransport); else one request each
        self.directory = directory
        self.weights_id = weights_id
        self.n_ctx = n_ctx
        self.runtime_version = runtime_version or _runtime_version()
        self.timeout = timeout
        self._lock = threading.Lock()
        self.restored = False  # tried (only before the first request of this server)
        self._saved: set[str] = set()
        self._paths: dict[str, Path] = {}
        self.last_restore: str | None = None  # "restored", "missing" or "failed" (for benchmarks and tests)

    def path(self, prefix: str) -> Path:
        """Where the snapshot of ``prefix`` lives."""
        if (found := self._paths.get(prefix)) is None:
            key = snapshot_key(self.weights_id, self.runtime_version, self.n_ctx, prefix)
            found = self._paths[prefix] = self.directory / f"prefix-{key}.bin"
        return found

    def save_due(self, prefix: str) -> bool:
        """Whether :meth:`save` may still have work for ``prefix`` (no I/O: callers skip the hop if not)."""
        return self.path(prefix).name not in self._saved

    def _slot(self, action: str, filename: str) -> None:
        post = self._client.post if self._client is not None else httpx.post
        response = post(f"{self.url}/slots/0", params={"action": action}, json={"filename": filename},
                        timeout=self.timeout)
        if response.status_code != 200:
            raise RuntimeError(f"slot {action} answered {response.status_code}: {response.text[:200]}")

    def restore(self, prefix: str) -> bool:
        """Before the server's first request: load the snapshot of ``prefix`` if there is one."""
        with self._lock:
            if self.restored:
                return False
            self.restored = True
            target = self.path(prefix)
            if not target.is_file():
                self.last_restore = "missing"
                return False
            try:
                self._slot("restore", target.name)
            except (httpx.HTTPError, RuntimeError) as exc:
                logger.warning("discarding the prompt snapshot %s: it did not restore (%s)", target.name, exc)
                target.unlink(missing_ok=True)
                self.last_restore = "failed"
                return False
            self._saved.add(target.name)
            self.last_restore = "restored"
            return True

    def save(self, prefix: str) -> bool:
        """After a request that began with ``prefix``: snapshot the slot, unless one exists already."""
        with self._lock:
            target = self.path(prefix)
            if target.name in self._saved or target.is_file():
                self._saved.add(target.name)
                return False
            self._saved.add(target.name)
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                self._slot("save", tmp.name)
                os.replace(tmp, target)
            except (httpx.HTTPError, RuntimeError, OSError) as exc:
                logger.warning("could not save the prompt snapshot %s: %s", target.name, exc)
                tmp.unlink(missing_ok=True)
                return False
            return True
