"""Host side of the in-container command runner (see :mod:`.container_runner`).

One :class:`RunnerConnection` per container: a single long-lived ``docker exec`` of
``python3 -u -c <runner>`` with stdin attached. Requests are JSON lines written to the
exec's socket; answers come back in Docker's multiplexed stream format (an 8-byte
header per frame) and are matched to their request by id on a reader thread, so
several commands may run in one container at once.

Nothing here waits without a deadline: a daemon that dies closes the socket (every
waiter fails at once with a clear :class:`SandboxError`), and a daemon that hangs is
caught by the caller's deadline.
"""

from __future__ import annotations

import itertools
import json
import logging
import signal
import socket
import struct
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import CommandResult
from deerflow_nb.sandbox.process import DEFAULT_TIMEOUT_HINT

__all__ = ["RUNNER_SOURCE", "RunnerConnection", "is_saturated", "reply_to_result"]

_log = logging.getLogger(__name__)
RUNNER_SOURCE = (Path(__file__).with_name("container_runner.py")).read_text(encoding="utf-8")
_HEADER = struct.Struct(">BxxxL")


class _Waiter:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: dict[str, Any] | None = None


class RunnerConnection:
    """A live runner inside one container.

    Args:
        api: a ``docker.APIClient`` (``DockerClient.api``).
        container_id: the running container.
        start_timeout: seconds to wait for the runner's ``ready`` line.

    Raises:
        SandboxError: the exec could not be started or the runner never became ready.
    """

    def __init__(self, api: Any, container_id: str, *, start_timeout: float = 30.0) -> None:
        self._ids = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._closed = False
        self._why_closed = ""
        self._stderr = bytearray()
        self._ready = _Waiter()
        try:
            exec_id = api.exec_create(
                container_id, ["python3", "-u", "-c", RUNNER_SOURCE], stdin=True, stdout=True, stderr=True
            )["Id"]
            raw = api.exec_start(exec_id, socket=True)
        except Exception as exc:
            raise SandboxError(f"cannot start the command runner in container {container_id[:12]}: {exc}") from exc
        self._sock: socket.socket = getattr(raw, "_sock", raw)
        self._sock.settimeout(None)  # the reader blocks; deadlines live with the waiters
        self._reader = threading.Thread(target=self._read_loop, name="sandbox-runner-reader", daemon=True)
        self._reader.start()
        if not self._ready.event.wait(start_timeout) or self._ready.reply is None:
            self.close()
            raise SandboxError(
                f"the command runner in container {container_id[:12]} did not start within "
                f"{start_timeout:g}s ({self._why_closed or 'no answer'}; stderr: {self.stderr_tail() or '-'}). "
                "The image needs python3 and bash."
            )

    @property
    def alive(self) -> bool:
        """Whether the connection is still open."""
        return not self._closed

    def stderr_tail(self) -> str:
        """The last bytes the runner wrote to stderr (crash reports)."""
        return bytes(self._stderr[-2000:]).decode("utf-8", "replace").strip()

    def request(self, payload: dict[str, Any], *, deadline_s: float) -> dict[str, Any]:
        """Send one request and wait at most ``deadline_s`` seconds for its answer.

        Raises:
            SandboxError: the connection is (or becomes) closed, or no answer came in time.
        """
        waiter = _Waiter()
        with self._lock:
            if self._closed:
                raise SandboxError(f"the sandbox runner is gone: {self._why_closed}")
            rid = next(self._ids)
            self._waiters[rid] = waiter
        data = (json.dumps({**payload, "id": rid}) + "\n").encode("utf-8")
        try:
            with self._send_lock:
                self._sock.sendall(data)
        except OSError as exc:
            self._fail(f"lost the connection to the Docker daemon while sending a command ({exc})")
        if not waiter.event.wait(deadline_s):
            with self._lock:
                self._waiters.pop(rid, None)
            raise SandboxError(
                f"no answer from the sandbox container within {deadline_s:g}s; "
                "the Docker daemon or the container is not responding"
            )
        if waiter.reply is None:
            raise SandboxError(f"the sandbox runner is gone: {self._why_closed}")
        if "error" in waiter.reply:
            raise SandboxError(f"the sandbox runner failed: {waiter.reply['error']}")
        return waiter.reply

    def close(self) -> None:
        """Close the exec's socket: the runner sees EOF, kills its commands and exits."""
        self._fail("the sandbox was closed")
        for how in (socket.SHUT_RDWR,):
            try:
                self._sock.shutdown(how)
            except OSError:
                pass
        try:
            self._sock.close()
        except OSError:
            pass

    # -- internals ------------------------------------------------------------------

    def _fail(self, why: str) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._why_closed = why
            waiters = list(self._waiters.values())
            self._waiters.clear()
        for waiter in (*waiters, self._ready):
            waiter.event.set()

    def _read_loop(self) -> None:
        buffer = b""
        pending = b""
        try:
            while True:
                chunk = self._sock.recv(65536)
                if not chunk:
                    break
                buffer += chunk
                while len(buffer) >= _HEADER.size:
                    stream, size = _HEADER.unpack_from(buffer)
                    if len(buffer) < _HEADER.size + size:
                        break
                    frame = buffer[_HEADER.size : _HEADER.size + size]
                    buffer = buffer[_HEADER.size + size :]
                    if stream == 2:
                        self._stderr += frame
                        del self._stderr[:-8000]
                        continue
                    pending += frame
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        self._dispatch(line)
        except OSError as exc:
            self._fail(f"lost the connection to the Docker daemon ({exc})")
            return
        tail = self.stderr_tail()
        self._fail(
            "the runner's connection closed (the container stopped or the Docker daemon went away)"
            + (f"; stderr: {tail}" if tail else "")
        )

    def _dispatch(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            _log.warning("sandbox runner: unreadable line %r", line[:200])
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


def is_saturated(exc: SandboxError) -> bool:
    """Whether the command failed to *start* for lack of process slots (safe to retry).

    A connection lost while a command ran is never retried: the command may have had effects.
    """
    text = str(exc)
    return any(s in text for s in ("no free process slot", "cannot start the command runner", "did not start within"))


def reply_to_result(reply: Mapping[str, Any], timeout: float, max_output: int) -> CommandResult:
    """A runner answer as a :class:`CommandResult`, formatted exactly like the local provider's."""
    text = str(reply.get("output", ""))
    notes: list[str] = []
    truncated = bool(reply.get("truncated"))
    if truncated:
        notes.append(f"output truncated to {max_output} bytes")
    timed_out = bool(reply.get("timed_out"))
    exit_code = reply.get("exit_code")
    if timed_out:
        extra = f"[timed out after {timeout:g}s; the command's process group was killed. {DEFAULT_TIMEOUT_HINT}]"
        notes.append(extra)
        exit_code = None
    elif exit_code == 0:
        extra = ""
    elif isinstance(exit_code, int) and exit_code < 0:
        try:
            extra = f"[terminated by signal {signal.Signals(-exit_code).name}]"
        except ValueError:
            extra = f"[terminated by signal {-exit_code}]"
    else:
        extra = f"[exit code {exit_code}]"
    if extra:
        text = (text if not text or text.endswith("\n") else text + "\n") + extra
    return CommandResult(
        output=text,
        exit_code=exit_code,
        timed_out=timed_out,
        truncated=truncated,
        duration_s=float(reply.get("duration", 0.0)),
        notes=tuple(notes),
    )
