"""The ``bubblewrap`` provider: each command in fresh Linux namespaces via ``bwrap``.

Every command gets new user, pid, ipc, uts and (by default) network namespaces and
sees only:

* ``/usr`` (and the ``/bin``, ``/lib*`` links), a few loader/locale/TLS files from
  ``/etc``, and the running Python's installation when it lives outside ``/usr`` —
  all read-only;
* the thread's user-data at ``/mnt/user-data/{workspace,uploads,outputs}`` (read-write)
  and the skills at ``/mnt/skills/{public,custom}`` (read-only);
* a private ``/tmp``, its own ``/proc`` and a minimal ``/dev``.

Limits: the wall-clock timeout kills the whole pid namespace; memory and process
count are bounded by a per-command cgroup where the host allows one (see
:mod:`~deerflow_nb.sandbox.cgroups`) and always by ``ulimit -v`` / ``ulimit -u``;
output is capped like every provider's. Processes started in the background end with
the command (the namespace goes away): use the docker provider for long-lived ones.
File operations run on the host through the same path mapping as ``local``.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import CommandResult
from deerflow_nb.sandbox.cgroups import CgroupManager, CommandCgroup, cgroups_disabled
from deerflow_nb.sandbox.isolation import SANDBOX_PATH, add_limit_notes, isolated_env
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider
from deerflow_nb.sandbox.paths import VIRTUAL_SKILLS, VIRTUAL_WORKSPACE
from deerflow_nb.sandbox.process import run_command
from deerflow_nb.utils.files import atomic_write_text

__all__ = ["BubblewrapSandbox", "BubblewrapSandboxProvider", "bwrap_available"]

_log = logging.getLogger(__name__)

# Only what programs need to start and format output; never passwd/shadow/ssh keys.
# Dynamic loader, alternatives links, time zone and NSS config: what programs need to
# start. Never passwd/shadow/ssh keys; every extra bind costs per-command time.
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf")
_NETWORK_ETC = ("resolv.conf", "hosts", "host.conf", "gai.conf", "services", "protocols", "ssl", "ca-certificates")
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SANDBOX_UID = 1000
# Inside the sandbox, without cgroups: rlimits, then the command. RLIMIT_NPROC must be
# set inside, where it counts only the sandbox's own user namespace.
_LIMITS_SCRIPT = 'ulimit -v "$1" -u "$2" || exit 125; exec /bin/bash -c "$3"'
# On the host, with cgroups: join them and cap address space, then exec bwrap; one
# fewer shell inside the sandbox keeps the per-command overhead low.
_JOIN_SCRIPT = (
    'ulimit -v "$1" || exit 125; n=$2; shift 2; '
    'while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
)


@functools.cache
def bwrap_available() -> str | None:
    """Why bubblewrap cannot run here, or ``None`` when a trial sandbox starts."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    trial = [exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
             *_root_link_args(), "--proc", "/proc", "--", "/usr/bin/true"]  # fmt: skip
    try:
        done = subprocess.run(trial, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        return f"bwrap cannot create namespaces here: {done.stderr.strip() or done.returncode}"
    return None


def _root_link_args() -> list[str]:
    """``/bin``, ``/lib``... as on the host: symlinks into ``/usr`` or read-only binds."""
    args: list[str] = []
    for name in _ROOT_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


class BubblewrapSandbox(LocalSandbox):
    """A thread's sandbox whose commands run under ``bwrap`` (files via the host mapping)."""

    provider: BubblewrapSandboxProvider

    def command_argv(self, command: str, *, with_rlimits: bool = True) -> list[str]:
        """``bwrap <namespaces, mounts> -- bash -c command`` (``ulimit`` first if asked)."""
        cfg = self.config
        mounts: list[str] = []
        # Parents before children: /mnt/user-data (read-only) then its writable folders.
        for mount in sorted(self.mapping.mounts, key=lambda m: len(m.virtual)):
            if mount.virtual == VIRTUAL_SKILLS:
                continue  # a host folder of symlinks; the two skill roots are bound directly
            if mount.host.is_dir():
                mounts += ["--ro-bind" if mount.read_only else "--bind", str(mount.host), mount.virtual]
        # The root is a tmpfs holding the mount points: make it read-only once they exist.
        head = [*self.provider.base_args, *mounts, "--remount-ro", "/", "--chdir", VIRTUAL_WORKSPACE,
                "--", "/bin/bash", "-c"]  # fmt: skip
        if not with_rlimits:
            return [*head, command]
        return [*head, _LIMITS_SCRIPT, "sandbox", str(cfg.memory_mb * 1024), str(cfg.pids_limit), command]

    def postprocess_output(self, text: str) -> str:
        """Paths inside the sandbox already are the virtual ones: nothing to rewrite."""
        return text

    def execute_command(
        self, command: str, env: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command`` in a fresh bwrap sandbox; limit hits are explained in the output."""
        if not isinstance(command, str) or not command.strip():
            raise ValueError("command must be a non-empty string")
        injected = dict(env or {})
        cfg = self.config
        group = self.provider.new_cgroup()
        if group is None:
            argv = self.command_argv(command)
        else:
            procs = group.procs_files
            argv = ["/bin/sh", "-c", _JOIN_SCRIPT, "sandbox", str(cfg.memory_mb * 1024), str(len(procs)), *procs,
                    *self.command_argv(command, with_rlimits=False)]  # fmt: skip
        try:
            result = run_command(
                argv,
                cwd=self.workspace,
                env=isolated_env(injected, path=self.provider.sandbox_path),
                timeout=timeout if timeout is not None else cfg.bash_command_timeout,
                max_output_bytes=cfg.max_output_bytes,
                mask=injected.values(),
            )
            events = group.events() if group is not None else None
        finally:
            if group is not None:
                group.remove_later()
        return add_limit_notes(result, memory_mb=cfg.memory_mb, pids_limit=cfg.pids_limit, events=events)


class BubblewrapSandboxProvider(LocalSandboxProvider):
    """Per-(user, thread) :class:`BubblewrapSandbox` es (ids ``bubblewrap:{thread_id}``).

    Extra ``sandbox`` keys: ``extra_ro_paths`` (host folders to expose read-only at the
    same path, e.g. a virtual environment) and ``use_cgroups`` (default ``true``).

    Raises:
        SandboxError: at construction, when ``bwrap`` is missing or cannot create
            namespaces on this host (the message says which).
    """

    sandbox_class = BubblewrapSandbox
    id_prefix = "bubblewrap"

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        paths: Paths,
        skills_root: Path | None = None,
        max_cached: int = 256,
    ) -> None:
        super().__init__(config, paths=paths, skills_root=skills_root, max_cached=max_cached)
        problem = bwrap_available()
        if problem is not None:
            raise SandboxError(f"sandbox.use 'bubblewrap' is unavailable: {problem}")
        extra = self.config.model_extra or {}
        ro_paths = [Path(p).expanduser().resolve() for p in extra.get("extra_ro_paths", []) or []]
        runtime = Path(sys.base_prefix).resolve()
        if not runtime.is_relative_to("/usr"):
            ro_paths.insert(0, runtime)  # the Python this notebook runs, e.g. a pyenv build
        self.ro_paths = [p for p in ro_paths if p.exists()]
        bins = [str(p / "bin") for p in self.ro_paths if (p / "bin").is_dir()]
        self.sandbox_path = ":".join([*bins, SANDBOX_PATH])
        self.cgroups = None if cgroups_disabled() or not extra.get("use_cgroups", True) else CgroupManager.detect()
        if self.cgroups is None and os.geteuid() == 0:
            _log.warning(
                "bubblewrap sandbox: no writable cgroup here and running as root, so the "
                "process limit (ulimit -u) is not enforced; commands are still killed at timeout"
            )
        self.base_args = self._base_args()

    def _etc_dir(self) -> Path:
        """A provider-owned ``passwd``/``group`` naming the sandbox user (no host accounts)."""
        folder = self.paths.home / "sandbox-mounts" / "bwrap-etc"
        folder.mkdir(parents=True, exist_ok=True)
        uid = _SANDBOX_UID
        files = {
            "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:{uid}:{uid}:sandbox:/tmp:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            "group": f"root:x:0:\nsandbox:x:{uid}:\nnogroup:x:65534:\n",
            "hostname": "sandbox\n",
        }
        for name, text in files.items():
            target = folder / name
            if not target.exists() or target.read_text() != text:
                atomic_write_text(target, text)
        return folder

    def _base_args(self) -> list[str]:
        exe = shutil.which("bwrap") or "bwrap"
        args = [exe, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                "--uid", str(_SANDBOX_UID), "--gid", str(_SANDBOX_UID), "--hostname", "sandbox",
                "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr", *_root_link_args()]  # fmt: skip
        network = self.config.network == "host"
        if not network:
            args.append("--unshare-net")
        for name in (*_ETC_FILES, *(_NETWORK_ETC if network else ())):
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        etc = self._etc_dir()
        for name in ("passwd", "group", "hostname"):
            args += ["--ro-bind", str(etc / name), f"/etc/{name}"]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp",
                 "--tmpfs", "/run", "--dir", "/mnt/user-data"]  # fmt: skip
        for path in self.ro_paths:  # after the tmpfs mounts, which would hide a path below /tmp
            args += ["--ro-bind", str(path), str(path)]
        return args

    def new_cgroup(self) -> CommandCgroup | None:
        """A per-command cgroup with the configured limits, or ``None`` where unavailable."""
        if self.cgroups is None:
            return None
        try:
            return self.cgroups.create(
                pids_max=self.config.pids_limit, memory_bytes=self.config.memory_mb * 1024 * 1024
            )
        except OSError as exc:
            _log.warning("bubblewrap sandbox: cannot create a cgroup (%s); using rlimits only", exc)
            return None

    def _make_sandbox(self, user_id: str, thread_id: str | None) -> LocalSandbox:
        sandbox = super()._make_sandbox(user_id, thread_id)
        assert isinstance(sandbox, BubblewrapSandbox)
        sandbox.provider = self
        return sandbox
