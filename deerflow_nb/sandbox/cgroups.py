"""Per-command cgroups for the ``bubblewrap`` provider, where the host delegates them.

Resource limits (``ulimit``) are per process, and ``RLIMIT_NPROC`` is not enforced at
all for processes whose host uid is root — a fork bomb started by a root notebook
inside ``bwrap`` would run unbounded. A cgroup bounds the whole command instead:
``pids.max`` for the process count and a memory limit for the total.

:meth:`CgroupManager.detect` finds a writable place for such cgroups (cgroup v1
``pids`` and ``memory`` hierarchies, or a cgroup v2 subtree with both controllers
delegated); where there is none it returns ``None`` and the provider relies on
rlimits alone (documented in ``docs/sandboxes.md``).

A one-shot command gets a cgroup of its own. A long-lived sandbox instance gets one
cgroup for all of its processes (``bwrap``, the command runner and every command):
creating a cgroup costs about 0.1 ms, but *moving* a process into one takes the
kernel's cgroup-wide threadgroup lock (an RCU synchronisation), about 1.5 ms per v1
hierarchy, which would triple the per-command overhead.

Cgroup names start with the owner id of the process that made them (see :mod:`deerflow_nb.utils.owner`):
a sweep removes only the leftovers of dead owners, never a live peer's cgroup.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from deerflow_nb.sandbox.isolation import LimitEvents
from deerflow_nb.utils.owner import owner_alive, process_owner_id

__all__ = ["CgroupManager", "CommandCgroup", "cgroups_disabled"]

_log = logging.getLogger(__name__)
_ROOT = Path("/sys/fs/cgroup")
_GROUP = "deerflow-nb-sandbox"
_SWEEP_MIN_AGE_S = 60.0


def _read_int_field(path: Path, field: str) -> int:
    """The integer after ``field`` in a ``key value`` file (0 when absent or unreadable)."""
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == field:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


@dataclass
class CommandCgroup:
    """The cgroup folder(s) of one command or sandbox instance (one per v1 hierarchy)."""

    dirs: list[Path]
    version: int

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid to in order to join."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def events(self) -> LimitEvents:
        """OOM kills and refused forks counted in this cgroup so far."""
        oom = pids = 0
        for d in self.dirs:
            if self.version == 2:
                oom += _read_int_field(d / "memory.events", "oom_kill")
                pids += _read_int_field(d / "pids.events", "max")
            else:
                oom += _read_int_field(d / "memory.oom_control", "oom_kill")
                pids += _read_int_field(d / "pids.events", "max")
        return LimitEvents(oom_kills=oom, pids_max_hits=pids)

    def pids(self) -> list[int]:
        """Host pids of the processes in this cgroup (empty when it is gone)."""
        try:
            text = (self.dirs[0] / "cgroup.procs").read_text()
        except (OSError, IndexError):
            return []
        return [int(p) for p in text.split() if p.isdigit()]

    def kill_all(self, *, rounds: int = 50) -> bool:
        """SIGKILL every process in the cgroup, repeating while a fork race refills it.

        Returns whether it ended up empty.
        """
        for attempt in range(rounds):
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002 * min(attempt + 1, 10))
        return not self.pids()

    def remove(self) -> None:
        """Delete the folder(s); retried briefly while the killed processes finish exiting."""
        pending = list(self.dirs)
        for attempt in range(40):
            left = []
            for d in pending:
                try:
                    d.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(d)  # EBUSY: a process is still exiting; swept later otherwise
            pending = left
            if not pending:
                return
            time.sleep(0.01 * (attempt + 1))

    def remove_later(self) -> None:
        """Queue :meth:`remove` for a background thread.

        Removing a memory cgroup that just held processes can take many milliseconds
        (the kernel offlines it), which would otherwise be paid by every command.
        """
        _REMOVER.submit(self)


class _Remover:
    """One daemon thread removing finished cgroups; flushed at interpreter exit."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[CommandCgroup] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.parents: set[Path] = set()

    def submit(self, group: CommandCgroup) -> None:
        self._queue.put(group)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="sandbox-cgroup-remover", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._queue.get().remove()

    def flush(self) -> None:
        """Remove what is still queued, then our (empty) parent folders."""
        while True:
            try:
                self._queue.get_nowait().remove()
            except queue.Empty:
                break
        mine = f"{process_owner_id()}_"
        for parent in self.parents:
            with contextlib.suppress(OSError):
                for child in parent.iterdir():
                    if child.is_dir() and mine in child.name:  # a peer process's cgroups are its own
                        with contextlib.suppress(OSError):
                            child.rmdir()
            with contextlib.suppress(OSError):
                parent.rmdir()


