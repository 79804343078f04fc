"""Sandboxes: where the agent's commands and file operations run.

The interface lives in :mod:`~deerflow_nb.sandbox.base`; the ``local`` provider in
:mod:`~deerflow_nb.sandbox.local`. The ``bubblewrap`` and ``docker`` providers are
imported only when configured (see :func:`create_sandbox_provider`).
"""

from deerflow_nb.sandbox.base import (
    DEFAULT_GLOB_LIMIT,
    DEFAULT_GREP_LIMIT,
    CommandResult,
    GrepMatch,
    Sandbox,
    SandboxProvider,
)
from deerflow_nb.sandbox.env_policy import build_sandbox_env, is_secret_name, mask_values
from deerflow_nb.sandbox.factory import create_sandbox_provider
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider
from deerflow_nb.sandbox.paths import VIRTUAL_SKILLS, VIRTUAL_WORKSPACE, Mount, PathMapping
from deerflow_nb.sandbox.process import run_command

__all__ = [
    "DEFAULT_GLOB_LIMIT",
    "DEFAULT_GREP_LIMIT",
    "VIRTUAL_SKILLS",
    "VIRTUAL_WORKSPACE",
    "CommandResult",
    "GrepMatch",
    "LocalSandbox",
    "LocalSandboxProvider",
    "Mount",
    "PathMapping",
    "Sandbox",
    "SandboxProvider",
    "build_sandbox_env",
    "create_sandbox_provider",
    "is_secret_name",
    "mask_values",
    "run_command",
]
