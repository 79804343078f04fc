"""The ``local`` provider: host subprocesses and host files behind virtual paths.

It is *not* a security boundary (commands run as the notebook user, with network);
it isolates threads from each other's files and keeps host secrets out of commands.

Layout, per ``(user_id, thread_id)``::

    /mnt/user-data/{workspace,uploads,outputs} -> {home}/users/{user}/threads/{thread}/user-data/...
    /mnt/skills                 (read-only)    -> {home}/users/{user}/sandbox-mounts/skills/
    /mnt/skills/public          (read-only)    -> the public skills root (``skills_root``)
    /mnt/skills/custom          (read-only)    -> {home}/users/{user}/skills/custom

``/mnt/skills`` is a folder of two symlinks so ``ls /mnt/skills`` works in bash too.
Without a thread (``acquire(None)``) user-data maps to ``{home}/users/{user}/shared-user-data``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from deerflow_nb.config.paths import USER_DATA_DIRS, Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.sandbox.base import (
    DEFAULT_GLOB_LIMIT,
    DEFAULT_GREP_LIMIT,
    CommandResult,
    GrepMatch,
    Sandbox,
    SandboxProvider,
)
from deerflow_nb.sandbox.env_policy import HEADLESS_ENV, build_sandbox_env, mask_values
from deerflow_nb.sandbox.paths import VIRTUAL_SKILLS, VIRTUAL_WORKSPACE, Mount, PathMapping, thread_mounts
from deerflow_nb.sandbox.process import run_command
from deerflow_nb.sandbox.search import GREP_SKIP_DIRS, glob_regex, grep_file, walk_tree
from deerflow_nb.utils.files import atomic_write_bytes

__all__ = ["LocalSandbox", "LocalSandboxProvider"]

_WILDCARD = re.compile(r"[*?\[]")


class LocalSandbox(Sandbox):
    """One thread's sandbox on the host.

    ``id`` is the public id (``local:{thread_id}`` or ``local``); ``key`` is unique
    per user as well (``{user_id}/{id}``) and is what locks and caches should use.
    Subclasses that run commands differently override :meth:`command_argv`,
    :meth:`command_cwd` and :meth:`postprocess_output`; file operations are shared.
    """

    def __init__(
        self,
        sandbox_id: str,
        mapping: PathMapping,
        *,
        config: SandboxConfig | None = None,
        user_id: str = "default",
        thread_id: str | None = None,
        key: str | None = None,
    ) -> None:
        self.id = sandbox_id
        self.key = key or f"{user_id}/{sandbox_id}"
        self.mapping = mapping
        self.config = config or SandboxConfig()
        self.user_id = user_id
        self.thread_id = thread_id
        self.workspace = mapping.to_host(VIRTUAL_WORKSPACE)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={self.key!r})"

    # -- commands -------------------------------------------------------------------

    def command_argv(self, command: str) -> list[str]:
        """The argv that runs ``command`` (virtual paths rewritten to host paths)."""
        return ["bash", "-c", self.mapping.translate_command(command)]

    def command_cwd(self) -> Path:
        """The working directory of commands: the thread workspace."""
        return self.workspace

    def postprocess_output(self, text: str) -> str:
        """Map host paths in output back to virtual paths."""
        return self.mapping.untranslate_output(text)

    def command_env(self, injected: Mapping[str, str]) -> dict[str, str]:
        """The scrubbed environment of a command, with this interpreter's ``bin`` first on PATH.

        On the host, ``python`` in the agent's commands is then the notebook's own interpreter,
        with the packages the user installed (pandas, matplotlib, ...), not whatever comes first
        on the system PATH. matplotlib runs headless (``MPLBACKEND=Agg``, also replacing a
        notebook kernel's inline backend), with its cache in a per-user temporary folder when
        ``HOME`` is not writable; injected values of those names win.
        """
        env = build_sandbox_env(extra=injected)
        bin_dir = os.path.dirname(sys.executable)
        parts = [p for p in env.get("PATH", "").split(os.pathsep) if p]
        if bin_dir and bin_dir not in parts:
            env["PATH"] = os.pathsep.join([bin_dir, *parts])
        env.update({name: value for name, value in HEADLESS_ENV.items() if name not in injected})
        home = env.get("HOME", "")
        if "MPLCONFIGDIR" not in env and not (home and os.access(home, os.W_OK)):
            env["MPLCONFIGDIR"] = os.path.join(tempfile.gettempdir(), f"deerflow-nb-matplotlib-{os.getuid()}")
        return env

    def execute_command(
        self, command: str, env: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command`` with ``bash -c`` in the workspace (see :class:`Sandbox`)."""
        if not isinstance(command, str) or not command.strip():
            raise ValueError("command must be a non-empty string")
        injected = dict(env or {})
        self.workspace.mkdir(parents=True, exist_ok=True)
        result = run_command(
            self.command_argv(command),
            cwd=self.command_cwd(),
            env=self.command_env(injected),
            timeout=timeout if timeout is not None else self.config.bash_command_timeout,
            max_output_bytes=self.config.max_output_bytes,
            mask=injected.values(),
        )
        # Mask again after path rewriting, which must never reassemble a masked value.
        output = mask_values(self.postprocess_output(result.output), injected.values())
        return dataclasses.replace(result, output=output)

    # -- files ----------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        """Read a file's raw bytes."""
        host = self.mapping.to_host(path)
        virtual = self.mapping.normalize(path)
        if host.is_dir():
            raise IsADirectoryError(f"{virtual} is a directory, not a file")
        try:
            return host.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"file not found: {virtual}") from None

    def read_file(self, path: str) -> str:
        """Read a UTF-8 text file (undecodable bytes are replaced)."""
        return self.read_bytes(path).decode("utf-8", "replace")

    def write_file(self, path: str, content: str | bytes, *, append: bool = False) -> None:
        """Write or append; parents are created and overwrites are atomic (temp + rename)."""
        host = self.mapping.to_host(path, write=True)
        if host.is_dir():
            raise IsADirectoryError(f"{self.mapping.normalize(path)} is a directory, not a file")
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        if append:
            host.parent.mkdir(parents=True, exist_ok=True)
            with open(host, "ab") as fh:
                fh.write(data)
        else:
            atomic_write_bytes(host, data)

    def exists(self, path: str) -> bool:
        """Whether ``path`` is an existing file (same meaning as the base class)."""
        return self.mapping.to_host(path).is_file()

    def _dir(self, path: str) -> tuple[Path, str]:
        host = self.mapping.to_host(path)
        virtual = self.mapping.normalize(path)
        if not host.exists():
            raise FileNotFoundError(f"directory not found: {virtual}")
        if not host.is_dir():
            raise NotADirectoryError(f"{virtual} is a file, not a directory")
        return host, virtual

    def list_dir(self, path: str, *, max_depth: int = 2) -> list[str]:
        """Entries below ``path`` up to ``max_depth`` levels, folders ending with ``/``."""
        if max_depth < 1:
            raise ValueError(f"max_depth must be at least 1, got {max_depth}")
        host, virtual = self._dir(path)
        entries = walk_tree(host, virtual, is_allowed=self.mapping.is_inside, max_depth=max_depth)
        return [e.virtual + "/" if e.is_dir else e.virtual for e in entries]

    def glob(
        self, pattern: str, path: str = "/mnt/user-data", *, limit: int = DEFAULT_GLOB_LIMIT
    ) -> list[str]:
        """Paths below ``path`` matching ``pattern`` (relative to ``path``; ``**`` recurses).

        An absolute pattern (``/mnt/user-data/**/*.csv``) sets its own base folder.
        Folders are returned without a trailing slash.
        """
        if not pattern or not pattern.strip():
            raise ValueError("pattern must be a non-empty glob such as '**/*.py'")
        if pattern.startswith("/"):
            path, pattern = _split_absolute_pattern(pattern)
        host, virtual = self._dir(path)
        regex = glob_regex(pattern)
        # Without '**' a pattern with k segments cannot match deeper than k levels.
        depth = None if "**" in pattern else pattern.count("/") + 1
        results: list[str] = []
        for entry in walk_tree(host, virtual, is_allowed=self.mapping.is_inside, max_depth=depth):
            if regex.match(entry.rel):
                results.append(entry.virtual)
                if len(results) >= limit:
                    break
        return results

    def grep(
        self,
        pattern: str,
        path: str = "/mnt/user-data",
        *,
        glob: str | None = None,
        ignore_case: bool = False,
        limit: int = DEFAULT_GREP_LIMIT,
    ) -> list[GrepMatch]:
        """Regex search in one file or a tree; binary, huge and VCS/cache files are skipped.

        ``glob`` filters files by relative path, or by name when it has no ``/``.
        """
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        host = self.mapping.to_host(path)
        virtual = self.mapping.normalize(path)
        if host.is_file():
            return grep_file(host, virtual, regex, limit)
        host, virtual = self._dir(path)
        name_filter = glob_regex(glob) if glob else None
        matches: list[GrepMatch] = []
        for entry in walk_tree(host, virtual, is_allowed=self.mapping.is_inside, skip_dirs=GREP_SKIP_DIRS):
            if entry.is_dir:
                continue
            if name_filter is not None:
                subject = entry.rel if "/" in (glob or "") else entry.rel.rsplit("/", 1)[-1]
                if not name_filter.match(subject):
                    continue
            matches += grep_file(entry.host, entry.virtual, regex, limit - len(matches))
            if len(matches) >= limit:
                break
        return matches