_REMOVER = _Remover()
atexit.register(_REMOVER.flush)


class CgroupManager:
    """Creates one cgroup per command below a parent the current process may write."""

    def __init__(self, parents: dict[str, Path], version: int, *, owner: str | None = None) -> None:
        self.parents = parents
        self.version = version
        #: Whose cgroups this manager creates (default: this process, see :mod:`deerflow_nb.utils.owner`).
        self.owner = owner or process_owner_id()
        if version == 1:  # v1 folders are ours alone: remove them when the process exits
            _REMOVER.parents.update(parents.values())

    @classmethod
    def detect(cls, *, owner: str | None = None) -> CgroupManager | None:
        """A manager for this host (creating ``owner``'s cgroups), or ``None`` when cgroups are not writable here."""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        own: dict[str, str] = {}
        for line in lines:
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(","):
                own[name] = path
        v1: dict[str, Path] = {c: _ROOT / c / own[c].lstrip("/") / _GROUP for c in ("pids", "memory") if c in own}
        if len(v1) == 2 and all((_ROOT / c / "cgroup.procs").exists() for c in v1):
            manager = cls(v1, 1, owner=owner)
        elif "" in own and (_ROOT / "cgroup.controllers").exists():
            base = _ROOT / own[""].lstrip("/")
            try:
                delegated = (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                return None
            if not {"pids", "memory"} <= set(delegated):
                return None
            manager = cls({"unified": base}, 2, owner=owner)
        else:
            return None
        return manager if manager._probe() else None

    def _probe(self) -> bool:
        try:
            group = self.create(pids_max=8, memory_bytes=64 * 1024 * 1024)
        except OSError as exc:
            _log.debug("cgroups not usable for sandbox limits: %s", exc)
            return False
        group.remove()
        self.sweep()
        return True

    def sweep(self, *, min_age_s: float = _SWEEP_MIN_AGE_S) -> None:
        """Remove empty cgroups left behind by processes that are gone.

        A cgroup named by a live owner (or by an owner of another host) stays. One without an
        owner in its name (an older version's) goes once it is older than ``min_age_s``: a
        cgroup another provider has just created is empty until its first process joins it.
        """
        cutoff = time.time() - min_age_s
        for parent in self.parents.values():
            pattern = f"{_GROUP}-*" if self.version == 2 else "*"
            with contextlib.suppress(OSError):
                for child in parent.glob(pattern):
                    name = child.name.removeprefix(f"{_GROUP}-") if self.version == 2 else child.name
                    owner = name.rpartition("_")[0]
                    if owner == self.owner or (owner and owner_alive(owner) is not False):
                        continue
                    with contextlib.suppress(OSError):
                        if child.is_dir() and (owner or child.stat().st_mtime < cutoff):
                            child.rmdir()

    def create(self, *, pids_max: int, memory_bytes: int) -> CommandCgroup:
        """A fresh cgroup limited to ``pids_max`` processes and ``memory_bytes`` of memory.

        Raises:
            OSError: the cgroup could not be created or limited.
        """
        name = f"{self.owner}_{uuid.uuid4().hex[:12]}"
        dirs: list[Path] = []
        try:
            if self.version == 2:
                d = self.parents["unified"] / f"{_GROUP}-{name}"
                d.mkdir()
                dirs.append(d)
                (d / "pids.max").write_text(str(pids_max))
                (d / "memory.max").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):
                    (d / "memory.swap.max").write_text("0")
            else:
                for controller, parent in self.parents.items():
                    parent.mkdir(exist_ok=True)
                    d = parent / name
                    d.mkdir()
                    dirs.append(d)
                    if controller == "pids":
                        (d / "pids.max").write_text(str(pids_max))
                    else:
                        (d / "memory.limit_in_bytes").write_text(str(memory_bytes))
                        with contextlib.suppress(OSError):  # absent without swap accounting
                            (d / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        except OSError:
            CommandCgroup(dirs, self.version).remove()
            raise
        return CommandCgroup(dirs, self.version)

    def __repr__(self) -> str:
        return f"CgroupManager(v{self.version}, {sorted(str(p) for p in self.parents.values())})"


def cgroups_disabled() -> bool:
    """Whether ``DEERFLOW_SANDBOX_NO_CGROUPS=1`` asks the bubblewrap provider to skip cgroups."""
    return os.environ.get("DEERFLOW_SANDBOX_NO_CGROUPS", "") not in ("", "0")
