"""Process identity: who holds a run's lease, a container or a cgroup, and whether that process still lives.

Several processes may share one ``DEER_FLOW_HOME`` or one database (a Jupyter server and a scheduled
notebook, two servers on one volume, servers on several hosts). Each names what it holds with its owner
id ``{pid}-{start}-{host}``: the process id, the process's start time (clock ticks since boot, so a
reused pid is another owner) and a host tag. The host tag hashes the host name, the kernel's boot id
and the pid namespace, so a pid is only ever compared on the machine, boot and namespace it belongs
to: two containers with the same host name, or a host after a reboot, are other hosts. Whether a
process of another host lives cannot be told from here (:func:`owner_alive` answers ``None``); its
leases expire instead. ``DEER_FLOW_HOST_ID`` replaces the host tag (for deployments that want to name
hosts themselves, and tests that play a second host).
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
from pathlib import Path

__all__ = ["HOST_ID_ENV", "host_tag", "owner_alive", "owner_id_of", "process_owner_id"]

#: Environment variable that names this host instead of the computed tag (letters, digits, ``.``, ``_``).
HOST_ID_ENV = "DEER_FLOW_HOST_ID"


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def host_tag() -> str:
    """The tag of this host in owner ids (``DEER_FLOW_HOST_ID`` when set, else a hash of host, boot and namespace)."""
    named = os.environ.get(HOST_ID_ENV, "").strip()
    if named:
        return "".join(c if c.isalnum() or c in "._" else "_" for c in named)[:64]
    return _computed_tag()


@functools.cache
def _computed_tag() -> str:
    identity = "\0".join((socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), _pid_namespace()))
    return hashlib.sha256(identity.encode()).hexdigest()[:8]


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started (``/proc/{pid}/stat`` field 22); ``None`` when it does not exist here."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes().decode(errors="replace")
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (not Linux): the pid alone says whether it lives
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "; comm may contain spaces
    return int(fields[19]) if len(fields) > 19 else 0


def owner_id_of(pid: int) -> str:
    """The owner id of process ``pid`` of this host (its start time read now)."""
    return f"{pid}-{_start_ticks(pid) or 0}-{host_tag()}"


@functools.cache
def _own_start() -> tuple[int, int]:
    return os.getpid(), _start_ticks(os.getpid()) or 0


def process_owner_id() -> str:
    """The owner id of the current process (safe in file names and container labels)."""
    pid, started = _own_start()
    if pid != os.getpid():  # a forked child: its own identity
        _own_start.cache_clear()
        pid, started = _own_start()
    return f"{pid}-{started}-{host_tag()}"


def owner_alive(owner: str) -> bool | None:
    """Whether the process ``owner`` names still runs: ``None`` when unknown (another host, another format).

    ``owner`` may carry a suffix after ``:`` (a run manager's instance nonce); it is ignored.
    """
    parts = owner.split(":", 1)[0].split("-")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    if parts[2] != host_tag():
        return None
    started = _start_ticks(int(parts[0]))
    return started is not None and (started == int(parts[1]) or started == 0 or parts[1] == "0")
