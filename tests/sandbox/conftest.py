"""Provider fixtures for the conformance and containment suites.

``provider_name`` runs a test against ``local``, ``bubblewrap`` and ``docker``. An
isolating provider that cannot run here is skipped with its reason, and the reasons
are repeated loudly at the end of the run (a silent skip would hide a missing CI step).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import Sandbox, SandboxProvider
from deerflow_nb.sandbox.local import LocalSandboxProvider

PROVIDERS = [
    "local",
    pytest.param("bubblewrap", marks=pytest.mark.bwrap),
    pytest.param("docker", marks=pytest.mark.docker),
]
ISOLATING = [p for p in PROVIDERS if not isinstance(p, str)]

# Small limits keep the containment checks cheap; commands are short.
TEST_LIMITS: dict[str, Any] = {
    "bash_command_timeout": 30,
    "max_output_bytes": 64_000,
    "memory_mb": 256,
    "pids_limit": 96,
    "idle_timeout": 600,
    "replicas": 3,
}

_SKIPPED: dict[str, str] = {}


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot run here, or ``None``."""
    from deerflow_nb.sandbox.bubblewrap import bwrap_available

    return bwrap_available()


@functools.cache
def docker_problem() -> str | None:
    """Why the docker provider cannot run here (no SDK, no daemon, no image), or ``None``."""
    try:
        from deerflow_nb.sandbox.docker import BUILD_HINT, connect_docker
    except ImportError as exc:  # pragma: no cover - docker is a test dependency
        return f"docker SDK not importable: {exc}"
    try:
        client = connect_docker(timeout=5)
    except SandboxError as exc:
        return str(exc)
    image = SandboxConfig().image
    try:
        client.images.get(image)
    except Exception:
        return f"sandbox image {image!r} not built; {BUILD_HINT}"
    finally:
        client.close()
    return None


def require(name: str) -> None:
    """Skip the current test, loudly, when provider ``name`` cannot run here."""
    problem = {"bubblewrap": bwrap_problem, "docker": docker_problem}.get(name, lambda: None)()
    if problem is not None:
        _SKIPPED[name] = problem
        pytest.skip(f"{name} sandbox provider unavailable: {problem}")


def build_provider(name: str, home: Path, skills_root: Path | None, **overrides: Any) -> SandboxProvider:
    """A provider of kind ``name`` with the test limits (plus ``overrides``)."""
    require(name)
    config = SandboxConfig(use=name, **{**TEST_LIMITS, **overrides})
    if name == "local":
        return LocalSandboxProvider(config, paths=Paths(home), skills_root=skills_root)
    if name == "bubblewrap":
        from deerflow_nb.sandbox.bubblewrap import BubblewrapSandboxProvider

        return BubblewrapSandboxProvider(config, paths=Paths(home), skills_root=skills_root)
    from deerflow_nb.sandbox.docker import DockerSandboxProvider

    return DockerSandboxProvider(config, paths=Paths(home), skills_root=skills_root)


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    root = tmp_path / "skills-public"
    (root / "demo").mkdir(parents=True)
    (root / "demo" / "SKILL.md").write_text("---\nname: demo\n---\nA demo skill.\n")
    return root


@pytest.fixture
def make_provider(home: Path, skills_root: Path) -> Iterator[Callable[..., SandboxProvider]]:
    """Build providers by name; every one is shut down after the test."""
    made: list[SandboxProvider] = []

    def make(name: str, **overrides: Any) -> SandboxProvider:
        provider = build_provider(name, home, skills_root, **overrides)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.shutdown()


@pytest.fixture(params=PROVIDERS)
def provider_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def provider(provider_name: str, make_provider: Callable[..., SandboxProvider]) -> SandboxProvider:
    return make_provider(provider_name)


@pytest.fixture
def sandbox(provider: SandboxProvider) -> Sandbox:
    return provider.acquire("t1")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Repeat, unmissably, which sandbox providers were skipped and why."""
    for name, reason in sorted(_SKIPPED.items()):
        terminalreporter.write_sep("!", f"SANDBOX PROVIDER '{name}' SKIPPED", red=True, bold=True)
        terminalreporter.write_line(f"{name}: {reason}", red=True)
