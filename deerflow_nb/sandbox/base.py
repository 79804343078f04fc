"""The sandbox interface every provider implements.

A :class:`Sandbox` runs commands and file operations for one thread, seeing the
virtual paths ``/mnt/user-data/{workspace,uploads,outputs}`` and ``/mnt/skills``
(read-only). A :class:`SandboxProvider` owns the sandboxes' lifecycle.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_GLOB_LIMIT",
    "DEFAULT_GREP_LIMIT",
    "CommandResult",
    "GrepMatch",
    "Sandbox",
    "SandboxProvider",
]

DEFAULT_GLOB_LIMIT = 200
DEFAULT_GREP_LIMIT = 200


@dataclass(frozen=True)
class CommandResult:
    """What a command produced.

    ``output`` is stdout and stderr interleaved, with injected ``env`` values masked
    and cut to the provider's output budget (``truncated`` says so).
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.output


@dataclass(frozen=True)
class GrepMatch:
    """One matching line: virtual path, 1-based line number and the line text."""

    path: str
    line: int
    text: str


class Sandbox(ABC):
    """One thread's execution environment. Paths are virtual (``/mnt/user-data/...``)."""

    id: str

    @abstractmethod
    def execute_command(
        self, command: str, env: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command`` with bash in the thread workspace.

        ``env`` values are visible to the command and masked in the output. The
        command runs in its own process group with stdin at EOF; past ``timeout``
        (default: ``sandbox.bash_command_timeout``) the whole group is killed.
        """

    async def aexecute_command(
        self, command: str, env: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> CommandResult:
        """Async twin of :meth:`execute_command` (runs it in a worker thread by default)."""
        return await asyncio.to_thread(self.execute_command, command, env, timeout=timeout)

    @abstractmethod
    def read_file(self, path: str) -> str:
        """Read a UTF-8 text file (undecodable bytes are replaced)."""

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """Read a file's raw bytes."""

    @abstractmethod
    def write_file(self, path: str, content: str | bytes, *, append: bool = False) -> None:
        """Write (or append to) a file, creating parent folders."""

    @abstractmethod
    def list_dir(self, path: str, *, max_depth: int = 2) -> list[str]:
        """Virtual paths below ``path`` up to ``max_depth`` levels; folders end with ``/``."""

    @abstractmethod
    def glob(self, pattern: str, path: str = "/mnt/user-data", *, limit: int = DEFAULT_GLOB_LIMIT) -> list[str]:
        """Virtual paths below ``path`` matching ``pattern`` (``**`` recurses), at most ``limit``."""

    @abstractmethod
    def grep(
        self,
        pattern: str,
        path: str = "/mnt/user-data",
        *,
        glob: str | None = None,
        ignore_case: bool = False,
        limit: int = DEFAULT_GREP_LIMIT,
    ) -> list[GrepMatch]:
        """Regex search in one text file or a directory tree (optionally filtered by ``glob``)."""

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists in the sandbox."""
        try:
            self.read_bytes(path)
            return True
        except (FileNotFoundError, IsADirectoryError):
            return False


class SandboxProvider(ABC):
    """Creates, caches and releases sandboxes for (user, thread) pairs."""

    @abstractmethod
    def acquire(self, thread_id: str | None = None, *, user_id: str = "default") -> Sandbox:
        """Return the sandbox of ``thread_id`` for ``user_id``, creating it if needed."""

    async def acquire_async(self, thread_id: str | None = None, *, user_id: str = "default") -> Sandbox:
        """Async twin of :meth:`acquire`; never blocks the event loop."""
        return await asyncio.to_thread(self.acquire, thread_id, user_id=user_id)

    @abstractmethod
    def get(self, sandbox_id: str) -> Sandbox | None:
        """An already acquired sandbox by id, or ``None``. Never does I/O."""

    @abstractmethod
    def release(self, sandbox_id: str) -> None:
        """Give a sandbox back (providers may keep it warm for reuse)."""

    def shutdown(self) -> None:  # noqa: B027 - optional hook
        """Release everything this provider holds (called on process or server stop)."""
