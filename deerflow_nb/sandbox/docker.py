"""The ``docker`` provider: one container per (user, thread), from a local image.

Each container runs the locally built image (``sandbox.image``; built by
``scripts/build_sandbox_image.sh`` — nothing is ever pulled) with:

* ``/mnt/user-data`` (read-only) and its ``workspace``/``uploads``/``outputs`` (read-write)
  bound from the thread's host folders, ``/mnt/skills/{public,custom}`` read-only;
* ``network_mode="none"`` unless ``sandbox.network: host``; a read-only root file
  system with a private ``/tmp``; every capability dropped and ``no-new-privileges``;
* ``sandbox.memory_mb`` (no swap), ``sandbox.cpus`` and ``sandbox.pids_limit``.

Commands go through a runner started once per container (see :mod:`.docker_runner`),
so a warm command costs a socket round trip instead of a ``docker exec``. Released
containers stay warm for the same thread (:class:`~.warm_pool.WarmPool`: idle
``sandbox.idle_timeout`` s, checked every ``sandbox.idle_check_interval`` s, at most
``sandbox.replicas`` containers active + warm) and are removed on :meth:`shutdown`.
File operations use the host folders directly, like ``local``.

Containers are named and labelled by their provider's owner id (see :mod:`deerflow_nb.utils.owner`), so
processes sharing one ``DEER_FLOW_HOME`` each have their own; at start a provider removes
the containers of this home whose owner process is dead (crashed or killed), never a live peer's.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import importlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import CommandResult
from deerflow_nb.sandbox.docker_runner import RunnerConnection, is_saturated, reply_to_result
from deerflow_nb.sandbox.env_policy import mask_values
from deerflow_nb.sandbox.isolation import LimitEvents, add_limit_notes, isolated_env
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider
from deerflow_nb.sandbox.paths import VIRTUAL_SKILLS, VIRTUAL_WORKSPACE
from deerflow_nb.sandbox.warm_pool import WarmPool
from deerflow_nb.utils.owner import owner_alive, process_owner_id

__all__ = ["DockerSandbox", "DockerSandboxProvider", "connect_docker"]

_log = logging.getLogger(__name__)
_LABEL = "org.deerflow-nb.sandbox"
_DEADLINE_SLACK_S = 30.0  # past the command's own timeout (TERM grace, slow daemon)
RESTART_NOTE = (
    "[the sandbox had no free process slot (a runaway background process tree?); its container "
    "was restarted, which stopped background processes and cleared /tmp]"
)
BUILD_HINT = "build it with scripts/build_sandbox_image.sh (images are never pulled)"


def connect_docker(base_url: str | None = None, *, timeout: float = 30.0) -> Any:
    """A ``docker.DockerClient`` that answered a ping, or a clear :class:`SandboxError`."""
    try:
        docker: Any = importlib.import_module("docker")  # the SDK, not this module
    except ImportError as exc:
        raise SandboxError("sandbox.use 'docker' needs the docker package: pip install 'deerflow-nb[docker]'") from exc
    where = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.DockerClient(base_url=where, timeout=timeout) if base_url else docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:
        raise SandboxError(
            f"no Docker engine answers at {where} ({type(exc).__name__}: {exc}); start dockerd "
            "(see .ci/sandbox-setup.sh) or choose sandbox.use 'bubblewrap' or 'local'"
        ) from exc
    return client


class DockerSandbox(LocalSandbox):
    """A thread's container; commands run inside it, files are read on the host."""

    container: Any = None
    runner: RunnerConnection | None = None
    provider: DockerSandboxProvider

    def postprocess_output(self, text: str) -> str:
        """Paths inside the container already are the virtual ones."""
        return text

    def execute_command(
        self, command: str, env: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command`` with ``bash -c`` in the container (see :class:`Sandbox`)."""
        if not isinstance(command, str) or not command.strip():
            raise ValueError("command must be a non-empty string")
        cfg = self.config
        limit = float(timeout if timeout is not None else cfg.bash_command_timeout)
        if limit <= 0:
            raise ValueError(f"timeout must be positive, got {limit!r}")
        injected = dict(env or {})
        request = {
            "cmd": command,
            "env": isolated_env(injected),
            "cwd": VIRTUAL_WORKSPACE,
            "timeout": limit,
            "max_output": cfg.max_output_bytes,
            "drain_grace": 0.5,
        }
        restarted = False
        try:
            reply = self.provider.ensure_runner(self).request(request, deadline_s=limit + _DEADLINE_SLACK_S)
        except SandboxError as exc:
            if not is_saturated(exc):
                raise
            # A runaway process tree (fork bomb) left behind in the background holds every
            # process slot: restart the container (host files are kept) and retry once.
            self.provider.restart(self)
            restarted = True
            reply = self.provider.ensure_runner(self).request(request, deadline_s=limit + _DEADLINE_SLACK_S)
        result = reply_to_result(reply, limit, cfg.max_output_bytes)
        if restarted:
            result = dataclasses.replace(result, notes=(*result.notes, RESTART_NOTE))
            result = dataclasses.replace(result, output=f"{RESTART_NOTE}\n{result.output}")
        result = dataclasses.replace(result, output=mask_values(result.output, injected.values()))
        events = LimitEvents(int(reply.get("oom_kills", 0)), int(reply.get("pids_max_hits", 0)))
        return add_limit_notes(result, memory_mb=cfg.memory_mb, pids_limit=cfg.pids_limit, events=events)


def _shutdown_if_alive(ref: weakref.ref[DockerSandboxProvider]) -> None:
    """At interpreter exit, remove the containers of a provider nobody shut down."""
    provider = ref()
    if provider is not None:
        provider.shutdown()


class DockerSandboxProvider(LocalSandboxProvider):
    """Containers per (user, thread) with a warm pool (ids ``docker:{thread_id}``).

    Extra ``sandbox`` keys: ``docker_host`` (default ``DOCKER_HOST`` or the local socket),
    ``docker_timeout`` (seconds per API call, default 30) and ``tmp_size_mb`` (default 256).

    Raises:
        SandboxError: at construction, when no Docker engine answers or the image is
            missing locally (the message says how to build it).
    """

    sandbox_class = DockerSandbox
    id_prefix = "docker"

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
        #: Who owns this provider's containers (default: this process, see :mod:`deerflow_nb.utils.owner`).
        self.owner = owner or process_owner_id()
        extra = self.config.model_extra or {}
        self.client = connect_docker(extra.get("docker_host"), timeout=float(extra.get("docker_timeout", 30)))
        self.tmp_size_mb = int(extra.get("tmp_size_mb", 256))
        #: Seconds between two sweeps for dead owners' containers (at start-up, then when a container is created).
        self.reap_interval = float(extra.get("reap_interval_seconds", 300))
        if self.reap_interval < 0:
            raise SandboxError(f"sandbox.reap_interval_seconds must be >= 0, got {self.reap_interval:g}")
        try:
            self.client.images.get(self.config.image)
        except Exception as exc:
            raise SandboxError(f"sandbox image {self.config.image!r} is not available locally; {BUILD_HINT}") from exc
        self._active: dict[str, DockerSandbox] = {}
        self._key_locks: dict[str, threading.Lock] = {}
        self._warm: WarmPool[DockerSandbox] = WarmPool(
            self._destroy,
            idle_timeout=self.config.idle_timeout,
            check_interval=self.config.idle_check_interval,
        )
        self._closed = False
        self._home_tag = hashlib.sha256(str(paths.home.resolve()).encode()).hexdigest()[:12]
        self._last_reap = 0.0
        self._reap_dead_owners()
        atexit.register(_shutdown_if_alive, weakref.ref(self))

    # -- lifecycle --------------------------------------------------------------------

    def acquire(self, thread_id: str | None = None, *, user_id: str = "default") -> DockerSandbox:
        """The running container sandbox of ``(user_id, thread_id)``; warm ones are reused."""
        if self._closed:
            raise SandboxError("this docker sandbox provider was shut down")
        key = self._key(user_id, thread_id)
        with self._lock:
            found = self._active.get(key)
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        if found is not None:
            return found
        with key_lock:  # one creation per key, without blocking other threads' keys
            with self._lock:
                found = self._active.get(key)
            if found is not None:
                return found
            sandbox = self._warm.take(key)
            if sandbox is not None and not self._healthy(sandbox):
                self._destroy(sandbox)
                sandbox = None
            if sandbox is None:
                if time.monotonic() - self._last_reap >= self.reap_interval:  # a peer may have died since
                    self._reap_dead_owners()
                self._make_room()
                sandbox = self._create(user_id, thread_id)
            with self._lock:
                self._active[key] = sandbox
            return sandbox

    def get(self, sandbox_id: str) -> DockerSandbox | None:
        """An acquired sandbox by key or unambiguous public id; never does I/O."""
        with self._lock:
            if "/" in sandbox_id:
                return self._active.get(sandbox_id)
            found = [s for s in self._active.values() if s.id == sandbox_id]
        return found[0] if len(found) == 1 else None

    def release(self, sandbox_id: str) -> None:
        """Move the sandbox to the warm pool (or remove it when ``replicas`` is 0)."""
        sandbox = self.get(sandbox_id)
        if sandbox is None:
            return
        with self._lock:
            self._active.pop(sandbox.key, None)
        if self.config.replicas <= 0 or self._closed:
            self._destroy(sandbox)
        else:
            self._warm.put(sandbox.key, sandbox)

    def shutdown(self) -> None:
        """Stop the idle reaper and remove every container this provider started."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            active = list(self._active.values())
            self._active.clear()
        for sandbox in [*active, *self._warm.drain()]:
            self._destroy(sandbox)
        super().shutdown()

    @property
    def warm_count(self) -> int:
        """How many released containers are kept warm."""
        return len(self._warm)

    # -- containers -------------------------------------------------------------------

    def container_name(self, user_id: str, thread_id: str | None) -> str:
        """A stable, Docker-safe name for this owner's container of ``(home, user, thread)``."""
        key = f"{self._home_tag}\0{self.owner}\0{user_id}\0{thread_id or ''}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return f"deerflow-nb-{digest}"

    def ensure_runner(self, sandbox: DockerSandbox) -> RunnerConnection:
        """The sandbox's live runner, restarted once if it died (container restarted if stopped)."""
        runner = sandbox.runner
        if runner is not None and runner.alive:
            return runner
        if runner is not None:
            _log.warning("docker sandbox %s: runner lost (%s); restarting it", sandbox.key, runner.stderr_tail())
        try:
            sandbox.container.reload()
            if sandbox.container.status != "running":
                sandbox.container.start()
        except Exception as exc:
            raise SandboxError(f"the container of {sandbox.id} is gone and cannot be restarted: {exc}") from exc
        sandbox.runner = RunnerConnection(self.client.api, sandbox.container.id)
        return sandbox.runner

    def restart(self, sandbox: DockerSandbox) -> None:
        """Restart the sandbox's container (kills every process in it) and its runner."""
        if sandbox.runner is not None:
            sandbox.runner.close()
            sandbox.runner = None
        try:
            sandbox.container.restart(timeout=1)
        except Exception as exc:
            raise SandboxError(f"cannot restart the container of {sandbox.id}: {exc}") from exc
        _log.warning("docker sandbox %s: container restarted (no free process slot)", sandbox.key)

    def _create(self, user_id: str, thread_id: str | None) -> DockerSandbox:
        sandbox = self._make_sandbox(user_id, thread_id)
        assert isinstance(sandbox, DockerSandbox)
        sandbox.provider = self
        name = self.container_name(user_id, thread_id)
        self._remove_by_name(name)  # this owner's leftover (a failed start): its files live on the host
        try:
            sandbox.container = self.client.containers.create(**self._container_spec(sandbox, name))
            sandbox.container.start()
        except Exception as exc:
            self._remove_by_name(name)
            if type(exc).__name__ == "ImageNotFound":
                raise SandboxError(f"sandbox image {self.config.image!r} is missing; {BUILD_HINT}") from exc
            raise SandboxError(f"cannot start the sandbox container for {sandbox.id}: {exc}") from exc
        try:
            sandbox.runner = RunnerConnection(self.client.api, sandbox.container.id)
        except SandboxError:
            self._destroy(sandbox)
            raise
        return sandbox

    def _container_spec(self, sandbox: DockerSandbox, name: str) -> dict[str, Any]:
        from docker.types import Mount as DockerMount

        cfg = self.config
        mounts = [
            DockerMount(m.virtual, str(m.host), type="bind", read_only=m.read_only)
            for m in sorted(sandbox.mapping.mounts, key=lambda m: len(m.virtual))
            if m.virtual != VIRTUAL_SKILLS and m.host.is_dir()
        ]
        memory = f"{cfg.memory_mb}m"
        return {
            "image": cfg.image,
            "command": ["sleep", "infinity"],
            "name": name,
            "init": True,  # docker-init reaps orphaned background processes
            "user": f"{os.getuid()}:{os.getgid()}",  # files in user-data keep the notebook's owner
            "working_dir": VIRTUAL_WORKSPACE,
            "environment": {"HOME": "/tmp", "LANG": "C.UTF-8"},
            "hostname": "sandbox",
            "network_mode": "host" if cfg.network == "host" else "none",
            "mounts": mounts,
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={self.tmp_size_mb}m,mode=1777"},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "mem_limit": memory,
            "memswap_limit": memory,
            "nano_cpus": int(cfg.cpus * 1e9),
            "pids_limit": cfg.pids_limit,
            "labels": {_LABEL: "1", f"{_LABEL}.home": self._home_tag, f"{_LABEL}.key": sandbox.key,
                       f"{_LABEL}.owner": self.owner},
            "detach": True,
        }

    def _healthy(self, sandbox: DockerSandbox) -> bool:
        runner = sandbox.runner
        if runner is None or not runner.alive:
            return False
        try:
            return bool(runner.request({"op": "ping"}, deadline_s=5.0).get("pong"))
        except SandboxError:
            return False

    def _make_room(self) -> None:
        with self._lock:
            active = len(self._active)
        while active + len(self._warm) >= max(self.config.replicas, 1) and self._warm.evict_oldest():
            pass
        if active >= self.config.replicas > 0:
            _log.info(
                "docker sandbox: %d active containers exceed sandbox.replicas=%d", active + 1, self.config.replicas
            )

    def _destroy(self, sandbox: DockerSandbox) -> None:
        if sandbox.runner is not None:
            sandbox.runner.close()
        if sandbox.container is not None:
            try:
                sandbox.container.remove(force=True, v=True)
            except Exception as exc:
                if type(exc).__name__ != "NotFound":
                    _log.warning("docker sandbox %s: cannot remove container: %s", sandbox.key, exc)

    def _remove_by_name(self, name: str) -> None:
        try:
            self.client.containers.get(name).remove(force=True, v=True)
        except Exception as exc:
            if type(exc).__name__ != "NotFound":
                _log.warning("docker sandbox: cannot remove stale container %s: %s", name, exc)

    def _reap_dead_owners(self) -> None:
        """Remove this home's containers whose owner process is dead (a live or unknown owner's stay).

        A container without an owner label (an older version's) goes only once it exited. Runs when
        the provider starts and again, at most every ``reap_interval_seconds``, before it creates a
        container: a long-lived server cleans up after a peer that died after it started.
        """
        self._last_reap = time.monotonic()
        try:
            found = self.client.containers.list(all=True, filters={"label": f"{_LABEL}.home={self._home_tag}"})
        except Exception as exc:
            _log.debug("docker sandbox: cannot list stale containers: %s", exc)
            return
        for container in found:
            labels = container.labels or {}
            owner = labels.get(f"{_LABEL}.owner")
            if owner == self.owner:
                continue
            if owner is None and container.status != "exited":
                continue
            if owner is not None and owner_alive(owner) is not False:
                continue
            _log.info("docker sandbox: removing %s (its owner %s is gone)", container.name, owner or "unknown")
            try:
                container.remove(force=True, v=True)
            except Exception as exc:
                _log.debug("docker sandbox: cannot remove %s: %s", container.name, exc)
