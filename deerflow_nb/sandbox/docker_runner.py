"""Host side of the in-container command runner (see :mod:`.container_runner`).

One :class:`RunnerConnection` per container: a single long-lived ``docker exec`` of
``python3 -u -c <runner>`` with stdin attached. Requests are JSON lines written to the
exec's socket; answers come back in Docker's multiplexed stream format (an 8-byte
header per frame) and are matched to their request by id on a reader thread, so
several commands may run in one container at once. The request/reply bookkeeping is
shared with the bubblewrap provider in :class:`.runner_link.RunnerLink`.

Nothing here waits without a deadline: a daemon that dies closes the socket (every
waiter fails at once with a clear :class:`SandboxError`), and a daemon that hangs is
caught by the caller's deadline.
"""

from __future__ import annotations

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
from deerflow_nb.sandbox.runner_link import RunnerLink

__all__ = ["RUNNER_SOURCE", "RunnerConnection", "is_saturated", "reply_to_result"]

_log = logging.getLogger(__name__)
RUNNER_SOURCE = (Path(__file__).with_name("container_runner.py")).read_text(encoding="utf-8")
_HEADER = struct.Struct(">BxxxL")


class RunnerConnection(RunnerLink):
    """A live runner inside one container.

    Args:
        api: a ``docker.APIClient`` (``DockerClient.api``).
        container_id: the running container.
        start_timeout: seconds to wait for the runner's ``ready`` line.
        max_line: the longest reply line accepted (output is bounded by the runner; a
            longer line means something in the container is writing to our stream).

    Raises:
        SandboxError: the exec could not be started or the runner never became ready.
    """

    _logger = _log
    _send_lost = "lost the connection to the Docker daemon while sending a command ({exc})"
    _no_answer = (
        "no answer from the sandbox container within {deadline_s:g}s; "
        "the Docker daemon or the container is not responding"
    )

    def __init__(
        self, api: Any, container_id: str, *, start_timeout: float = 30.0, max_line: int = 64 * 1024 * 1024
    ) -> None:
        super().__init__(max_line=max_line)
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
        if not self._await_ready(start_timeout):
            self.close()
            raise SandboxError(
                f"the command runner in container {container_id[:12]} did not start within "
                f"{start_timeout:g}s ({self.why_closed or 'no answer'}; stderr: {self.stderr_tail() or '-'}). "
                "The image needs python3 and bash."
            )

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

    def _send(self, data: bytes) -> None:
        self._sock.sendall(data)

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
                        self._keep_stderr(frame)
                        continue
                    rest = self._feed(pending, frame)
                    if rest is None:  # an over-long reply line: the link is already failed
                        self.close()
                        return
                    pending = rest
        except OSError as exc:
            self._fail(f"lost the connection to the Docker daemon ({exc})")
            return
        tail = self.stderr_tail()
        self._fail(
            "the runner's connection closed (the container stopped or the Docker daemon went away)"
            + (f"; stderr: {tail}" if tail else "")
        )


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
