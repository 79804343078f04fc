"""The data layout under the DeerFlow home directory.

``DEER_FLOW_HOME`` (env) > ``home:`` in config.yaml > ``~/.deer-flow``::

    {home}/deerflow.db
    {home}/users/{user_id}/threads/{thread_id}/user-data/{workspace,uploads,outputs}
    {home}/users/{user_id}/memory.json
    {home}/users/{user_id}/skills/custom/{name}/SKILL.md
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from deerflow_nb.errors import UsageError

__all__ = [
    "HOME_ENV",
    "USER_DATA_DIRS",
    "VIRTUAL_USER_DATA",
    "Paths",
    "packaged_skills_root",
    "resolve_home",
    "validate_id",
]

HOME_ENV = "DEER_FLOW_HOME"
VIRTUAL_USER_DATA = "/mnt/user-data"
USER_DATA_DIRS = ("workspace", "uploads", "outputs")

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


def validate_id(value: str, kind: str = "id") -> str:
    """Return ``value`` if it is a safe path component (user or thread id), else raise."""
    if not isinstance(value, str) or not _ID_RE.match(value) or value in {".", ".."} or ".." in value:
        raise UsageError(
            f"invalid {kind} {value!r}: use 1-128 letters, digits, '.', '_', '@', '+' or '-', "
            "starting with a letter or digit"
        )
    return value


def resolve_home(config_home: str | None = None, explicit: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the data directory: explicit > ``DEER_FLOW_HOME`` > config ``home`` > ``~/.deer-flow``."""
    if explicit is not None:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser().resolve()
    if config_home:
        return Path(config_home).expanduser().resolve()
    return (Path.home() / ".deer-flow").resolve()


def packaged_skills_root() -> Path:
    """The public skills shipped with the package (source checkout or installed wheel)."""
    here = Path(__file__).resolve().parent.parent
    installed = here / "_skills_public"
    if installed.is_dir():
        return installed
    return here.parent / "skills" / "public"


@dataclass(frozen=True)
class Paths:
    """Host paths derived from one home directory."""

    home: Path

    @property
    def db_path(self) -> Path:
        """The default SQLite database."""
        return self.home / "deerflow.db"

    def user_dir(self, user_id: str) -> Path:
        """``{home}/users/{user_id}``."""
        return self.home / "users" / validate_id(user_id, "user_id")

    def thread_dir(self, user_id: str, thread_id: str) -> Path:
        """``{home}/users/{user_id}/threads/{thread_id}``."""
        return self.user_dir(user_id) / "threads" / validate_id(thread_id, "thread_id")

    def user_data_dir(self, user_id: str, thread_id: str) -> Path:
        """The host folder mounted at ``/mnt/user-data``."""
        return self.thread_dir(user_id, thread_id) / "user-data"

    def ensure_thread_dirs(self, user_id: str, thread_id: str) -> Path:
        """Create ``workspace``, ``uploads`` and ``outputs`` for a thread; return user-data."""
        base = self.user_data_dir(user_id, thread_id)
        for name in USER_DATA_DIRS:
            (base / name).mkdir(parents=True, exist_ok=True)
        return base

    def memory_file(self, user_id: str) -> Path:
        """Per-user memory summaries."""
        return self.user_dir(user_id) / "memory.json"

    def custom_skills_dir(self, user_id: str) -> Path:
        """Per-user custom skills root."""
        return self.user_dir(user_id) / "skills" / "custom"
