"""Long-lived ``bwrap`` sandboxes: one per (user, thread), commands sent over a socket.

A fresh ``bwrap`` costs 12-16 ms (namespaces and mounts) before the command even
starts, so the bubblewrap provider keeps one instance per sandbox running the command
runner of :mod:`.container_runner` and writes it one JSON line per command on its
stdin, like the docker provider does; answers come back on its stdout, matched to their
request by id on a reader thread, so several commands may run at once (that bookkeeping
is shared with the docker provider in :class:`.runner_link.RunnerLink`).

:class:`BwrapInstance` is one running instance; :class:`InstancePool` starts them
lazily, restarts dead ones (saying why), stops idle ones and stops them all on shutdown.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.cgroups import CommandCgroup
from deerflow_nb.sandbox.runner_link import RunnerLink

__all__ = ["BwrapInstance", "InstancePool"]

_log = logging.getLogger(__name__)

# bwrap --die-with-parent fires when the *thread* that started it exits, and callers run
# on short-lived worker threads (asyncio.to_thread): start every instance from one
# thread that lives as long as the interpreter.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="bwrap-spawner")


class BwrapInstance(RunnerLink):
    """One running ``bwrap`` sandbox with the command runner inside.

    Args:
        argv: the full command line (``bwrap ... -- python3 -c <runner>``).
        env: the environment of bwrap and the runner (commands get their own).
        cgroup: the instance's cgroup (limits for everything inside), or ``None``.
        start_timeout: seconds to wait for the runner's ``ready`` line.
        max_line: the longest reply line accepted (output is bounded by the runner; a
            longer line means something in the sandbox is writing to our pipe).

    Raises:
        SandboxError: bwrap could not start or the runner never became ready.
    """

    _logger = _log
    _log_name = "bubblewrap runner"
    _no_answer = "no answer from the bubblewrap sandbox within {deadline_s:g}s"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cgroup: CommandCgroup | None,
        start_timeout: float = 30.0,
        max_line: int = 64 * 1024 * 1024,
    ) -> None:
        super().__init__(max_line=max_line)
        self.cgroup = cgroup

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, start_new_session=True, close_fds=True)  # fmt: skip

        try:
            self.proc = _SPAWNER.submit(spawn).result()
        except OSError as exc:
            raise SandboxError(f"cannot start bwrap: {exc.strerror or exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin = self.proc.stdin.fileno()
        self._stdout = self.proc.stdout.fileno()
        threading.Thread(target=self._read_loop, name="bwrap-runner-reader", daemon=True).start()
        threading.Thread(target=self._drain_stderr, name="bwrap-runner-stderr", daemon=True).start()
        if not self._await_ready(start_timeout):
            self.stop()
            raise SandboxError(
                f"the bubblewrap sandbox did not start within {start_timeout:g}s "
                f"({self.why_closed or 'no answer'}; stderr: {self.stderr_tail() or '-'})"
            )

    def stop(self) -> None:
        """Kill the instance (every process in it) and, in the background, its cgroups."""
        self._fail("the sandbox was stopped")
        # Killing the outer bwrap kills its init (--die-with-parent) and with it the pid namespace.
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            _log.warning("bubblewrap sandbox: bwrap pid %d did not exit after SIGKILL", self.proc.pid)
        with self._send_lock:  # stdout and stderr are closed by their readers at EOF
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
        if self.cgroup is not None:
            threading.Thread(target=self._remove_cgroup, name="bwrap-cgroup-cleanup", daemon=True).start()

    def _remove_cgroup(self) -> None:
        assert self.cgroup is not None
        self.cgroup.kill_all()  # belt and braces: the namespace is already going away
        self.cgroup.remove()

    # -- internals --------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._closed:  # stop() may have closed stdin meanwhile
            view = view[os.write(self._stdin, view) :]

    def _read_loop(self) -> None:
        pending = b""
        try:
            while chunk := os.read(self._stdout, 262144):
                rest = self._feed(pending, chunk)
                if rest is None:  # an over-long reply line: the link is already failed
                    self.stop()
                    return
                pending = rest
        except OSError:
            pass
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(1)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            status = "bwrap still running"
        elif code < 0 or code >= 128:  # bwrap reports a child killed by signal N as 128 + N
            status = f"killed by signal {-code if code < 0 else code - 128}: the OOM killer, or a kill"
        else:
            status = f"exit status {code}"
        self._fail(f"its runner stopped ({status})")

    def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        try:
            for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
                self._keep_stderr(chunk)
        except (OSError, ValueError):
            pass
        finally:
            stream.close()


class InstancePool:
    """The live instances of one provider, by sandbox key.

    Args:
        idle_timeout: seconds after which an idle instance is stopped (0: never).
        check_interval: seconds between idle checks.
    """

    def __init__(self, *, idle_timeout: float, check_interval: float) -> None:
        self._idle_timeout = idle_timeout
        self._check_interval = check_interval
        self._instances: dict[str, BwrapInstance] = {}
        self._key_locks: dict[str, threading.Lock] = {}
        self._stopped_why: dict[str, str] = {}  # key -> why its last instance went away
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._reaper: threading.Thread | None = None

    def get(self, key: str, start: Callable[[], BwrapInstance]) -> tuple[BwrapInstance, str | None]:
        """The live instance of ``key`` (``start`` makes one) and, when it replaces one that stopped, why."""
        with self._lock:
            if self._closing.is_set():
                raise SandboxError("this bubblewrap sandbox provider was shut down")
            found = self._instances.get(key)
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        if found is not None and found.alive:
            return found, None
        with key_lock:  # one start per key, without blocking other sandboxes
            with self._lock:
                found = self._instances.get(key)
            why: str | None = None
            if found is not None:
                if found.alive:
                    return found, None
                why = found.why_closed
                found.stop()
            else:
                why = self._stopped_why.pop(key, None)
            instance = start()
            with self._lock:
                self._instances[key] = instance
                self._ensure_reaper()
            return instance, why

    def stop(self, key: str, *, why: str | None = None) -> None:
        """Stop the instance of ``key``; ``why`` is reported by the next command (``None``: silent)."""
        with self._lock:
            instance = self._instances.pop(key, None)
            if why is None:
                self._stopped_why.pop(key, None)
            elif instance is not None:
                self._stopped_why[key] = why
        if instance is not None:
            instance.stop()

    def keys(self) -> list[str]:
        """The keys with a live instance."""
        with self._lock:
            return list(self._instances)

    def close(self) -> None:
        """Stop every instance and the idle reaper; later :meth:`get` calls fail."""
        self._closing.set()
        with self._lock:
            instances = list(self._instances.values())
            self._instances.clear()
        for instance in instances:
            instance.stop()

    def _ensure_reaper(self) -> None:
        if self._idle_timeout > 0 and (self._reaper is None or not self._reaper.is_alive()):
            self._reaper = threading.Thread(target=self._reap, name="bwrap-idle-reaper", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        while not self._closing.wait(self._check_interval):
            now = time.monotonic()
            with self._lock:
                idle = [k for k, i in self._instances.items() if not i.busy and now - i.last_used > self._idle_timeout]
            for key in idle:
                _log.info("bubblewrap sandbox %s: stopping its idle instance", key)
                self.stop(key, why=f"idle for more than {self._idle_timeout:g}s")
