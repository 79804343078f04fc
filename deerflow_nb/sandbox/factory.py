"""Build the configured :class:`SandboxProvider` from ``sandbox.use``."""

from __future__ import annotations

from pathlib import Path

from deerflow_nb.config.paths import Paths, packaged_skills_root
from deerflow_nb.config.schema import AppConfig
from deerflow_nb.reflection import resolve_class
from deerflow_nb.sandbox.base import SandboxProvider

__all__ = ["BUILTIN_PROVIDERS", "create_sandbox_provider"]

#: Short names accepted by ``sandbox.use``. Only ``local`` is imported eagerly: the
#: others pull optional dependencies and are resolved on demand.
BUILTIN_PROVIDERS: dict[str, str] = {
    "local": "deerflow_nb.sandbox.local:LocalSandboxProvider",
    "bubblewrap": "deerflow_nb.sandbox.bubblewrap:BubblewrapSandboxProvider",
    "docker": "deerflow_nb.sandbox.docker:DockerSandboxProvider",
}


def create_sandbox_provider(
    config: AppConfig, paths: Paths, skills_root: Path | None = None
) -> SandboxProvider:
    """Instantiate the provider named by ``config.sandbox.use``.

    ``use`` is ``local``, ``bubblewrap``, ``docker`` or a ``module:Class`` path to a
    :class:`SandboxProvider` subclass; every provider is constructed as
    ``Provider(config.sandbox, paths=paths, skills_root=skills_root)``.
    ``skills_root`` (the public skills mounted at ``/mnt/skills/public``) defaults to
    ``skills.path`` from the config, else the skills shipped with the package.

    Raises:
        ConfigError: ``sandbox.use`` cannot be imported or is not a SandboxProvider.
    """
    use = config.sandbox.use.strip()
    target = BUILTIN_PROVIDERS.get(use.lower(), use)
    provider_class = resolve_class(target, SandboxProvider)
    if skills_root is None:
        skills_root = Path(config.skills.path).expanduser() if config.skills.path else packaged_skills_root()
    return provider_class(config.sandbox, paths=paths, skills_root=skills_root)  # type: ignore[call-arg]