def _split_absolute_pattern(pattern: str) -> tuple[str, str]:
    """``/mnt/user-data/**/*.py`` -> (``/mnt/user-data``, ``**/*.py``)."""
    parts = pattern.split("/")
    for index, part in enumerate(parts):
        if _WILDCARD.search(part):
            return "/".join(parts[:index]) or "/", "/".join(parts[index:])
    return "/".join(parts[:-1]) or "/", parts[-1]


class LocalSandboxProvider(SandboxProvider):
    """Per-(user, thread) :class:`LocalSandbox` es in an LRU cache.

    :meth:`get` accepts the internal key (``{user_id}/local:{thread_id}``, always
    unambiguous) or the public id (``local:{thread_id}``), which resolves only while
    exactly one cached sandbox has it (otherwise ``None``: two users share that thread id).
    """

    #: The sandbox class built by :meth:`_make_sandbox`; subclasses may swap it.
    sandbox_class: type[LocalSandbox] = LocalSandbox
    id_prefix = "local"

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        paths: Paths,
        skills_root: Path | None = None,
        max_cached: int = 256,
    ) -> None:
        if max_cached < 1:
            raise ValueError(f"max_cached must be at least 1, got {max_cached}")
        self.config = config or SandboxConfig()
        self.paths = paths
        self.skills_root = Path(skills_root) if skills_root is not None else None
        self.max_cached = max_cached
        self._cache: OrderedDict[str, LocalSandbox] = OrderedDict()
        self._lock = threading.Lock()

    def user_data_dir(self, user_id: str, thread_id: str | None) -> Path:
        """Host folder behind ``/mnt/user-data`` (created with its three subfolders)."""
        if thread_id is None:
            base = self.paths.user_dir(user_id) / "shared-user-data"
            for name in USER_DATA_DIRS:
                (base / name).mkdir(parents=True, exist_ok=True)
            return base
        return self.paths.ensure_thread_dirs(user_id, thread_id)

    def skill_mounts(self, user_id: str) -> list[Mount]:
        """Read-only ``/mnt/skills/public`` and ``/mnt/skills/custom`` mounts (creates custom)."""
        custom = self.paths.custom_skills_dir(user_id)
        custom.mkdir(parents=True, exist_ok=True)
        mounts = [Mount(f"{VIRTUAL_SKILLS}/custom", custom, read_only=True)]
        if self.skills_root is not None:
            mounts.append(Mount(f"{VIRTUAL_SKILLS}/public", self.skills_root, read_only=True))
        return mounts

    def mounts_for(self, user_id: str, thread_id: str | None) -> list[Mount]:
        """Every mount of a sandbox; providers binding folders natively use this list."""
        return thread_mounts(self.user_data_dir(user_id, thread_id), extra=self.skill_mounts(user_id))

    def _skills_view(self, user_id: str, skill_mounts: list[Mount]) -> Mount:
        """A folder of symlinks standing for ``/mnt/skills`` on the host."""
        view = self.paths.user_dir(user_id) / "sandbox-mounts" / "skills"
        view.mkdir(parents=True, exist_ok=True)
        for mount in skill_mounts:
            _ensure_symlink(view / mount.virtual.rsplit("/", 1)[-1], mount.host)
        return Mount(VIRTUAL_SKILLS, view, read_only=True)

    def _make_sandbox(self, user_id: str, thread_id: str | None) -> LocalSandbox:
        mounts = self.mounts_for(user_id, thread_id)
        skills = [m for m in mounts if m.virtual.startswith(VIRTUAL_SKILLS + "/")]
        mapping = PathMapping([*mounts, self._skills_view(user_id, skills)])
        return self.sandbox_class(
            self._public_id(thread_id), mapping, config=self.config, user_id=user_id, thread_id=thread_id
        )

    def _public_id(self, thread_id: str | None) -> str:
        return self.id_prefix if thread_id is None else f"{self.id_prefix}:{thread_id}"

    def _key(self, user_id: str, thread_id: str | None) -> str:
        return f"{user_id}/{self._public_id(thread_id)}"

    def acquire(self, thread_id: str | None = None, *, user_id: str = "default") -> LocalSandbox:
        """The sandbox of ``(user_id, thread_id)``, creating its folders on first use."""
        key = self._key(user_id, thread_id)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        sandbox = self._make_sandbox(user_id, thread_id)  # folder I/O outside the lock
        with self._lock:
            existing = self._cache.get(key)
            if existing is not None:  # another thread won the race; keep one instance
                self._cache.move_to_end(key)
                return existing
            self._cache[key] = sandbox
            while len(self._cache) > self.max_cached:
                self._cache.popitem(last=False)
        return sandbox

    def get(self, sandbox_id: str) -> LocalSandbox | None:
        """A cached sandbox by key or unambiguous public id; never does I/O."""
        with self._lock:
            if "/" in sandbox_id:
                return self._cache.get(sandbox_id)
            found = [s for s in self._cache.values() if s.id == sandbox_id]
        return found[0] if len(found) == 1 else None

    def release(self, sandbox_id: str) -> None:
        """Nothing to free for host processes: the sandbox stays cached for reuse."""

    def shutdown(self) -> None:
        """Forget every cached sandbox (files stay on disk)."""
        with self._lock:
            self._cache.clear()


def _ensure_symlink(link: Path, target: Path) -> None:
    """Point ``link`` at ``target``, replacing a stale link atomically."""
    target_text = str(target)
    with contextlib.suppress(OSError):
        if os.readlink(link) == target_text:
            return
    tmp = link.with_name(f".{link.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    os.symlink(target_text, tmp)
    os.replace(tmp, link)
