"""The host half of the command-runner protocol, shared by the docker and bubblewrap providers.

Both providers keep one long-lived :mod:`.container_runner` per sandbox and talk to it
the same way: one JSON request line per command (tagged with an id), one JSON reply
line back, matched to its request by id on a reader thread so several commands may run
at once. :class:`RunnerLink` holds that bookkeeping; subclasses start the runner, move
the bytes (pipes for bubblewrap, Docker's multiplexed socket for docker) and word the
errors for their backend.

Nothing here waits without a deadline: a runner that dies ends the reader, which fails
every waiter at once with a clear :class:`SandboxError`.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from typing import Any

from deerflow_nb.errors import SandboxError

__all__ = ["RunnerLink"]


class _Waiter:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: dict[str, Any] | None = None


class RunnerLink:
    """Request/reply bookkeeping for one runner; subclasses supply the transport.

    Subclasses implement :meth:`_send` and call :meth:`_feed` with the runner's stdout
    bytes, :meth:`_keep_stderr` with its stderr bytes and :meth:`_fail` when the
    connection ends; they wait for the ``ready`` line with :meth:`_await_ready`.

    Args:
        max_line: the longest reply line accepted (output is bounded by the runner; a
            longer line means something in the sandbox is writing to our pipe).
    """

    #: Logger and name used when the runner writes a line that is not JSON.
    _logger = logging.getLogger(__name__)
    _log_name = "sandbox runner"
    #: Reasons given to waiters; ``{exc}`` / ``{deadline_s}`` are filled in.
    _send_lost = "lost the connection to the runner ({exc})"
    _no_answer = "no answer from the sandbox runner within {deadline_s:g}s"

    def __init__(self, *, max_line: int = 64 * 1024 * 1024) -> None:
        self.max_line = max_line
        self.last_used = time.monotonic()
        self.busy = 0
        self.why_closed = ""
        self._ids = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._closed = False
        self._stderr = bytearray()
        self._ready = _Waiter()

    @property
    def alive(self) -> bool:
        """Whether the runner still answers (its connection is open)."""
        return not self._closed

    def stderr_tail(self) -> str:
        """The last bytes the runner (or what started it) wrote to stderr (start errors, crashes)."""
        return bytes(self._stderr[-2000:]).decode("utf-8", "replace").strip()

    def request(self, payload: dict[str, Any], *, deadline_s: float) -> dict[str, Any]:
        """Send one request and wait at most ``deadline_s`` seconds for its answer.

        Raises:
            SandboxError: the runner is (or becomes) gone, refused the request, or did
                not answer in time.
        """
        waiter = _Waiter()
        with self._lock:
            if self._closed:
                raise SandboxError(f"the sandbox runner is gone: {self.why_closed}")
            rid = next(self._ids)
            self._waiters[rid] = waiter
            self.busy += 1
        data = (json.dumps({**payload, "id": rid}) + "\n").encode("utf-8")
        try:
            with self._send_lock:  # closing takes this lock too: never write to a reused fd
                self._send(data)
        except OSError as exc:
            self._fail(self._send_lost.format(exc=exc))
        try:
            if not waiter.event.wait(deadline_s):
                raise SandboxError(self._no_answer.format(deadline_s=deadline_s))
        finally:
            with self._lock:
                self._waiters.pop(rid, None)
                self.busy -= 1
                self.last_used = time.monotonic()
        if waiter.reply is None:
            raise SandboxError(f"the sandbox runner is gone: {self.why_closed}")
        if "error" in waiter.reply:
            raise SandboxError(f"the sandbox runner failed: {waiter.reply['error']}")
        return waiter.reply

    # -- for subclasses ---------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        """Write one request line to the runner (called under the send lock)."""
        raise NotImplementedError

    def _await_ready(self, timeout: float) -> bool:
        """Whether the runner said ``ready`` within ``timeout`` seconds (before closing)."""
        return self._ready.event.wait(timeout) and self._ready.reply is not None

    def _fail(self, why: str) -> None:
        """Mark the link closed for ``why`` and wake every waiter (first reason wins)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.why_closed = why
            waiters = list(self._waiters.values())
            self._waiters.clear()
        for waiter in (*waiters, self._ready):
            waiter.event.set()

    def _keep_stderr(self, chunk: bytes) -> None:
        """Remember the tail of the runner's stderr for error messages."""
        self._stderr += chunk
        del self._stderr[:-8000]

    def _feed(self, pending: bytes, chunk: bytes) -> bytes | None:
        """Dispatch the complete lines of ``pending + chunk``; the unfinished rest, or ``None``.

        ``None`` means the unfinished line grew past :attr:`max_line`: the link is then
        failed and the caller must stop the runner, so the sandbox cannot grow our memory.
        """
        *lines, rest = (pending + chunk).split(b"\n")
        for line in lines:
            self._dispatch(line)
        if len(rest) > self.max_line:
            self._fail(f"the runner sent a reply longer than {self.max_line} bytes")
            return None
        return rest

    def _dispatch(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            self._logger.warning("%s: unreadable line %r", self._log_name, line[:200])
            return
        if message.get("ready"):
            self._ready.reply = message
            self._ready.event.set()
            return
        with self._lock:
            waiter = self._waiters.pop(message.get("id"), None)
        if waiter is not None:
            waiter.reply = message
            waiter.event.set()
