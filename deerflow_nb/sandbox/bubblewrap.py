"""The ``bubblewrap`` provider: commands in Linux namespaces via ``bwrap``.

Each (user, thread) sandbox is one long-lived ``bwrap`` instance, started by its first
command, running the command runner of :mod:`.container_runner`, which receives each
command as a JSON line on a pipe (see :mod:`.bwrap_instance`);
``sandbox.bwrap_persistent: false`` runs a fresh ``bwrap`` per command instead (12-16 ms
more per command). Either way, commands run in new user, pid, ipc, uts and (by default)
network namespaces and see only:

* ``/usr`` (and the ``/bin``, ``/lib*`` links), a few loader/locale/TLS files from
  ``/etc``, the running Python's installation when it lives outside ``/usr`` and its
  virtual environment (first on ``PATH``) — all read-only;
* the thread's user-data at ``/mnt/user-data/{workspace,uploads,outputs}`` (read-write)
  and the skills at ``/mnt/skills/{public,custom}`` (read-only);
* a private ``/tmp``, its own ``/proc`` and a minimal ``/dev``.

Limits: each command runs in its own process group with stdin at EOF and an
``RLIMIT_AS`` of ``sandbox.memory_mb`` (``RLIMIT_NPROC`` too without cgroups). Where the
host allows cgroups (see :mod:`~deerflow_nb.sandbox.cgroups`) a persistent instance runs
in one cgroup bounding all its processes (``pids_limit`` and ``memory_mb``, plus room for
the runner), and a one-shot command in a cgroup of its own. The wall-clock timeout kills
the command's process group and every descendant (one-shot: the whole pid namespace).
Output is capped like every provider's. Background processes live until the instance
stops (release, idle timeout, shutdown); one-shot commands take theirs along. File
operations run on the host through the same path mapping as ``local``.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import logging
import os
import shutil
import subprocess
import sys
import weakref
from collections.abc import Mapping
from pathlib import Path

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox import container_runner
from deerflow_nb.sandbox.base import CommandResult
from deerflow_nb.sandbox.bwrap_instance import BwrapInstance, InstancePool
from deerflow_nb.sandbox.cgroups import CgroupManager, CommandCgroup, cgroups_disabled
from deerflow_nb.sandbox.docker_runner import reply_to_result
from deerflow_nb.sandbox.env_policy import mask_values
from deerflow_nb.sandbox.isolation import SANDBOX_PATH, LimitEvents, add_limit_notes, isolated_env
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider
from deerflow_nb.sandbox.paths import VIRTUAL_SKILLS, VIRTUAL_WORKSPACE
from deerflow_nb.sandbox.process import run_command
from deerflow_nb.utils.files import atomic_write_text

__all__ = ["BubblewrapSandbox", "BubblewrapSandboxProvider", "bwrap_available"]

_log = logging.getLogger(__name__)

# Dynamic loader, alternatives links, time zone, NSS and fontconfig (matplotlib lists system
# fonts with fc-list): what programs need to start. Never passwd/shadow/ssh keys; every
# extra bind costs start-up time.
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
              "fonts")  # fmt: skip
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
# The runner is bound read-only into each instance (not sent with -c: `ps` would show it).
_RUNNER_FILE = Path(container_runner.__file__).resolve()
_RUNNER_PATH = "/run/deerflow-nb/runner.py"
# A persistent instance's cgroup also holds bwrap and the runner: room for them.
_RUNNER_PIDS = 16
_RUNNER_MEMORY = 64 * 1024 * 1024
_DEADLINE_SLACK_S = 30.0
_LEFTOVERS_NOTE = "[the processes it left running were stopped, so they do not hold the process slots]"


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

    def sandbox_args(self) -> list[str]:
        """``bwrap <namespaces, mounts>``: everything before ``--`` and the program."""
        mounts: list[str] = []
        # Parents before children: /mnt/user-data (read-only) then its writable folders.
        for mount in sorted(self.mapping.mounts, key=lambda m: len(m.virtual)):
            if mount.virtual == VIRTUAL_SKILLS:
                continue  # a host folder of symlinks; the two skill roots are bound directly
            if mount.host.is_dir():
                mounts += ["--ro-bind" if mount.read_only else "--bind", str(mount.host), mount.virtual]
        # The root is a tmpfs holding the mount points: make it read-only once they exist.
        return [*self.provider.base_args, *mounts, "--remount-ro", "/", "--chdir", VIRTUAL_WORKSPACE]

    def command_argv(self, command: str, *, with_rlimits: bool = True) -> list[str]:
        """One-shot: ``bwrap <namespaces, mounts> -- bash -c command`` (``ulimit`` first if asked)."""
        cfg = self.config
        head = [*self.sandbox_args(), "--", "/bin/bash", "-c"]
        if not with_rlimits:
            return [*head, command]
        return [*head, _LIMITS_SCRIPT, "sandbox", str(cfg.memory_mb * 1024), str(cfg.pids_limit), command]

    def runner_argv(self) -> list[str]:
        """Persistent: ``bwrap <namespaces, mounts> -- python3 -I -S -u <runner> <rlimits>``.

        The rlimits are set on the runner, so every command inherits them (race-free,
        and without a per-command ``preexec_fn``).
        """
        cfg = self.config
        limits = ["--rlimit-as", str(cfg.memory_mb * 1024 * 1024)]
        if self.provider.cgroups is None:
            limits += ["--rlimit-nproc", str(cfg.pids_limit)]  # counted inside the user namespace
        python = self.provider.runner_python or "python3"
        return [*self.sandbox_args(), "--ro-bind", str(_RUNNER_FILE), _RUNNER_PATH, "--", python, "-I", "-S", "-u",
                _RUNNER_PATH, *limits]  # fmt: skip

    def postprocess_output(self, text: str) -> str:
        """Paths inside the sandbox already are the virtual ones: nothing to rewrite."""
        return text

    def execute_command(
        self, command: str, env: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command`` in the sandbox (see :class:`Sandbox`); limit hits are explained in the output."""
        if not isinstance(command, str) or not command.strip():
            raise ValueError("command must be a non-empty string")
        limit = float(timeout if timeout is not None else self.config.bash_command_timeout)
        if limit <= 0:
            raise ValueError(f"timeout must be positive, got {limit!r}")
        if self.provider.persistent:
            return self._execute_persistent(command, dict(env or {}), limit)
        return self._execute_once(command, dict(env or {}), limit)

    def _execute_persistent(self, command: str, injected: dict[str, str], limit: float) -> CommandResult:
        cfg = self.config
        request = {"cmd": command, "env": isolated_env(injected, path=self.provider.sandbox_path),
                   "cwd": VIRTUAL_WORKSPACE, "timeout": limit, "max_output": cfg.max_output_bytes,
                   "drain_grace": 0.5, "kill_tree": True, "counters": False}  # fmt: skip
        instance, why = self.provider.instances.get(self.key, lambda: self.provider.start_instance(self))
        notes: list[str] = []
        if why is not None:
            notes.append(f"[this sandbox's previous instance had stopped ({why}); a fresh one was started, "
                         "so background processes and /tmp from earlier commands are gone]")  # fmt: skip
        try:
            reply, events = self._send(instance, request, limit)
        except SandboxError as exc:
            if container_runner.FULL in str(exc):
                # A runaway background tree holds every process slot of the instance: restart it, retry once.
                self.provider.instances.stop(self.key)
                instance, _ = self.provider.instances.get(self.key, lambda: self.provider.start_instance(self))
                notes.append("[the sandbox had no free process slot (a runaway background process tree?); it was "
                             "restarted, which stopped background processes and cleared /tmp]")  # fmt: skip
                reply, events = self._send(instance, request, limit)
            elif not instance.alive:
                # The instance died under the command (OOM killer, a `kill` of the runner), taking the
                # command with it (its pid namespace got SIGKILL): say so.
                reply, events = {"output": f"[{exc}; the next command starts a fresh sandbox]", "exit_code": -9}, None
            else:
                raise
        if events is not None and events.pids_max_hits and isinstance(reply.get("pid"), int) and instance.alive:
            # A fork bomb's background remains would hold every process slot: stop what it left.
            with contextlib.suppress(SandboxError):
                killed = instance.request({"op": "kill_session", "sid": reply["pid"]}, deadline_s=_DEADLINE_SLACK_S)
                reply["leftovers_killed"] = killed.get("killed", 0)
        result = reply_to_result(reply, limit, cfg.max_output_bytes)
        result = dataclasses.replace(result, output=mask_values(result.output, injected.values()))
        result = add_limit_notes(result, memory_mb=cfg.memory_mb, pids_limit=cfg.pids_limit, events=events)
        if reply.get("leftovers_killed"):
            output = f"{result.output}\n{_LEFTOVERS_NOTE}" if result.output else _LEFTOVERS_NOTE
            result = dataclasses.replace(result, output=output, notes=(*result.notes, _LEFTOVERS_NOTE))
        if not notes:
            return result
        # First, like the docker provider's, so the command's own output still ends as usual.
        return dataclasses.replace(result, output="\n".join([*notes, result.output]), notes=(*notes, *result.notes))

    @staticmethod
    def _send(
        instance: BwrapInstance, request: dict[str, object], limit: float
    ) -> tuple[dict[str, object], LimitEvents | None]:
        """One request, with the instance cgroup's limit events during it (``None`` without cgroups).

        Commands running at the same time in this sandbox share the counters.
        """
        group = instance.cgroup
        before = group.events() if group is not None else None
        reply = instance.request(request, deadline_s=limit + _DEADLINE_SLACK_S)
        if group is None or before is None:
            return reply, None
        after = group.events()
        return reply, LimitEvents(after.oom_kills - before.oom_kills, after.pids_max_hits - before.pids_max_hits)

    def _execute_once(self, command: str, injected: dict[str, str], limit: float) -> CommandResult:
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
                timeout=limit,
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
    same path), ``expose_venv`` (default ``true``: the notebook's virtual environment is
    bound read-only at its own path and its ``bin`` put first on ``PATH``),
    ``use_cgroups`` (default ``true``) and
    ``bwrap_persistent`` (default ``true``: one long-lived instance per sandbox, stopped
    by :meth:`release`, after ``idle_timeout`` idle seconds and by :meth:`shutdown`).

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
        owner: str | None = None,
    ) -> None:
        super().__init__(config, paths=paths, skills_root=skills_root, max_cached=max_cached)
        problem = bwrap_available()
        if problem is not None:
            raise SandboxError(f"sandbox.use 'bubblewrap' is unavailable: {problem}")
        extra = self.config.model_extra or {}
        ro_paths = [Path(p).expanduser().resolve() for p in extra.get("extra_ro_paths", []) or []]
        # The Python this notebook runs (e.g. a pyenv build), and its virtual environment first,
        # so `python3` in a command is the venv's interpreter with the packages installed there
        # (pandas, scipy, ...); its pyvenv.cfg finds the base installation, bound too.
        runtimes = [Path(sys.base_prefix).resolve()]
        if extra.get("expose_venv", True) and sys.prefix != sys.base_prefix:
            runtimes.insert(0, Path(sys.prefix).absolute())  # not resolved: pyvenv.cfg sits beside bin/
        for runtime in reversed(runtimes):
            if not runtime.is_relative_to("/usr") and runtime not in ro_paths:
                ro_paths.insert(0, runtime)
        self.ro_paths = [p for p in ro_paths if p.exists()]
        bins = [str(p / "bin") for p in self.ro_paths if (p / "bin").is_dir()]
        self.sandbox_path = ":".join([*bins, SANDBOX_PATH])
        # the instances' cgroups are named by ``owner`` (default: this process), see :mod:`deerflow_nb.utils.owner`
        use_cgroups = not cgroups_disabled() and extra.get("use_cgroups", True)
        self.cgroups = CgroupManager.detect(owner=owner) if use_cgroups else None
        if self.cgroups is None and os.geteuid() == 0:
            _log.warning(
                "bubblewrap sandbox: no writable cgroup here and running as root, so the "
                "process limit (ulimit -u) is not enforced; commands are still killed at timeout"
            )
        self.base_args = self._base_args()
        self.runner_python = self._runner_python()
        self.persistent = bool(extra.get("bwrap_persistent", True))
        if self.persistent and self.runner_python is None:
            _log.warning("bubblewrap sandbox: no Python visible inside the sandbox; running one bwrap per command")
            self.persistent = False
        cfg = self.config
        self.instances = InstancePool(idle_timeout=cfg.idle_timeout, check_interval=cfg.idle_check_interval)
        atexit.register(_shutdown_if_alive, weakref.ref(self))

    def _runner_python(self) -> str | None:
        """A Python the sandbox can run (``/usr`` or a read-only path) for the command runner."""
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        candidates = [Path(sys.base_prefix) / "bin" / version, Path(sys.base_prefix) / "bin" / "python3"]
        for candidate in (*candidates, Path("/usr/bin/python3")):
            real = candidate.resolve()
            if real.is_file() and any(real.is_relative_to(root) for root in (Path("/usr"), *self.ro_paths)):
                return str(real)
        return None

    # -- persistent instances -------------------------------------------------------------

    def start_instance(self, sandbox: BubblewrapSandbox) -> BwrapInstance:
        """Start the long-lived instance of ``sandbox`` (in its own cgroup where possible)."""
        self._stop_evicted()
        group = None
        if self.cgroups is not None:
            memory = self.config.memory_mb * 1024 * 1024 + _RUNNER_MEMORY
            try:
                group = self.cgroups.create(pids_max=self.config.pids_limit + _RUNNER_PIDS, memory_bytes=memory)
            except OSError as exc:
                _log.warning("bubblewrap sandbox: cannot create a cgroup (%s); using rlimits only", exc)
        argv = sandbox.runner_argv()
        if group is not None:  # join it before exec'ing bwrap: everything inside inherits it
            procs = group.procs_files
            argv = ["/bin/sh", "-c", _JOIN_SCRIPT, "sandbox", "unlimited", str(len(procs)), *procs, *argv]
        sandbox.workspace.mkdir(parents=True, exist_ok=True)
        try:
            # One malloc arena: each extra one reserves 64 MB of address space, and the runner
            # lives under the commands' RLIMIT_AS (its threads would otherwise fail to start).
            env = isolated_env({"MALLOC_ARENA_MAX": "1"}, path=self.sandbox_path)
            return BwrapInstance(argv, env=env, cgroup=group)
        except SandboxError:
            if group is not None:
                group.kill_all()
                group.remove()
            raise

    def _stop_evicted(self) -> None:
        """Stop the instances of sandboxes the LRU cache dropped (nobody can reach them)."""
        with self._lock:
            cached = set(self._cache)
        for key in self.instances.keys():
            if key not in cached:
                self.instances.stop(key)

    def acquire(self, thread_id: str | None = None, *, user_id: str = "default") -> BubblewrapSandbox:
        """The sandbox of ``(user_id, thread_id)``; its instance starts with its first command."""
        sandbox = super().acquire(thread_id, user_id=user_id)
        assert isinstance(sandbox, BubblewrapSandbox)
        return sandbox

    def release(self, sandbox_id: str) -> None:
        """Stop the sandbox's instance (its files stay; the next command starts a fresh one)."""
        sandbox = self.get(sandbox_id)
        if sandbox is not None:
            self.instances.stop(sandbox.key)

    def shutdown(self) -> None:
        """Stop every instance (killing all their processes) and forget the sandboxes."""
        self.instances.close()
        super().shutdown()

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


def _shutdown_if_alive(ref: weakref.ref[BubblewrapSandboxProvider]) -> None:
    """At interpreter exit, stop the instances of a provider nobody shut down."""
    provider = ref()
    if provider is not None:
        provider.shutdown()
