"""Sandbox ownership: the process identity that containers and cgroups are keyed by.

Several processes may share one ``DEER_FLOW_HOME`` (a Jupyter server and a scheduled notebook,
two servers on one volume). Each provider names and labels what it creates with its owner id
``{pid}-{start}-{host}``: the process id, the process's start time (clock ticks since boot, so a
reused pid is another owner) and a hash of the host name. A provider's cleanup then removes only
sandboxes whose owner is dead, never a live peer's. Sandboxes owned by a process of another host
are never reaped from here: whether that process lives cannot be told.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
from pathlib import Path

__all__ = ["owner_alive", "process_owner_id"]


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


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


@functools.cache
def _owner_of(pid: int) -> str:
    return f"{pid}-{_start_ticks(pid) or 0}-{_host_tag()}"


def process_owner_id() -> str:
    """The owner id of the current process (safe in file names and container labels)."""
    return _owner_of(os.getpid())


def owner_alive(owner: str) -> bool | None:
    """Whether the process ``owner`` names still runs: ``None`` when unknown (another host, another format)."""
    parts = owner.split("-")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    if parts[2] != _host_tag():
        return None
    started = _start_ticks(int(parts[0]))
    return started is not None and (started == int(parts[1]) or started == 0 or parts[1] == "0")
