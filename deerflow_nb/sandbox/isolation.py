"""Pieces shared by the isolating providers (``bubblewrap`` and ``docker``).

* :func:`isolated_env` — the environment of a command inside an isolating sandbox. Unlike
  the ``local`` provider it inherits almost nothing from the host: only locale and
  terminal settings, then the injected (request-scoped) values, with a fixed ``PATH``,
  ``HOME`` and ``TMPDIR`` that make sense inside the sandbox, and matplotlib set up to
  run headless with its cache in the private ``/tmp``.
* :func:`limit_notes` — turns the symptoms of a resource limit (``MemoryError``, a
  fork refused, a cgroup OOM kill) into plain notes on the :class:`CommandResult`, so
  the agent learns *why* its command died instead of guessing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from deerflow_nb.sandbox.base import CommandResult
from deerflow_nb.sandbox.env_policy import HEADLESS_ENV, build_sandbox_env

__all__ = [
    "SANDBOX_HOME",
    "SANDBOX_PATH",
    "LimitEvents",
    "add_limit_notes",
    "isolated_env",
    "limit_notes",
]

SANDBOX_HOME = "/tmp"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# matplotlib's config and font cache: the default (under HOME) would do too, but an explicit
# writable folder keeps it working when a command sets HOME elsewhere.
SANDBOX_MPLCONFIGDIR = "/tmp/matplotlib"

# Locale and terminal settings are harmless and change how tools format output.
_PASS_THROUGH = frozenset({"LANG", "LANGUAGE", "TZ", "TERM"})

_MEMORY_SYMPTOMS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")
_PIDS_SYMPTOMS = ("fork: retry", "fork: Resource temporarily unavailable", "Resource temporarily unavailable")


def isolated_env(
    extra: Mapping[str, str] | None = None,
    *,
    path: str = SANDBOX_PATH,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The complete environment of one command in an isolating sandbox.

    Host variables other than locale/terminal settings are dropped (their values
    describe the host, and some are secrets); ``extra`` is layered on top through
    :func:`~deerflow_nb.sandbox.env_policy.build_sandbox_env`, so it is validated the
    same way as for the local provider. ``extra`` may override ``PATH``, ``HOME`` or the
    matplotlib settings (``MPLBACKEND=Agg``, ``MPLCONFIGDIR=/tmp/matplotlib``).
    """
    source = os.environ if base is None else base
    kept = {k: v for k, v in source.items() if k in _PASS_THROUGH or k.startswith("LC_")}
    fixed = {
        "PATH": path,
        "HOME": SANDBOX_HOME,
        "TMPDIR": "/tmp",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "SHELL": "/bin/bash",
        "LANG": kept.get("LANG") or "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        **HEADLESS_ENV,
        "MPLCONFIGDIR": SANDBOX_MPLCONFIGDIR,
    }
    return build_sandbox_env(extra, base={**kept, **fixed})


@dataclasses.dataclass(frozen=True)
class LimitEvents:
    """What the kernel reported about one command's cgroup (counts during the command)."""

    oom_kills: int = 0
    pids_max_hits: int = 0


def limit_notes(
    result: CommandResult, *, memory_mb: int, pids_limit: int, events: LimitEvents | None = None
) -> list[str]:
    """Notes explaining that a command ran into the sandbox's memory or process limit."""
    notes: list[str] = []
    text = result.output
    killed = result.exit_code in (137, -9)
    if (events and events.oom_kills) or any(s in text for s in _MEMORY_SYMPTOMS):
        notes.append(f"[the command hit the sandbox memory limit ({memory_mb} MB)]")
    elif killed and not result.timed_out and events is None:
        # Without cgroup counters a SIGKILL we did not send is most likely the OOM killer.
        notes.append(f"[the command was killed, probably by the sandbox memory limit ({memory_mb} MB)]")
    if (events and events.pids_max_hits) or any(s in text for s in _PIDS_SYMPTOMS):
        notes.append(f"[the command hit the sandbox process limit ({pids_limit} processes)]")
    return notes


def add_limit_notes(
    result: CommandResult, *, memory_mb: int, pids_limit: int, events: LimitEvents | None = None
) -> CommandResult:
    """``result`` with :func:`limit_notes` appended to its output and ``notes``."""
    notes = limit_notes(result, memory_mb=memory_mb, pids_limit=pids_limit, events=events)
    if not notes:
        return result
    output = result.output
    if output and not output.endswith("\n"):
        output += "\n"
    output += "\n".join(notes)
    return dataclasses.replace(result, output=output, notes=(*result.notes, *notes))
