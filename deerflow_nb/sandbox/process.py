"""Run one command with bounded output, a wall-clock limit and process-group cleanup.

Shared by every provider that runs a host process (``local`` runs ``bash -c`` directly,
``bubblewrap`` runs ``bwrap ... bash -c``, ``docker`` may run ``docker exec``):

* the command gets its own process group (``start_new_session``) so a timeout can
  kill everything it spawned, and stdin is ``/dev/null`` so ``cat`` or ``read`` get EOF;
* stdout and stderr are merged into one pipe read by a drain thread that keeps at most
  ``max_output_bytes`` (the head and the tail) and discards the rest while still reading,
  so a chatty command never blocks on a full pipe;
* :func:`run_command` returns as soon as the main process exits: a background child
  (``server &``) that inherited the pipe keeps it open, so the drain gets only a short
  grace period and then keeps discarding in the background until that child exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import CommandResult
from deerflow_nb.sandbox.env_policy import mask_values

__all__ = ["DEFAULT_TIMEOUT_HINT", "OutputCollector", "run_command"]

DEFAULT_TIMEOUT_HINT = (
    "Run long-lived processes (servers, watchers) in the background, e.g. "
    "`nohup cmd > /mnt/user-data/workspace/log.txt 2>&1 &`, then check the log."
)
_READ_CHUNK = 65536
_TERM_GRACE_S = 2.0
_DRAIN_GRACE_S = 0.5


class OutputCollector:
    """Drains a pipe on a daemon thread, keeping the first and last bytes within a budget.

    The head keeps the command's opening lines, the tail keeps its final error
    messages; everything between is counted and dropped.
    """

    def __init__(self, fd: int, max_bytes: int) -> None:
        self._fd = fd
        self._head_budget = max(max_bytes // 2, 1)
        self._tail_budget = max(max_bytes - self._head_budget, 0)
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="sandbox-output-drain", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self._fd, _READ_CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                with self._lock:
                    self._add(chunk)
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._done.set()

    def _add(self, chunk: bytes) -> None:
        self._total += len(chunk)
        room = self._head_budget - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self._tail_budget:
            self._tail += chunk
            overflow = len(self._tail) - self._tail_budget
            if overflow > 0:
                del self._tail[:overflow]  # bytearray drops its front cheaply

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for EOF; ``True`` if the pipe closed."""
        return self._done.wait(timeout)

    def snapshot(self) -> tuple[str, bool, int]:
        """``(text, truncated, total_bytes)`` of what was read so far."""
        with self._lock:
            total = self._total
            kept = len(self._head) + len(self._tail)
            if kept >= total:
                return (bytes(self._head) + bytes(self._tail)).decode("utf-8", "replace"), False, total
            head = bytes(self._head).decode("utf-8", "replace")
            tail = bytes(self._tail).decode("utf-8", "replace")
        marker = f"\n[... {total - kept} bytes of output omitted ...]\n"
        return head + marker + tail, True, total


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, give it a grace period, then SIGKILL whatever is left."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid  # the leader is gone; its group id is still its pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(_TERM_GRACE_S)
    # Children may trap SIGTERM or outlive the leader: always finish with SIGKILL.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    proc.wait()


def _exit_note(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"[terminated by signal {name}]"
    return f"[exit code {code}]"


def run_command(
    argv: list[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    timeout: float,
    max_output_bytes: int,
    mask: Iterable[str] = (),
    timeout_hint: str = DEFAULT_TIMEOUT_HINT,
    drain_grace: float = _DRAIN_GRACE_S,
) -> CommandResult:
    """Run ``argv`` and collect its merged output.

    Args:
        argv: the program and its arguments (no shell is added).
        cwd: working directory of the command.
        env: its complete environment (build it with ``build_sandbox_env``).
        timeout: wall-clock seconds before the whole process group is killed.
        max_output_bytes: output budget; the middle of longer output is dropped.
        mask: values replaced with ``***`` in the output (injected secrets).
        timeout_hint: advice appended to the output after a timeout.
        drain_grace: how long to wait for the pipe to close after the command exits
            (a backgrounded child may keep it open forever).

    Returns:
        A :class:`CommandResult`; a non-zero exit adds a trailing ``[exit code N]``
        line, a timeout sets ``timed_out`` and appends a note with ``timeout_hint``.

    Raises:
        SandboxError: the program could not be started.
        ValueError: ``timeout`` or ``max_output_bytes`` is not positive.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    if max_output_bytes <= 0:
        raise ValueError(f"max_output_bytes must be positive, got {max_output_bytes!r}")
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=Path(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        os.close(read_fd)
        raise SandboxError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from exc
    finally:
        # Only the child (and its descendants) hold the write end now, so EOF means they all exited.
        os.close(write_fd)
    collector = OutputCollector(read_fd, max_output_bytes)
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:
        _kill_group(proc)  # e.g. KeyboardInterrupt: leave no orphaned group behind
        raise
    collector.wait(drain_grace)
    duration = time.monotonic() - started

    text, truncated, _total = collector.snapshot()
    notes: list[str] = []
    if truncated:
        notes.append(f"output truncated to {max_output_bytes} bytes")
    if timed_out:
        note = f"[timed out after {timeout:g}s; the command's process group was killed. {timeout_hint}]"
        notes.append(note)
        text = _append_line(text, note)
        exit_code: int | None = None
    else:
        exit_code = proc.returncode
        if exit_code != 0:
            text = _append_line(text, _exit_note(exit_code))
    return CommandResult(
        output=mask_values(text, mask),
        exit_code=exit_code,
        timed_out=timed_out,
        truncated=truncated,
        duration_s=duration,
        notes=tuple(notes),
    )


def _append_line(text: str, line: str) -> str:
    if text and not text.endswith("\n"):
        text += "\n"
    return text + line
